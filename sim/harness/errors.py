"""Exceptions of the cluster harness (bad arguments and broken invariants)."""

from __future__ import annotations

__all__ = [
    "BrokerStateError",
    "DuplicateResponseError",
    "HarnessError",
    "IneligibleLeaderError",
    "InvalidTopicError",
    "UnexpectedResponseError",
    "UnknownBrokerError",
]


class HarnessError(Exception):
    """Base class of every exception the harness raises on purpose."""


class UnknownBrokerError(HarnessError, ValueError):
    """A broker id that is not part of the cluster."""


class BrokerStateError(HarnessError, RuntimeError):
    """An operation that needs a running (or stopped) broker got one in the other state."""


class InvalidTopicError(HarnessError, ValueError):
    """A topic that already exists, or a partition count / replication factor out of range."""


class IneligibleLeaderError(HarnessError, ValueError):
    """A leader election named a broker that is not a live member of the partition's ISR."""


class DuplicateResponseError(HarnessError, RuntimeError):
    """A broker answered a request twice: the one-response-per-request guarantee broke."""


class UnexpectedResponseError(HarnessError, AssertionError):
    """A call has no response yet, or a response of another type than expected."""

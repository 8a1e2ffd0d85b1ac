"""Exceptions of the in-process cluster (bad arguments and broken invariants)."""

from __future__ import annotations

__all__ = [
    "BrokerStateError",
    "ClusterError",
    "DuplicateResponseError",
    "IneligibleLeaderError",
    "InvalidTopicError",
    "UnexpectedResponseError",
    "UnknownBrokerError",
]


class ClusterError(Exception):
    """Base class of every exception the cluster raises on purpose."""


class UnknownBrokerError(ClusterError, ValueError):
    """A broker id that is not part of the cluster."""


class BrokerStateError(ClusterError, RuntimeError):
    """An operation that needs a running (or stopped) broker got one in the other state."""


class InvalidTopicError(ClusterError, ValueError):
    """A topic that already exists, or a partition count / replication factor out of range."""


class IneligibleLeaderError(ClusterError, ValueError):
    """A leader election named a broker that is not a live member of the partition's ISR."""


class DuplicateResponseError(ClusterError, RuntimeError):
    """A broker answered a request twice: the one-response-per-request guarantee broke."""


class UnexpectedResponseError(ClusterError, AssertionError):
    """A call has no response yet, or a response of another type than expected."""

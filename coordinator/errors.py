"""Exceptions the coordinator raises for bad arguments or corrupt data.

A bad *request* never raises: it is answered with a Kafka error code. These exceptions are for
programming errors (a bad config value) and for data that cannot be decoded.
"""

from __future__ import annotations

__all__ = [
    "CoordinatorError",
    "CorruptOffsetRecordError",
    "IllegalGroupStateError",
    "InvalidGroupConfigError",
    "InvalidOffsetConfigError",
]


class CoordinatorError(Exception):
    """Base class of every exception the coordinator package raises on purpose."""


class InvalidOffsetConfigError(CoordinatorError, ValueError):
    """An :class:`~coordinator.OffsetConfig` field was given a value outside its range."""


class InvalidGroupConfigError(CoordinatorError, ValueError):
    """A :class:`~coordinator.GroupConfig` field was given a value outside its range."""


class IllegalGroupStateError(CoordinatorError, RuntimeError):
    """A group was asked for something its state does not allow, such as a move its current
    state may not make (a bug in the coordinator, never a bad request: Kafka's
    IllegalStateException)."""


class CorruptOffsetRecordError(CoordinatorError, ValueError):
    """A record of ``__consumer_offsets`` could not be decoded (an offset commit or a group's
    metadata)."""

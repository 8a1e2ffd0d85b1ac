"""Exceptions of the ``replica`` package.

Two families, kept apart on purpose:

* :class:`ApiError` carries a Kafka :class:`~replica.errors.Errors` code. ``Log`` and
  ``Partition`` raise it for conditions a *request* can cause (fetch offset out of range, not
  the leader, record too large, ...); ``ReplicaManager`` catches it and puts the code in the
  per-partition response. It never escapes ``ReplicaManager``'s request methods.
* :class:`ReplicaArgumentError` and its subclasses are raised for a bad *library argument*
  (an invalid config value, a malformed type); the message says what was wrong and what is
  allowed. Each also derives from ``ValueError``.
"""

from __future__ import annotations

from replica.errors import Errors


class ReplicaError(Exception):
    """Base class of every exception the ``replica`` package raises on purpose."""


class ApiError(ReplicaError):
    """A request-level failure that maps to the Kafka error code :attr:`error`."""

    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(f"{error.name}: {message}")
        self.error = error


class ReplicaArgumentError(ReplicaError, ValueError):
    """A library call got an argument outside its allowed range or of the wrong kind."""


class InvalidConfigError(ReplicaArgumentError):
    """A :class:`~replica.config.BrokerConfig` value is invalid (Kafka's ``ConfigException``)."""


class UnexpectedAppendOffsetError(ReplicaError, RuntimeError):
    """A follower tried to append a batch whose base offset is not the log end offset."""

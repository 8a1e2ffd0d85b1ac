"""Exceptions the consume proxy raises for bad requests and bad arguments.

Every exception is a :class:`ProxyError` and also derives from the built-in exception a
caller would expect, so ``except ProxyError`` and ``except ValueError`` both work. The record
state errors mirror KIP-932's ``INVALID_RECORD_STATE``, split by cause so that a front end
can say which one it was.
"""

__all__ = [
    "InvalidProxyConfigError",
    "InvalidRecordStateError",
    "LeaseExpiredError",
    "LogFormatError",
    "OffsetOutOfRangeError",
    "ProxyError",
    "RecordNotHandedOutError",
    "UnknownPartitionError",
]


class ProxyError(Exception):
    """Base class of every exception the consume proxy raises on purpose."""


class InvalidProxyConfigError(ProxyError, ValueError):
    """A proxy setting (lease duration, delivery-count limit, start offset) is out of range."""


class UnknownPartitionError(ProxyError, LookupError):
    """The partition is not one this proxy serves."""


class OffsetOutOfRangeError(ProxyError, LookupError):
    """The offset is at or beyond the end of what the proxy has fetched, or an append went
    backwards."""


class InvalidRecordStateError(ProxyError, ValueError):
    """The record is not in a state that allows the request (acknowledged, archived or
    committed already)."""


class LeaseExpiredError(InvalidRecordStateError):
    """The delivery being acknowledged, cancelled or renewed is no longer leased: its lease
    expired or it was cancelled (the record may be with another reader now)."""


class RecordNotHandedOutError(InvalidRecordStateError):
    """The record was never handed out to a reader (or the offset holds no record)."""


class LogFormatError(ProxyError, ValueError):
    """A record of the state log topic is not a state-log entry this version can read."""

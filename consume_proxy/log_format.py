"""The bytes of a state-log entry in the log topic: a versioned key and value.

The key names the data partition the entry is about, so that the log is keyed by data
partition as the seed asks (and a compacted or shared log topic stays readable)::

    key   = version:uint8 (0) | partition:int32 | topic:utf-8 (the rest)

The value is fixed-size, 22 bytes, big-endian like Kafka's own formats::

    value = version:uint8 (0) | kind:uint8 | offset:int64 | delivery:int32 | lease_deadline:int64

``kind`` is 0 PENDING, 1 ACKNOWLEDGED, 2 ARCHIVED; ``lease_deadline`` is -1 unless PENDING.
An entry's position is not stored: it is the record's offset in the log partition. A reader
refuses a version it does not know (:class:`~consume_proxy.LogFormatError`), so a later
format can add fields behind a new version byte.
"""

from __future__ import annotations

import struct

from consume_proxy.errors import LogFormatError
from consume_proxy.state_log import LogEntry, LogEntryKind
from replica.types import TopicPartition

__all__ = ["VERSION", "decode_entry", "encode_entry"]

VERSION = 0
"""The version byte this module writes, and the only one it reads."""

_KEY = struct.Struct(">Bi")
_VALUE = struct.Struct(">BBqiq")
_KINDS = (LogEntryKind.PENDING, LogEntryKind.ACKNOWLEDGED, LogEntryKind.ARCHIVED)
_CODES = {kind: code for code, kind in enumerate(_KINDS)}


def encode_entry(entry: LogEntry) -> tuple[bytes, bytes]:
    """The (key, value) of ``entry`` as produced to the log topic."""
    key = _KEY.pack(VERSION, entry.tp.partition) + entry.tp.topic.encode()
    deadline = -1 if entry.lease_deadline is None else entry.lease_deadline
    value = _VALUE.pack(VERSION, _CODES[entry.kind], entry.offset, entry.delivery, deadline)
    return key, value


def decode_entry(key: bytes | None, value: bytes | None, position: int) -> LogEntry:
    """The entry stored as (``key``, ``value``) at ``position`` of its log partition.
    Raises LogFormatError, naming what is wrong, for anything :func:`encode_entry` does not
    write."""
    if key is None or value is None or len(key) < _KEY.size or len(value) != _VALUE.size:
        raise LogFormatError(
            f"log record at {position} is not a state-log entry: key {key!r}, value {value!r} "
            f"(a key of >= {_KEY.size} bytes and a value of {_VALUE.size} are expected)"
        )
    key_version, partition = _KEY.unpack_from(key)
    version, code, offset, delivery, deadline = _VALUE.unpack(value)
    if key_version != VERSION or version != VERSION:
        raise LogFormatError(
            f"log record at {position} has format version {key_version}/{version}; "
            f"this proxy reads version {VERSION}"
        )
    if code >= len(_KINDS):
        raise LogFormatError(f"log record at {position} has an unknown kind {code}")
    kind = _KINDS[code]
    try:
        topic = key[_KEY.size :].decode()
    except UnicodeDecodeError as error:
        raise LogFormatError(f"log record at {position}: the topic is not utf-8") from error
    lease = deadline if kind is LogEntryKind.PENDING else None
    return LogEntry(position, kind, TopicPartition(topic, partition), offset, delivery, lease)

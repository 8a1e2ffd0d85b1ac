"""The bytes of a state-log entry in the log topic: a versioned key and value.

The key names the data partition the entry is about, so that the log is keyed by data
partition as the seed asks (and a compacted or shared log topic stays readable)::

    key   = version:uint8 (0) | partition:int32 | topic:utf-8 (the rest)

The value is fixed-size, 38 bytes, big-endian like Kafka's own formats::

    value = version:uint8 (1) | kind:uint8 | offset:int64 | delivery:int32
            | lease_deadline:int64 | writer:int64 | sequence:int64

``kind`` is 0 PENDING, 1 ACKNOWLEDGED, 2 ARCHIVED, 3 CLAIM, 4 ACKNOWLEDGE_REQUEST,
5 CANCEL_REQUEST, 6 REJECT_REQUEST; ``lease_deadline`` is -1 unless PENDING. An entry's
position is not stored: it is the record's offset in the log partition. A reader refuses a
version it does not know (:class:`~consume_proxy.LogFormatError`), so a later format can add
fields behind a new version byte. Value version 0 (22 bytes, without writer and sequence) was
written before logs were shared and is no longer read.
"""

from __future__ import annotations

import struct

from consume_proxy.errors import LogFormatError
from consume_proxy.state_log import LogEntry, LogEntryKind
from replica.types import TopicPartition

__all__ = ["KEY_VERSION", "VALUE_VERSION", "decode_entry", "encode_entry"]

KEY_VERSION = 0
"""The key's version byte: the only one written and read."""
VALUE_VERSION = 1
"""The value's version byte: the only one written and read."""

_KEY = struct.Struct(">Bi")
_VALUE = struct.Struct(">BBqiqqq")
_K = LogEntryKind
_KINDS = (
    _K.PENDING,
    _K.ACKNOWLEDGED,
    _K.ARCHIVED,
    _K.CLAIM,
    _K.ACKNOWLEDGE_REQUEST,
    _K.CANCEL_REQUEST,
    _K.REJECT_REQUEST,
)
_CODES = {kind: code for code, kind in enumerate(_KINDS)}


def encode_entry(entry: LogEntry) -> tuple[bytes, bytes]:
    """The (key, value) of ``entry`` as produced to the log topic."""
    key = _KEY.pack(KEY_VERSION, entry.tp.partition) + entry.tp.topic.encode()
    deadline = -1 if entry.lease_deadline is None else entry.lease_deadline
    value = _VALUE.pack(
        VALUE_VERSION,
        _CODES[entry.kind],
        entry.offset,
        entry.delivery,
        deadline,
        entry.writer,
        entry.sequence,
    )
    return key, value


def decode_entry(key: bytes | None, value: bytes | None, position: int) -> LogEntry:
    """The entry stored as (``key``, ``value``) at ``position`` of its log partition.
    Raises LogFormatError, naming what is wrong, for anything :func:`encode_entry` does not
    write."""
    if key is None or value is None or len(key) < _KEY.size or len(value) < 1:
        raise LogFormatError(
            f"log record at {position} is not a state-log entry: key {key!r}, value {value!r} "
            f"(a key of >= {_KEY.size} bytes and a value are expected)"
        )
    key_version, partition = _KEY.unpack_from(key)
    if key_version != KEY_VERSION or value[0] != VALUE_VERSION:
        raise LogFormatError(
            f"log record at {position} has format version {key_version}/{value[0]}; "
            f"this proxy reads version {KEY_VERSION}/{VALUE_VERSION}"
        )
    if len(value) != _VALUE.size:
        raise LogFormatError(
            f"log record at {position} is not a state-log entry: a value of {len(value)} "
            f"bytes (version {VALUE_VERSION} has {_VALUE.size})"
        )
    _, code, offset, delivery, deadline, writer, sequence = _VALUE.unpack(value)
    if code >= len(_KINDS):
        raise LogFormatError(f"log record at {position} has an unknown kind {code}")
    kind = _KINDS[code]
    try:
        topic = key[_KEY.size :].decode()
    except UnicodeDecodeError as error:
        raise LogFormatError(f"log record at {position}: the topic is not utf-8") from error
    lease = deadline if kind is _K.PENDING else None
    tp = TopicPartition(topic, partition)
    return LogEntry(position, kind, tp, offset, delivery, lease, writer, sequence)

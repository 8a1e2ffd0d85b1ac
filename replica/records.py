"""Records and record batches, sized like Kafka's v2 record format.

A :class:`Record` is what a producer sends; a :class:`RecordBatch` is what a log stores: the
records of one produce request for one partition, with the offsets the leader assigned. Both
are immutable, so a batch appended by a leader is shared (never copied) by fetch responses and
by followers' logs.

Sizes follow ``DefaultRecord.sizeInBytes`` / ``DefaultRecordBatch``: a batch costs a 61-byte
header plus, per record, a varint length prefix, one attributes byte, the varint timestamp and
offset deltas, the varint-prefixed key and value (``-1`` for null) and the headers.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

#: Kafka's ``RecordBatch.NO_TIMESTAMP``.
NO_TIMESTAMP = -1
#: Size of a v2 record batch header (``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``).
RECORD_BATCH_OVERHEAD = 61

Header = tuple[str, bytes | None]


@attrs.define(frozen=True)
class Record:
    """One record as a producer sends it: key, value, create timestamp (ms) and headers."""

    key: bytes | None
    value: bytes | None
    timestamp: int = NO_TIMESTAMP
    headers: tuple[Header, ...] = ()


def _varint_size(value: int) -> int:
    """Bytes of ``value`` as a zig-zag varint (Kafka's ``ByteUtils.sizeOfVarlong``)."""
    if -64 <= value < 64:
        return 1
    zigzag = (value << 1) ^ (value >> 63)
    return (zigzag.bit_length() + 6) // 7


def _bytes_field_size(data: bytes | None) -> int:
    if data is None:
        return 1
    length = len(data)
    return length + (1 if length < 64 else _varint_size(length))


def _headers_size(headers: tuple[Header, ...]) -> int:
    size = _varint_size(len(headers))
    for header_key, header_value in headers:
        size += _bytes_field_size(header_key.encode()) + _bytes_field_size(header_value)
    return size


def record_size_in_bytes(record: Record, offset_delta: int, timestamp_delta: int) -> int:
    """Size of ``record`` inside a v2 batch at ``offset_delta`` / ``timestamp_delta``."""
    body = (
        1
        + _varint_size(timestamp_delta)
        + _varint_size(offset_delta)
        + _bytes_field_size(record.key)
        + _bytes_field_size(record.value)
        + (_headers_size(record.headers) if record.headers else 1)
    )
    return body + (1 if body < 64 else _varint_size(body))


def batch_size_in_bytes(records: Sequence[Record]) -> int:
    """Size of a v2 batch holding ``records`` (the header plus every record)."""
    if not records:
        return RECORD_BATCH_OVERHEAD
    first_timestamp = records[0].timestamp
    size = RECORD_BATCH_OVERHEAD
    # record_size_in_bytes inlined for the common cases: this runs for every produced record.
    for offset_delta, record in enumerate(records):
        timestamp_delta = record.timestamp - first_timestamp
        body = 1 + (1 if -64 <= timestamp_delta < 64 else _varint_size(timestamp_delta))
        body += 1 if offset_delta < 64 else _varint_size(offset_delta)
        key = record.key
        if key is None:
            body += 1
        else:
            length = len(key)
            body += length + (1 if length < 64 else 2 if length < 8192 else _varint_size(length))
        value = record.value
        if value is None:
            body += 1
        else:
            length = len(value)
            body += length + (1 if length < 64 else 2 if length < 8192 else _varint_size(length))
        body += _headers_size(record.headers) if record.headers else 1
        size += body + (1 if body < 64 else 2 if body < 8192 else _varint_size(body))
    return size


@attrs.define(frozen=True)
class RecordBatch:
    """Records stored at consecutive offsets ``base_offset .. last_offset`` of one log.

    ``partition_leader_epoch`` is the leader epoch of the leader that appended the batch;
    ``log_append_time`` is the broker time of the append when the log uses
    ``LogAppendTime`` timestamps, else ``NO_TIMESTAMP``.
    """

    base_offset: int
    records: tuple[Record, ...]
    size_in_bytes: int
    partition_leader_epoch: int = -1
    log_append_time: int = NO_TIMESTAMP

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record."""
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        """The offset after the batch (``last_offset + 1``)."""
        return self.base_offset + len(self.records)

    @property
    def max_timestamp(self) -> int:
        """The largest record timestamp: the log append time when set (every record of a
        ``LogAppendTime`` batch carries it), else the largest create time."""
        if self.log_append_time != NO_TIMESTAMP:
            return self.log_append_time
        return max((record.timestamp for record in self.records), default=NO_TIMESTAMP)

    def find_offset_by_timestamp(self, target_timestamp: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record whose timestamp is >= ``target_timestamp``
        (as :attr:`max_timestamp` counts timestamps), or None if there is none."""
        if self.log_append_time != NO_TIMESTAMP:
            if self.log_append_time >= target_timestamp:
                return self.log_append_time, self.base_offset
            return None
        for offset, record in enumerate(self.records, self.base_offset):
            if record.timestamp >= target_timestamp:
                return record.timestamp, offset
        return None

"""Records and record batches, sized like Kafka's v2 record format.

A :class:`Record` is what a producer sends; a :class:`RecordBatch` is what a log stores: the
records of one produce request for one partition, with the offsets the leader assigned. Both
are immutable, so a batch appended by a leader is shared (never copied) by fetch responses and
by followers' logs.

Sizes follow ``DefaultRecord.sizeInBytes`` / ``DefaultRecordBatch``: a batch costs a 61-byte
header plus, per record, a varint length prefix, one attributes byte, the varint timestamp and
offset deltas, the varint-prefixed key and value (``-1`` for null) and the headers.

Records in columns. A producer that sends many similar records can hand the broker a
:class:`RecordColumns` instead of a tuple of :class:`Record`: the same records held as
columns (keys, value sizes, timestamps and the integer values of one named header), whose batch
size is computed once, arithmetically, when it is built. It *is* a ``Sequence[Record]``
(indexing builds the :class:`Record` on demand, with a value of zero bytes), so every layer
that reads records keeps working; the log stores it as the batch's records unchanged, fetch
responses and followers share it, and a reader that only needs the header's integers reads
:attr:`RecordColumns.header_values` without building a record.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Final, NamedTuple, overload

import attrs

#: Kafka's ``RecordBatch.NO_TIMESTAMP``.
NO_TIMESTAMP: Final = -1
#: Kafka's ``RecordBatch.NO_PRODUCER_ID``: a batch from a producer that is not idempotent.
NO_PRODUCER_ID: Final = -1
#: Kafka's ``RecordBatch.NO_PRODUCER_EPOCH``.
NO_PRODUCER_EPOCH: Final = -1
#: Kafka's ``RecordBatch.NO_SEQUENCE``.
NO_SEQUENCE: Final = -1
_MAX_SEQUENCE: Final = 2**31 - 1
#: Size of a v2 record batch header (``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``).
RECORD_BATCH_OVERHEAD: Final = 61

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
    if isinstance(records, RecordColumns):
        return records.size_in_bytes
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


@lru_cache(maxsize=4096)
def _zeros(size: int) -> bytes:
    return bytes(size)


class RecordColumns(Sequence[Record]):
    """Records as columns: record ``i`` has key ``keys[i]`` (all None if ``keys`` is None), a
    value of ``value_sizes[i]`` zero bytes, create time ``timestamps[i]`` (ms) and one header,
    ``header_key``, whose value is ``header_values[i]`` as 8 big-endian bytes.

    Immutable (the columns are kept as tuples). :attr:`size_in_bytes` is the size of a v2
    batch holding these records, equal to :func:`batch_size_in_bytes` of the same records as
    :class:`Record` objects. Raises ValueError if the columns differ in length, and
    OverflowError if a header value is not in ``0 .. 2**63 - 1``.
    """

    __slots__ = (
        "header_key",
        "header_values",
        "keys",
        "size_in_bytes",
        "timestamps",
        "value_sizes",
    )

    def __init__(
        self,
        header_key: str,
        header_values: Sequence[int],
        value_sizes: Sequence[int],
        timestamps: Sequence[int],
        keys: Sequence[bytes | None] | None = None,
    ) -> None:
        n = len(header_values)
        if len(value_sizes) != n or len(timestamps) != n or (keys is not None and len(keys) != n):
            raise ValueError("record columns must all have the same length")
        self.header_values: tuple[int, ...] = tuple(header_values)
        if n:
            lowest, highest = _bounds(self.header_values)
            if lowest < 0 or highest >= 1 << 63:
                raise OverflowError("header values must be in 0 .. 2**63 - 1")
        self.header_key = header_key
        self.value_sizes: tuple[int, ...] = tuple(value_sizes)
        self.timestamps: tuple[int, ...] = tuple(timestamps)
        self.keys: tuple[bytes | None, ...] | None = None if keys is None else tuple(keys)
        self.size_in_bytes = self._batch_size()

    def __len__(self) -> int:
        return len(self.header_values)

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | Sequence[Record]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        header = (self.header_key, self.header_values[index].to_bytes(8, "big"))
        key = None if self.keys is None else self.keys[index]
        return Record(key, _zeros(self.value_sizes[index]), self.timestamps[index], (header,))

    def __iter__(self) -> Iterator[Record]:
        return (self[i] for i in range(len(self)))

    def _batch_size(self) -> int:
        n = len(self.header_values)
        if not n:
            return RECORD_BATCH_OVERHEAD
        # Every record has its attributes byte and one header: count, key, 8-byte value.
        fixed = 1 + 1 + _bytes_field_size(self.header_key.encode()) + _value_field_size(8)
        timestamps = self.timestamps
        first = timestamps[0]
        sizes = self.value_sizes
        earliest, latest = _bounds(timestamps)
        smallest, largest = _bounds(sizes)
        if (
            self.keys is None
            and smallest == largest
            and earliest - first >= -64
            and latest - first < 64
        ):
            # The common case in closed form: records differ only in their offset delta,
            # whose varint grows by a byte at 2**6, 2**13, 2**20 ... records. Each has a
            # one-byte timestamp delta, a null key (one byte) and a value of the same size.
            base = fixed + 1 + 1 + _value_field_size(sizes[0])
            size = RECORD_BATCH_OVERHEAD
            start, width = 0, 1
            while start < n:
                limit = 1 << (7 * width - 1)  # records whose offset delta fits in width bytes
                end = n if n < limit else limit
                body = base + width
                size += (end - start) * (body + _varint_size(body))
                start, width = end, width + 1
            return size
        size = RECORD_BATCH_OVERHEAD
        keys = self.keys if self.keys is not None else (None,) * n
        for offset_delta, (timestamp, value_size, key) in enumerate(
            zip(timestamps, sizes, keys, strict=True)
        ):
            body = (
                fixed
                + _varint_size(timestamp - first)
                + _varint_size(offset_delta)
                + _bytes_field_size(key)
                + _value_field_size(value_size)
            )
            size += body + _varint_size(body)
        return size


def _bounds(values: tuple[int, ...]) -> tuple[int, int]:
    """``(min(values), max(values))`` of a non-empty tuple, in one pass: a native loop in the
    compiled build, where ``min`` and ``max`` are generic calls costing far more (a record batch
    is built per produced batch)."""
    lowest = highest = values[0]
    for value in values:
        if value < lowest:
            lowest = value
        elif value > highest:
            highest = value
    return lowest, highest


def _value_field_size(length: int) -> int:
    """Bytes of a varint-prefixed field of ``length`` bytes."""
    return length + _varint_size(length)


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` as producer sequence numbers count: they wrap from
    ``2**31 - 1`` to 0 (Kafka's ``DefaultRecordBatch.incrementSequence``)."""
    if sequence > _MAX_SEQUENCE - increment:
        return increment - (_MAX_SEQUENCE - sequence) - 1
    return sequence + increment


class ProducerBatchInfo(NamedTuple):
    """What an idempotent producer writes in a batch's header: its producer id and epoch (from
    InitProducerId) and the sequence number of the batch's first record; the records that
    follow take the next numbers. ``producer_id`` is ``NO_PRODUCER_ID`` for other producers."""

    producer_id: int
    producer_epoch: int
    base_sequence: int


class RecordBatch:
    """Records stored at consecutive offsets ``base_offset .. last_offset`` of one log.

    ``partition_leader_epoch`` is the leader epoch of the leader that appended the batch;
    ``log_append_time`` is the broker time of the append when the log uses
    ``LogAppendTime`` timestamps, else ``NO_TIMESTAMP``. ``producer_id``, ``producer_epoch``
    and ``base_sequence`` are the idempotent producer's stamp (:class:`ProducerBatchInfo`),
    ``NO_PRODUCER_ID`` and -1 for batches of other producers.

    A value, not to be changed once made: equal, and hashed alike, when all fields are. A
    plain class rather than an attrs one: every read of a log looks at its batches' offsets,
    and in the compiled build a plain class is native (its fields and properties are read
    without a Python-level attribute lookup).
    """

    __slots__ = (
        "base_offset", "base_sequence", "log_append_time", "next_offset",
        "partition_leader_epoch", "producer_epoch", "producer_id", "records", "size_in_bytes",
    )  # fmt: skip

    def __init__(
        self,
        base_offset: int,
        records: Sequence[Record],
        size_in_bytes: int,
        partition_leader_epoch: int = -1,
        log_append_time: int = NO_TIMESTAMP,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
    ) -> None:
        self.base_offset = base_offset
        self.records = records
        self.size_in_bytes = size_in_bytes
        self.partition_leader_epoch = partition_leader_epoch
        self.log_append_time = log_append_time
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        #: The offset after the batch (``last_offset + 1``): counted once, read by every log
        #: read that passes the batch.
        self.next_offset = base_offset + len(records)

    def _fields(self) -> tuple[int, Sequence[Record], int, int, int, int, int, int]:
        return (
            self.base_offset,
            self.records,
            self.size_in_bytes,
            self.partition_leader_epoch,
            self.log_append_time,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordBatch):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, records={self.records!r}, "
            f"size_in_bytes={self.size_in_bytes}, "
            f"partition_leader_epoch={self.partition_leader_epoch}, "
            f"log_append_time={self.log_append_time}, producer_id={self.producer_id}, "
            f"producer_epoch={self.producer_epoch}, base_sequence={self.base_sequence})"
        )

    @property
    def last_sequence(self) -> int:
        """The sequence number of the batch's last record (``NO_SEQUENCE`` without one)."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, len(self.records) - 1)

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record."""
        return self.next_offset - 1

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

"""Kafka's v2 record batches on the wire: produced bytes to records, log batches to bytes.

A producer sends, per partition, a ``records`` field holding one v2 record batch
(``DefaultRecordBatch``): a 61-byte header (base offset, length, leader epoch, magic 2, CRC-32C
of everything after it, attributes, last offset delta, timestamps, producer id/epoch/base
sequence, record count) followed by the records, compressed as a whole when the attributes'
low three bits name a codec. :func:`decode_produced_batch` checks it as Kafka's
``ProduceRequest.validateRecords`` and ``LogValidator`` do and returns the broker's
:class:`replica.records.Record` values with the producer's stamp
(:class:`~replica.records.ProducerBatchInfo`); :func:`encode_batches` writes the batches of a
fetch response, uncompressed, with the offsets the log assigned and the producers' stamps.

The field codecs (ints, zig-zag varints, CRC-32C) are ``kio``'s and ``crc32c``'s. The batch
and record layout is assembled here rather than with ``kio.records`` because kio 0.6.5 reads
record timestamps truncated to whole seconds, refuses ``NO_TIMESTAMP`` (-1), writes them
through floats (losing a millisecond now and then) and knows no compression.

Compression: gzip (stdlib ``zlib``), snappy (raw and the xerial framing Java clients write),
lz4 (frame format) and zstd (from Produce v7, as in Kafka) through ``cramjam``, each bounded by
the most bytes the batch may decompress to.

What a bad ``records`` field gets, per partition (Kafka's codes; never a crash): each is a
:class:`RecordsError` whose :attr:`~RecordsError.error` is the code.

* CORRUPT_MESSAGE (:class:`CorruptRecordsError`): a batch length below the minimum, a magic
  byte Kafka does not know, a CRC mismatch;
* INVALID_RECORD (:class:`InvalidRecordError`): no complete batch, more than one, magic 0 or
  1, a record count that does not match the last offset delta, a control batch, records that
  do not parse inside a batch whose CRC is right, or a compressed body that does not
  decompress;
* UNSUPPORTED_COMPRESSION_TYPE (:class:`UnsupportedCompressionError`): an unknown codec, or
  zstd before Produce v7;
* TRANSACTIONAL_ID_AUTHORIZATION_FAILED (:class:`TransactionalRecordsError`): a transactional
  batch (transactions are not served);
* MESSAGE_TOO_LARGE (:class:`MessageTooLargeError`): a compressed batch that decompresses to
  more than the broker's ``message.max.bytes`` (decompression stops there: a small batch
  cannot make the server allocate without bound).

Bytes after the one complete batch that do not make a second one are ignored, as Kafka trims
them.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Iterable
from typing import NamedTuple

import cramjam
from crc32c import crc32c
from kio.schema.errors import ErrorCode
from kio.serial.errors import DecodeError
from kio.serial.readers import (
    read_int8,
    read_int16,
    read_int32,
    read_int64,
    read_signed_varint,
    read_signed_varlong,
    read_uint32,
)
from kio.serial.writers import (
    write_int8,
    write_int16,
    write_int32,
    write_int64,
    write_signed_varint,
    write_signed_varlong,
    write_uint32,
)
from kio.static.primitive import i8, i16, i32, i64, u32

from replica.records import NO_TIMESTAMP, ProducerBatchInfo, Record, RecordBatch

__all__ = [
    "CorruptRecordsError",
    "InvalidRecordError",
    "MessageTooLargeError",
    "ProducedBatch",
    "RecordsError",
    "TransactionalRecordsError",
    "UnsupportedCompressionError",
    "decode_produced_batch",
    "encode_batches",
]

#: Bytes before the records of a v2 batch (``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``).
_BATCH_OVERHEAD = 61
#: Offset of the attributes: what the CRC covers starts there.
_CRC_START = 21
#: Base offset (8) and batch length (4): not counted in the batch length.
_LOG_OVERHEAD = 12
#: The smallest batch length Kafka reads on (``LegacyRecord.RECORD_OVERHEAD_V0``).
_MIN_BATCH_LENGTH = 14
#: Bytes up to and including the magic byte.
_HEADER_UP_TO_MAGIC = 17
_MAGIC = 2
_ZSTD = 4
_FIRST_ZSTD_VERSION = 7
_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_LOG_APPEND = 0x08
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_XERIAL_MAGIC = b"\x82SNAPPY\x00"


class RecordsError(ValueError):
    """Produced records the broker cannot accept; :attr:`error` is the partition's code."""

    error: ErrorCode = ErrorCode.invalid_record


class CorruptRecordsError(RecordsError):
    """A batch whose framing or CRC is wrong: CORRUPT_MESSAGE."""

    error = ErrorCode.corrupt_message


class InvalidRecordError(RecordsError):
    """A well-framed batch Kafka refuses (see the module docstring): INVALID_RECORD."""

    error = ErrorCode.invalid_record


class UnsupportedCompressionError(RecordsError):
    """A batch compressed with a codec the broker does not take: UNSUPPORTED_COMPRESSION_TYPE."""

    error = ErrorCode.unsupported_compression_type


class MessageTooLargeError(RecordsError):
    """A compressed batch that decompresses to more than ``message.max.bytes``:
    MESSAGE_TOO_LARGE (the log would refuse it; it is not decompressed further)."""

    error = ErrorCode.message_too_large


class TransactionalRecordsError(RecordsError):
    """A transactional batch: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (no transactions here)."""

    error = ErrorCode.transactional_id_authorization_failed


class ProducedBatch(NamedTuple):
    """One partition's produced batch: its records and its producer's stamp."""

    records: list[Record]
    producer: ProducerBatchInfo


def _gzip(data: bytes, limit: int) -> bytes:
    out = bytearray()
    while data:
        stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        out += stream.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            raise MessageTooLargeError(f"a gzip batch decompresses to more than {limit} bytes")
        if not stream.eof:
            raise InvalidRecordError("truncated gzip stream")
        data = stream.unused_data  # another gzip member follows
    return bytes(out)


def _snappy(data: bytes, limit: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_block(data, limit)
    # xerial framing: 8-byte magic, two 4-byte versions, then (4-byte length, raw block)*.
    out = bytearray()
    position = 16
    while position < len(data):
        length, _ = read_int32(data, position)
        block = data[position + 4 : position + 4 + length]
        if length < 0 or len(block) != length:
            raise InvalidRecordError("truncated xerial snappy block")
        out += _snappy_block(block, limit - len(out))
        position += 4 + length
    return bytes(out)


def _snappy_block(block: bytes, limit: int) -> bytes:
    if cramjam.snappy.decompress_raw_len(block) > limit:
        raise MessageTooLargeError(f"a snappy batch decompresses to more than {limit} bytes")
    return bytes(cramjam.snappy.decompress_raw(block))


def _into(decompress_into: Callable[[bytes, bytearray], int]) -> Callable[[bytes, int], bytes]:
    """A bounded decompressor from cramjam's ``decompress_into``, which fails when its output
    buffer is too small: it tries growing buffers, up to ``limit + 1`` bytes."""

    def decompress(data: bytes, limit: int) -> bytes:
        size = min(limit + 1, max(1 << 16, 8 * len(data)))
        while True:
            out = bytearray(size)
            try:
                return bytes(out[: decompress_into(data, out)])
            except cramjam.DecompressionError as exc:
                full = "whole buffer" in str(exc)  # cramjam's words for a full output buffer
                if size > limit:
                    if full:
                        raise MessageTooLargeError(
                            f"a batch decompresses to more than {limit} bytes"
                        ) from exc
                    raise
                if not full:
                    raise
            size = min(limit + 1, size * 8)

    return decompress


_DECOMPRESSORS: dict[int, Callable[[bytes, int], bytes]] = {
    1: _gzip,
    2: _snappy,
    3: _into(cramjam.lz4.decompress_into),
    4: _into(cramjam.zstd.decompress_into),
}
"""Kafka's ``CompressionType`` ids (attributes bits 0-2) to decompressors taking the data and
the most bytes it may decompress to; 0 is none."""


def decode_produced_batch(data: bytes, version: int, max_bytes: int) -> ProducedBatch:
    """The records of the one v2 batch in ``data`` (a Produce request's ``records`` field of
    request version ``version``) and its producer's stamp. A compressed batch may decompress
    to at most ``max_bytes`` (the broker's ``message.max.bytes``: larger batches are refused
    anyway).

    Raises:
        RecordsError: one of its subclasses, as the module docstring lists.
    """
    view = memoryview(data)
    try:
        end = _batch_end(view, 0)
        if end is None:
            raise InvalidRecordError("a produce request needs one complete record batch")
        magic, _ = read_int8(view, 16)
        if magic != _MAGIC:
            raise InvalidRecordError(f"record batch magic {magic}: only v2 (magic 2) is taken")
        if end < _BATCH_OVERHEAD:
            raise CorruptRecordsError("record batch shorter than its header")
        attributes, _ = read_int16(view, _CRC_START)
        codec = attributes & _COMPRESSION_MASK
        if codec == _ZSTD and version < _FIRST_ZSTD_VERSION:
            raise UnsupportedCompressionError(f"zstd needs Produce v{_FIRST_ZSTD_VERSION}+")
        if _batch_end(view, end) is not None:
            raise InvalidRecordError("a produce request takes one record batch per partition")
        return _decode_batch(view[:end], attributes, max_bytes)
    except (DecodeError, ValueError, OverflowError) as exc:
        if isinstance(exc, RecordsError):
            raise
        raise InvalidRecordError(f"malformed record batch: {exc}") from exc


def _batch_end(view: memoryview, start: int) -> int | None:
    """Where the batch at ``start`` ends, None if the bytes hold no complete batch there
    (Kafka's ``ByteBufferLogInputStream.nextBatch``)."""
    if len(view) - start < _LOG_OVERHEAD:
        return None
    length, _ = read_int32(view, start + 8)
    if length < _MIN_BATCH_LENGTH:
        raise CorruptRecordsError(f"record batch length {length} is below the minimum")
    if len(view) - start < _HEADER_UP_TO_MAGIC:
        return None
    magic, _ = read_int8(view, start + 16)
    if not 0 <= magic <= _MAGIC:
        raise CorruptRecordsError(f"record batch magic {magic} is not a known magic")
    end = start + _LOG_OVERHEAD + length
    return end if end <= len(view) else None


def _decode_batch(view: memoryview, attributes: int, max_bytes: int) -> ProducedBatch:
    crc, _ = read_uint32(view, 17)
    if crc != crc32c(view[_CRC_START:]):
        raise CorruptRecordsError("record batch CRC mismatch")
    if attributes & _CONTROL:
        raise InvalidRecordError("clients may not write control batches")
    if attributes & _TRANSACTIONAL:
        raise TransactionalRecordsError("transactional batches are not served")
    last_offset_delta, _ = read_int32(view, 23)
    base_timestamp, _ = read_int64(view, 27)
    producer_id, _ = read_int64(view, 43)
    producer_epoch, _ = read_int16(view, 51)
    base_sequence, _ = read_int32(view, 53)
    count, _ = read_int32(view, 57)
    if count <= 0 or count != last_offset_delta + 1:
        raise InvalidRecordError(
            f"record batch counts {count} records but its last offset delta is {last_offset_delta}"
        )
    body = view[_BATCH_OVERHEAD:]
    codec = attributes & _COMPRESSION_MASK
    if codec:
        decompress = _DECOMPRESSORS.get(codec)
        if decompress is None:
            raise UnsupportedCompressionError(f"compression type {codec} is not supported")
        try:
            body = memoryview(decompress(bytes(body), max_bytes))
        except (OSError, EOFError, zlib.error, cramjam.DecompressionError) as exc:
            raise InvalidRecordError(f"cannot decompress a batch: {exc}") from exc
    records = []
    position = 0
    for _ in range(count):
        record, position = _decode_record(body, position, base_timestamp)
        records.append(record)
    if position != len(body):
        raise InvalidRecordError("record batch holds bytes after its last record")
    return ProducedBatch(records, ProducerBatchInfo(producer_id, producer_epoch, base_sequence))


def _decode_record(body: memoryview, start: int, base_timestamp: int) -> tuple[Record, int]:
    length, size = read_signed_varint(body, start)
    position = start + size
    end = position + length
    if length < 0 or end > len(body):
        raise InvalidRecordError("record length does not fit its batch")
    position += 1  # attributes: unused in v2
    timestamp_delta, size = read_signed_varlong(body, position)
    position += size
    _offset_delta, size = read_signed_varint(body, position)
    position += size
    key, position = _read_bytes(body, position)
    value, position = _read_bytes(body, position)
    header_count, size = read_signed_varint(body, position)
    position += size
    headers = []
    for _ in range(header_count):
        header_key, position = _read_bytes(body, position)
        header_value, position = _read_bytes(body, position)
        if header_key is None:
            raise InvalidRecordError("a record header has a null key")
        headers.append((header_key.decode(), header_value))
    if position != end:
        raise InvalidRecordError("record length does not match its fields")
    timestamp = NO_TIMESTAMP if base_timestamp == NO_TIMESTAMP else base_timestamp + timestamp_delta
    return Record(key, value, timestamp, tuple(headers)), end


def _read_bytes(body: memoryview, position: int) -> tuple[bytes | None, int]:
    length, size = read_signed_varint(body, position)
    position += size
    if length < 0:
        return None, position
    if position + length > len(body):
        raise InvalidRecordError("record field runs past its batch")
    return bytes(body[position : position + length]), position + length


def encode_batches(batches: Iterable[RecordBatch]) -> bytes:
    """Log batches as uncompressed v2 record batches (a fetch response's ``records``)."""
    out = io.BytesIO()
    for batch in batches:
        _encode_batch(out, batch)
    return out.getvalue()


def _encode_batch(out: io.BytesIO, batch: RecordBatch) -> None:
    records = batch.records
    log_append = batch.log_append_time != NO_TIMESTAMP
    timestamps = [batch.log_append_time if log_append else r.timestamp for r in records]
    base_timestamp = timestamps[0] if timestamps else NO_TIMESTAMP
    tail = io.BytesIO()
    write_int16(tail, i16(_TIMESTAMP_TYPE_LOG_APPEND if log_append else 0))
    write_int32(tail, i32(len(records) - 1))
    write_int64(tail, i64(base_timestamp))
    write_int64(tail, i64(batch.max_timestamp))
    write_int64(tail, i64(batch.producer_id))
    write_int16(tail, i16(batch.producer_epoch))
    write_int32(tail, i32(batch.base_sequence))
    write_int32(tail, i32(len(records)))
    for delta, (record, timestamp) in enumerate(zip(records, timestamps, strict=True)):
        _encode_record(tail, record, delta, timestamp - base_timestamp)
    crc_covered = tail.getvalue()
    write_int64(out, i64(batch.base_offset))
    write_int32(out, i32(len(crc_covered) + 9))  # + leader epoch, magic and CRC
    write_int32(out, i32(batch.partition_leader_epoch))
    write_int8(out, i8(_MAGIC))
    write_uint32(out, u32(crc32c(crc_covered)))
    out.write(crc_covered)


def _encode_record(
    out: io.BytesIO, record: Record, offset_delta: int, timestamp_delta: int
) -> None:
    body = io.BytesIO()
    write_int8(body, i8(0))
    write_signed_varlong(body, timestamp_delta)
    write_signed_varint(body, offset_delta)
    _write_bytes(body, record.key)
    _write_bytes(body, record.value)
    write_signed_varint(body, len(record.headers))
    for header_key, header_value in record.headers:
        _write_bytes(body, header_key.encode())
        _write_bytes(body, header_value)
    data = body.getvalue()
    write_signed_varint(out, len(data))
    out.write(data)


def _write_bytes(out: io.BytesIO, data: bytes | None) -> None:
    if data is None:
        write_signed_varint(out, -1)
        return
    write_signed_varint(out, len(data))
    out.write(data)

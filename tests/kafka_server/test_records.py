"""kafka_server.records against kafka-python's independent v2 batch builder and reader."""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import Callable

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafka_server.records import (
    CorruptRecordsError,
    InvalidRecordError,
    MessageTooLargeError,
    RecordsError,
    TransactionalRecordsError,
    UnsupportedCompressionError,
    decode_produced_batch,
    encode_batches,
)
from replica.records import ProducerBatchInfo, Record, RecordBatch, batch_size_in_bytes

# kafka-python compresses with gzip out of the box; snappy, lz4 and zstd batches come from
# librdkafka in test_clients.py, and the xerial snappy framing is built below.
NO_PRODUCER = ProducerBatchInfo(-1, -1, -1)
CODECS = {"none": 0, "gzip": DefaultRecordBatch.CODEC_GZIP}


def _kafka_python_batch(
    records: list[Record],
    codec: int,
    producer: ProducerBatchInfo = NO_PRODUCER,
    transactional: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional,
        producer_id=producer.producer_id, producer_epoch=producer.producer_epoch,
        base_sequence=producer.base_sequence, batch_size=10**7,
    )  # fmt: skip
    for offset, r in enumerate(records):
        builder.append(offset, r.timestamp, r.key, r.value, list(r.headers))
    return bytes(builder.build())


LIMIT = 1_048_588  # message.max.bytes


def decode_records(data: bytes, version: int = 9) -> list[Record]:
    return decode_produced_batch(data, version, LIMIT).records


RECORDS = st.lists(
    st.builds(
        Record,
        key=st.none() | st.binary(max_size=20),
        value=st.none() | st.binary(max_size=300),
        timestamp=st.integers(0, 2**42),
        headers=st.lists(
            st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2
        ).map(tuple),
    ),
    min_size=1,
    max_size=8,
)


@pytest.mark.parametrize("codec", list(CODECS))
def test_decodes_batches_a_real_client_builds(codec: str) -> None:
    records = [
        Record(b"k", b"v" * 200, 1_700_000_000_123, (("h", b"x"),)),
        Record(None, None, 1_700_000_000_999),
    ]
    assert decode_records(_kafka_python_batch(records, CODECS[codec])) == records


@given(RECORDS)
def test_round_trip_through_kafka_python(records: list[Record]) -> None:
    assert decode_records(_kafka_python_batch(records, 0)) == records
    batch = RecordBatch(42, tuple(records), batch_size_in_bytes(records), partition_leader_epoch=3)
    read = [list(b) for b in MemoryRecords(encode_batches([batch, batch]))]
    assert len(read) == 2
    decoded = [Record(r.key, r.value, r.timestamp, tuple(r.headers)) for b in read for r in b]
    assert decoded == records * 2
    assert [r.offset for r in read[0]] == list(range(42, 42 + len(records)))


def _recompressed(batch: bytes, codec: int, compress: Callable[[bytes], bytes]) -> bytes:
    """``batch`` (uncompressed) with its records compressed by ``compress`` as ``codec``."""
    header = bytearray(batch[:61])
    body = compress(batch[61:])
    header[8:12] = (49 + len(body)).to_bytes(4, "big")
    header[22] |= codec
    crc = crc32c(bytes(header[21:]) + body)
    header[17:21] = crc.to_bytes(4, "big")
    return bytes(header) + body


def _xerial(data: bytes) -> bytes:
    blocks = [
        bytes(cramjam.snappy.compress_raw(data[i : i + 100])) for i in range(0, len(data), 100)
    ]
    framed = b"".join(len(b).to_bytes(4, "big") + b for b in blocks)
    return b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") * 2 + framed


@pytest.mark.parametrize(
    ("codec", "compress"),
    [
        (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),
        (2, _xerial),
        (3, lambda d: bytes(cramjam.lz4.compress(d))),
        (4, lambda d: bytes(cramjam.zstd.compress(d))),
    ],
    ids=["snappy-raw", "snappy-xerial", "lz4", "zstd"],
)
def test_decodes_every_codec(codec: int, compress: Callable[[bytes], bytes]) -> None:
    records = [Record(b"k%d" % i, b"v" * 150, 1_700_000_000_000 + i) for i in range(5)]
    batch = _recompressed(_kafka_python_batch(records, 0), codec, compress)
    assert decode_records(batch) == records
    with pytest.raises(InvalidRecordError, match=r"decompress|record"):
        decode_records(_recompressed(_kafka_python_batch(records, 0), codec, lambda d: d[:40]))


def test_corrupt_and_unsupported_batches_raise_their_errors() -> None:
    data = bytearray(_kafka_python_batch([Record(b"k", b"v", 5)], 0))
    with pytest.raises(InvalidRecordError, match="one complete record batch"):
        decode_records(b"")
    with pytest.raises(InvalidRecordError, match="one complete record batch"):
        decode_records(bytes(data[:-1]))  # truncated: no complete batch, as Kafka reads it
    flipped = bytearray(data)
    flipped[-1] ^= 0xFF
    with pytest.raises(CorruptRecordsError, match="CRC"):
        decode_records(bytes(flipped))
    short = bytearray(data)
    short[8:12] = (13).to_bytes(4, "big")
    with pytest.raises(CorruptRecordsError, match="minimum"):
        decode_records(bytes(short))
    for magic, error in ((7, CorruptRecordsError), (1, InvalidRecordError)):
        other = bytearray(data)
        other[16] = magic
        with pytest.raises(error, match="magic"):
            decode_records(bytes(other))
    # compression type 5 does not exist: the CRC must be right for the codec to be read
    data[22] |= 5
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    with pytest.raises(UnsupportedCompressionError):
        decode_records(bytes(data))


def _with_crc(data: bytearray) -> bytes:
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def test_kafka_refuses_what_validate_records_refuses() -> None:
    """ProduceRequest.validateRecords and LogValidator's checks, with Kafka's codes."""
    one = _kafka_python_batch([Record(b"k", b"v", 5)], 0)
    with pytest.raises(InvalidRecordError, match="one record batch per partition"):
        decode_records(one + one)
    assert decode_records(one + one[:30]) == [Record(b"k", b"v", 5)]  # a partial tail is trimmed
    zstd = _recompressed(one, 4, lambda d: bytes(cramjam.zstd.compress(d)))
    with pytest.raises(UnsupportedCompressionError, match="zstd"):
        decode_records(zstd, version=6)
    assert decode_records(zstd, version=7) == [Record(b"k", b"v", 5)]
    miscounted = bytearray(one)
    miscounted[23:27] = (3).to_bytes(4, "big")  # last offset delta 3 for one record
    with pytest.raises(InvalidRecordError, match="last offset delta"):
        decode_records(_with_crc(miscounted))
    control = bytearray(one)
    control[22] |= 0x20
    with pytest.raises(InvalidRecordError, match="control"):
        decode_records(_with_crc(control))
    with pytest.raises(TransactionalRecordsError):
        decode_records(_kafka_python_batch([Record(b"k", b"v", 5)], 0, ProducerBatchInfo(
            4, 0, 0), transactional=True))  # fmt: skip
    garbled = bytearray(one)
    garbled[61] = 0x7F  # the record's length runs past the batch, CRC made right
    with pytest.raises(InvalidRecordError):
        decode_records(_with_crc(garbled))


def test_the_producer_stamp_is_read_and_written() -> None:
    producer = ProducerBatchInfo(17, 2, 40)
    records = [Record(b"k", b"v%d" % i, 5) for i in range(3)]
    decoded = decode_produced_batch(_kafka_python_batch(records, 0, producer), 9, LIMIT)
    assert decoded == (records, producer)
    stored = RecordBatch(10, tuple(records), batch_size_in_bytes(records), 0, -1, *producer)
    [read] = list(MemoryRecords(encode_batches([stored])))
    assert (read.producer_id, read.producer_epoch, read.base_sequence) == (17, 2, 40)
    assert read.last_offset == 12


@given(st.binary(max_size=200), st.integers(3, 9))
def test_garbage_raises_only_records_errors(data: bytes, version: int) -> None:
    with contextlib.suppress(RecordsError):
        decode_produced_batch(data, version, LIMIT)


@pytest.mark.parametrize(
    ("codec", "compress"),
    [
        (1, lambda d: gzip.compress(d)),
        (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),
        (2, _xerial),
        (3, lambda d: bytes(cramjam.lz4.compress(d))),
        (4, lambda d: bytes(cramjam.zstd.compress(d))),
    ],
    ids=["gzip", "snappy-raw", "snappy-xerial", "lz4", "zstd"],
)
def test_a_batch_decompressing_beyond_the_limit_is_refused(
    codec: int, compress: Callable[[bytes], bytes]
) -> None:
    """A small batch of a few MB of zeros (what a decompression bomb is made of): refused with
    MESSAGE_TOO_LARGE once the limit is passed, however far it would go; within the limit,
    it decodes (its output buffers grow past the first guess)."""
    records = [Record(None, bytes(400_000), 5) for _ in range(10)]
    batch = _recompressed(_kafka_python_batch(records, 0), codec, compress)
    assert len(batch) < 1_000_000  # under the limit as sent
    with pytest.raises(MessageTooLargeError):
        decode_produced_batch(batch, 9, 1_000_000)
    assert decode_produced_batch(batch, 9, 5_000_000).records == records

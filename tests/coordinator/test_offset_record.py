"""The __consumer_offsets record encoding round-trips and rejects corrupt records."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator import (
    CorruptOffsetRecordError,
    OffsetAndMetadata,
    OffsetCommitKey,
    decode_offset_record,
    encode_offset_record,
)
from replica.records import Record
from replica.types import TopicPartition

keys = st.builds(
    OffsetCommitKey,
    st.text(max_size=50),
    st.builds(TopicPartition, st.text(min_size=1, max_size=50), st.integers(0, 2**31 - 1)),
)
values = st.builds(
    OffsetAndMetadata,
    offset=st.integers(-1, 2**63 - 1),
    metadata=st.text(max_size=200),
    commit_timestamp=st.integers(-1, 2**63 - 1),
    leader_epoch=st.none() | st.integers(0, 2**31 - 1),
)


@given(keys, values)
def test_round_trip(key: OffsetCommitKey, value: OffsetAndMetadata) -> None:
    record = encode_offset_record(key, value)
    assert record.timestamp == value.commit_timestamp
    assert decode_offset_record(record) == (key, value)


def test_encoding_is_deterministic() -> None:
    key = OffsetCommitKey("g", TopicPartition("t", 3))
    value = OffsetAndMetadata(42, "m", 1000, 7)
    assert encode_offset_record(key, value) == encode_offset_record(key, value)


def _good() -> Record:
    return encode_offset_record(
        OffsetCommitKey("group", TopicPartition("topic", 1)), OffsetAndMetadata(5, "meta", 9)
    )


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (Record(None, b"x"), "needs both a key and a value"),
        (Record(b"x", None), "needs both a key and a value"),
        (Record(_good().key, (_good().value or b"")[:-1]), "value is truncated"),
        (Record((_good().key or b"")[:5], _good().value), "key is truncated"),
        (Record((_good().key or b"") + b"\x00", _good().value), "key has 1 trailing bytes"),
        (Record(b"\x00\x09" + (_good().key or b"")[2:], _good().value), "key has version 9"),
        (Record(b"\x00\x01\x00\x01\xff", _good().value), "invalid UTF-8"),
    ],
)
def test_corrupt_records_raise(record: Record, message: str) -> None:
    with pytest.raises(CorruptOffsetRecordError, match=message):
        decode_offset_record(record)


def test_oversized_group_id_cannot_be_encoded() -> None:
    with pytest.raises(CorruptOffsetRecordError, match="at most 32767 bytes"):
        encode_offset_record(
            OffsetCommitKey("g" * 40_000, TopicPartition("t", 0)), OffsetAndMetadata(1)
        )

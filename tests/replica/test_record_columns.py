"""RecordColumns: the same records as a tuple of Record, with the batch size in closed form."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replica.log import Log
from replica.records import Record, RecordColumns, batch_size_in_bytes
from replica.types import TopicPartition

HEADER = "sim-message-id"


@st.composite
def columns(draw: st.DrawFn) -> RecordColumns:
    n = draw(st.sampled_from([0, 1, 2, 63, 64, 65, 200]) | st.integers(0, 70))
    sizes = st.sampled_from([0, 1, 63, 64, 1024, 8191, 8192, 9000])
    one_size = [draw(sizes)] * n  # the closed-form case
    value_sizes = one_size if draw(st.booleans()) else draw(st.lists(sizes, min_size=n, max_size=n))
    first = draw(st.integers(0, 10**12))
    spread = draw(st.sampled_from([0, 63, 64, 100_000]))
    deltas = draw(st.lists(st.integers(-70, spread), min_size=n, max_size=n))
    keys = None
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from([None, b"", b"k", b"x" * 70]), min_size=n, max_size=n))
    ids = draw(st.lists(st.integers(0, 2**63 - 1), min_size=n, max_size=n))
    return RecordColumns(HEADER, ids, value_sizes, [first + d for d in deltas], keys)


@given(columns())
def test_size_in_bytes_equals_the_size_of_the_same_records(records: RecordColumns) -> None:
    as_records = tuple(records)
    assert len(as_records) == len(records)
    assert records.size_in_bytes == batch_size_in_bytes(as_records)
    assert batch_size_in_bytes(records) == records.size_in_bytes


def test_a_long_batch_crosses_the_offset_delta_varint_boundaries() -> None:
    n = 9000  # offset deltas of 1, 2 and 3 bytes
    records = RecordColumns(HEADER, range(n), [100] * n, [5] * n)
    assert records.size_in_bytes == batch_size_in_bytes(tuple(records))


def test_records_are_built_on_demand() -> None:
    records = RecordColumns(HEADER, [7, 8], [3, 0], [10, 11], [b"a", None])
    assert records[0] == Record(b"a", bytes(3), 10, ((HEADER, (7).to_bytes(8, "big")),))
    assert records[-1] == Record(None, b"", 11, ((HEADER, (8).to_bytes(8, "big")),))
    assert records[1:] == (records[1],)
    assert records.header_values == (7, 8)


def test_columns_of_different_lengths_are_rejected() -> None:
    with pytest.raises(ValueError, match="same length"):
        RecordColumns(HEADER, [1, 2], [1], [0, 0])
    with pytest.raises(OverflowError):
        RecordColumns(HEADER, [-1], [1], [0])


def test_the_log_stores_the_columns_as_the_batch_records() -> None:
    log = Log(TopicPartition("t", 0), segment_bytes=1 << 20, max_message_bytes=1 << 20)
    records = RecordColumns(HEADER, [1, 2, 3], [10] * 3, [0] * 3)
    log.append_as_leader(records, leader_epoch=0)
    (batch,) = log.segments[0].batches
    assert batch.records is records
    assert batch.size_in_bytes == records.size_in_bytes
    assert batch.next_offset == 3

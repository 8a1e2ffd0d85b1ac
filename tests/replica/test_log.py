"""Log: offsets, reads by offset and bytes, segment rolls, truncation, high watermark."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica import (
    ApiError,
    Errors,
    FetchIsolation,
    Log,
    LogOffsetMetadata,
    Record,
    RecordBatch,
    ReplicaArgumentError,
    TopicPartition,
    UnexpectedAppendOffsetError,
)
from replica.records import batch_size_in_bytes

TP = TopicPartition("t", 0)
LOG_END = FetchIsolation.LOG_END
HW = FetchIsolation.HIGH_WATERMARK


def recs(n: int, size: int = 10) -> list[Record]:
    return [Record(None, bytes(size), 0) for _ in range(n)]


def make_log(segment_bytes: int = 1 << 30, max_message_bytes: int = 1 << 20) -> Log:
    return Log(TP, segment_bytes, max_message_bytes)


def test_append_assigns_consecutive_offsets() -> None:
    log = make_log()
    first = log.append_as_leader(recs(3), leader_epoch=4)
    second = log.append_as_leader(recs(2), leader_epoch=4)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    assert log.log_start_offset == 0
    batch = log.segments[0].batches[0]
    assert batch.partition_leader_epoch == 4
    assert batch.size_in_bytes == batch_size_in_bytes(recs(3))


def test_append_rejects_empty_and_oversized_batches() -> None:
    log = make_log(segment_bytes=500, max_message_bytes=200)
    with pytest.raises(ApiError) as empty:
        log.append_as_leader([], 0)
    assert empty.value.error is Errors.INVALID_RECORD
    with pytest.raises(ApiError) as too_large:
        log.append_as_leader(recs(1, size=300), 0)
    assert too_large.value.error is Errors.MESSAGE_TOO_LARGE
    big = make_log(segment_bytes=200, max_message_bytes=10_000)
    with pytest.raises(ApiError) as list_too_large:
        big.append_as_leader(recs(1, size=300), 0)
    assert list_too_large.value.error is Errors.RECORD_LIST_TOO_LARGE
    assert log.log_end_offset == 0 and big.log_end_offset == 0


def test_read_returns_the_batch_holding_the_offset_and_its_position() -> None:
    log = make_log()
    log.append_as_leader(recs(3), 0)
    log.append_as_leader(recs(3), 0)
    first_size = log.segments[0].batches[0].size_in_bytes
    info = log.read(4, 1 << 20, LOG_END, min_one_message=False)
    assert [b.base_offset for b in info.records] == [3]
    assert info.fetch_offset_metadata == LogOffsetMetadata(4, 0, first_size)
    assert info.records_size == info.records[0].size_in_bytes


def test_read_respects_max_bytes_and_min_one_message() -> None:
    log = make_log()
    for _ in range(4):
        log.append_as_leader(recs(2), 0)
    size = log.segments[0].batches[0].size_in_bytes
    assert len(log.read(0, 2 * size, LOG_END, False).records) == 2
    assert len(log.read(0, 2 * size + size - 1, LOG_END, False).records) == 2
    assert not log.read(0, size - 1, LOG_END, False).records
    one = log.read(0, 0, LOG_END, min_one_message=True)
    assert len(one.records) == 1 and one.records_size == size


def test_consumer_reads_stop_at_the_high_watermark() -> None:
    log = make_log()
    log.append_as_leader(recs(2), 0)
    log.append_as_leader(recs(2), 0)
    assert not log.read(0, 1 << 20, HW, True).records
    log.maybe_increment_high_watermark(log.convert_to_offset_metadata(2))
    info = log.read(0, 1 << 20, HW, True)
    assert [b.base_offset for b in info.records] == [0]
    at_hw = log.read(2, 1 << 20, HW, True)
    assert not at_hw.records and at_hw.fetch_offset_metadata.message_offset == 2
    # Between the high watermark and the log end offset: empty, not an error.
    assert not log.read(3, 1 << 20, HW, True).records
    assert len(log.read(2, 1 << 20, LOG_END, True).records) == 1


def test_read_out_of_range() -> None:
    log = make_log()
    log.append_as_leader(recs(2), 0)
    assert not log.read(2, 100, LOG_END, True).records
    for offset in (-1, 3):
        with pytest.raises(ApiError) as error:
            log.read(offset, 100, LOG_END, True)
        assert error.value.error is Errors.OFFSET_OUT_OF_RANGE


def test_segments_roll_at_segment_bytes_and_reads_stay_in_one_segment() -> None:
    size = batch_size_in_bytes(recs(1))
    log = make_log(segment_bytes=2 * size)
    for _ in range(5):
        log.append_as_leader(recs(1), 0)
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    assert [s.size for s in log.segments] == [2 * size, 2 * size, size]
    assert log.log_end_offset_metadata == LogOffsetMetadata(5, 4, size)
    info = log.read(1, 1 << 20, LOG_END, False)
    assert [b.base_offset for b in info.records] == [1]
    assert info.fetch_offset_metadata == LogOffsetMetadata(1, 0, size)
    assert [b.base_offset for b in log.read(2, 1 << 20, LOG_END, False).records] == [2, 3]
    assert log.convert_to_offset_metadata(3) == LogOffsetMetadata(3, 2, size)


def test_high_watermark_read_limit_on_a_rolled_segment() -> None:
    size = batch_size_in_bytes(recs(1))
    log = make_log(segment_bytes=2 * size)
    log.append_as_leader(recs(1), 0)
    log.append_as_leader(recs(1), 0)
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)  # (2, segment 0, end)
    log.append_as_leader(recs(1), 0)  # rolls: offset 2 starts segment 2
    at_hw = log.read(2, 1 << 20, HW, True)
    assert not at_hw.records
    assert at_hw.fetch_offset_metadata == LogOffsetMetadata(2, 0, 2 * size)


def test_truncate_to_removes_whole_batches_and_clamps_the_high_watermark() -> None:
    log = make_log()
    log.append_as_leader(recs(3), 0)  # 0..2
    log.append_as_leader(recs(3), 0)  # 3..5
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert not log.truncate_to(6)
    assert log.truncate_to(4)  # the batch holding offset 4 goes whole
    assert log.log_end_offset == 3
    assert log.high_watermark == 3
    assert log.high_watermark_metadata == log.log_end_offset_metadata
    log.append_as_leader(recs(1), 0)
    assert log.segments[0].batches[-1].base_offset == 3


def test_truncate_across_segments() -> None:
    size = batch_size_in_bytes(recs(1))
    log = make_log(segment_bytes=2 * size)
    for _ in range(6):
        log.append_as_leader(recs(1), 0)
    assert log.truncate_to(2)
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.log_end_offset == 2
    assert log.log_end_offset_metadata == LogOffsetMetadata(2, 2, 0)
    log.append_as_leader(recs(1), 0)
    assert log.convert_to_offset_metadata(2) == LogOffsetMetadata(2, 2, 0)


def test_truncate_below_start_and_truncate_fully() -> None:
    log = make_log()
    log.append_as_leader(recs(3), 0)
    log.truncate_fully_and_start_at(10)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (10, 10, 10)
    assert log.append_as_leader(recs(1), 0).first_offset == 10
    with pytest.raises(ApiError):
        log.read(9, 100, LOG_END, True)
    assert log.truncate_to(5)
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
    with pytest.raises(ReplicaArgumentError):
        log.truncate_fully_and_start_at(-1)


def test_high_watermark_moves_forward_only_on_the_leader_path() -> None:
    log = make_log()
    log.append_as_leader(recs(4), 0)
    assert log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert not log.maybe_increment_high_watermark(LogOffsetMetadata(1, 0, 0))
    assert log.high_watermark == 4
    with pytest.raises(ReplicaArgumentError):
        log.maybe_increment_high_watermark(LogOffsetMetadata(5, 0, 0))


def test_follower_high_watermark_is_clamped_to_the_log() -> None:
    log = make_log()
    log.append_as_leader(recs(2), 0)
    assert log.update_high_watermark(10) == 2
    assert log.update_high_watermark(1) == 1  # a follower's may go down
    assert log.high_watermark_metadata == LogOffsetMetadata(1, 0, 0)
    assert log.update_high_watermark(-5) == 0


def test_append_as_follower_keeps_offsets_and_checks_them() -> None:
    leader = make_log()
    leader.append_as_leader(recs(2), 3)
    batch = leader.segments[0].batches[0]
    follower = make_log()
    follower.append_as_follower(batch)
    assert follower.log_end_offset == 2
    assert follower.segments[0].batches[0] is batch  # shared, not copied
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(RecordBatch(5, tuple(recs(1)), 70))


def test_convert_to_offset_metadata_out_of_range() -> None:
    log = make_log()
    log.append_as_leader(recs(1), 0)
    with pytest.raises(ApiError):
        log.convert_to_offset_metadata(2)


def test_bad_constructor_arguments() -> None:
    with pytest.raises(ReplicaArgumentError, match="segment_bytes"):
        Log(TP, 0, 100)
    with pytest.raises(ReplicaArgumentError, match="log_start_offset"):
        Log(TP, 100, 100, log_start_offset=-1)


@settings(max_examples=60)
@given(
    batch_counts=st.lists(st.integers(1, 4), min_size=1, max_size=30),
    value_size=st.integers(0, 40),
    segment_batches=st.integers(1, 5),
    max_bytes=st.integers(0, 400),
    truncate_at=st.integers(0, 130),
)
def test_reads_are_consistent_with_appends(
    batch_counts: list[int], value_size: int, segment_batches: int, max_bytes: int, truncate_at: int
) -> None:
    """Every offset reads back from the batch holding it, within the byte limit, and
    positions agree with convert_to_offset_metadata, before and after a truncation."""
    segment_bytes = segment_batches * batch_size_in_bytes(recs(4, value_size))
    log = make_log(segment_bytes=segment_bytes)
    for count in batch_counts:
        log.append_as_leader(recs(count, value_size), 0)
    for _ in range(2):
        all_batches = [b for s in log.segments for b in s.batches]
        offsets = [b.base_offset for b in all_batches]
        assert offsets == sorted(offsets)
        for prev, nxt in itertools.pairwise(all_batches):
            assert prev.next_offset == nxt.base_offset
        assert all(s.size <= segment_bytes for s in log.segments)
        for offset in range(log.log_start_offset, log.log_end_offset):
            info = log.read(offset, max_bytes, LOG_END, min_one_message=False)
            assert info.records_size <= max_bytes
            assert info.records_size == sum(b.size_in_bytes for b in info.records)
            assert info.fetch_offset_metadata == log.convert_to_offset_metadata(offset)
            if info.records:
                assert info.records[0].base_offset <= offset <= info.records[0].last_offset
            forced = log.read(offset, max_bytes, LOG_END, min_one_message=True)
            assert forced.records and forced.records[0].last_offset >= offset
        log.truncate_to(truncate_at)
        assert log.log_end_offset <= max(truncate_at, log.log_start_offset)


# -- leader epochs --------------------------------------------------------------------------


def test_leader_epochs_come_from_the_batches_and_follow_truncation() -> None:
    log = make_log()
    log.append_as_leader(recs(2), leader_epoch=0)  # 0..1
    log.append_as_leader(recs(2), leader_epoch=0)  # 2..3
    log.maybe_assign_epoch_start_offset(2, log.log_end_offset)  # elected in epoch 2 at 4
    log.append_as_leader(recs(3), leader_epoch=2)  # 4..6
    assert log.leader_epoch_cache.entries == ((0, 0), (2, 4))
    assert log.latest_epoch == 2
    assert log.end_offset_for_epoch(0) == (0, 4)
    assert log.end_offset_for_epoch(1) == (0, 4)
    assert log.end_offset_for_epoch(2) == (2, 7)
    follower = make_log()
    for batch in [b for s in log.segments for b in s.batches]:
        follower.append_as_follower(batch)
    assert follower.leader_epoch_cache.entries == ((0, 0), (2, 4))
    assert follower.truncate_to(4)
    assert follower.leader_epoch_cache.entries == ((0, 0),)
    follower.truncate_fully_and_start_at(2)
    assert follower.latest_epoch is None


def test_truncating_at_the_log_end_drops_an_epoch_never_written_in() -> None:
    log = make_log()
    log.append_as_leader(recs(2), leader_epoch=1)
    log.maybe_assign_epoch_start_offset(3, 2)  # elected in epoch 3, then lost leadership
    assert log.latest_epoch == 3
    assert not log.truncate_to(5)  # removes no batch...
    assert log.leader_epoch_cache.entries == ((1, 0),)  # ...but the empty epoch goes


def test_batches_without_a_leader_epoch_leave_the_cache_alone() -> None:
    log = make_log()
    log.append_as_follower(RecordBatch(0, tuple(recs(1)), batch_size_in_bytes(recs(1))))
    assert log.latest_epoch is None and log.end_offset_for_epoch(0) == (-1, -1)


# -- timestamps -----------------------------------------------------------------------------


def stamped(*timestamps: int) -> list[Record]:
    return [Record(None, b"v", ts) for ts in timestamps]


def test_find_offset_by_timestamp_with_create_time() -> None:
    size = batch_size_in_bytes(stamped(0, 0))
    log = make_log(segment_bytes=2 * size)
    log.append_as_leader(stamped(10, 30), 0)  # 0..1
    log.append_as_leader(stamped(20, 25), 1)  # 2..3 (timestamps are not monotonic)
    log.append_as_leader(stamped(40, 35), 2)  # 4..5, a new segment
    assert len(log.segments) == 2
    assert log.find_offset_by_timestamp(0) == (10, 0, 0)
    assert log.find_offset_by_timestamp(11) == (30, 1, 0)
    assert log.find_offset_by_timestamp(30) == (30, 1, 0)
    assert log.find_offset_by_timestamp(31) == (40, 4, 2)
    assert log.find_offset_by_timestamp(36) == (40, 4, 2)
    assert log.find_offset_by_timestamp(41) is None
    log.truncate_to(4)
    assert log.find_offset_by_timestamp(31) is None
    log.append_as_leader(stamped(50), 3)
    assert log.find_offset_by_timestamp(31) == (50, 4, 3)


def test_find_offset_by_timestamp_with_log_append_time() -> None:
    log = make_log()
    log.append_as_leader(stamped(99, 99), 0, log_append_time=1000)
    log.append_as_leader(stamped(1), 0, log_append_time=2000)
    assert log.find_offset_by_timestamp(99) == (1000, 0, 0)
    assert log.find_offset_by_timestamp(1001) == (2000, 2, 0)
    assert log.find_offset_by_timestamp(2001) is None


@settings(max_examples=60)
@given(
    batches=st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=4), max_size=20),
    segment_batches=st.integers(1, 4),
    targets=st.lists(st.integers(0, 55), min_size=1, max_size=5),
    truncate_at=st.integers(0, 80),
)
def test_find_offset_by_timestamp_matches_a_linear_scan(
    batches: list[list[int]], segment_batches: int, targets: list[int], truncate_at: int
) -> None:
    log = make_log(segment_bytes=segment_batches * batch_size_in_bytes(stamped(0, 0, 0, 0)))

    def linear(target: int) -> tuple[int, int, int] | None:
        for batch in [b for s in log.segments for b in s.batches]:
            for offset, record in enumerate(batch.records, batch.base_offset):
                if record.timestamp >= target:
                    return record.timestamp, offset, batch.partition_leader_epoch
        return None

    for epoch, timestamps in enumerate(batches):
        log.append_as_leader(stamped(*timestamps), epoch)
        assert log.find_offset_by_timestamp(targets[0]) == linear(targets[0])
    log.truncate_to(truncate_at)
    for target in targets:
        assert log.find_offset_by_timestamp(target) == linear(target)


def test_the_change_marker_moves_with_every_change_a_read_sees_and_never_repeats() -> None:
    log = make_log()
    seen = [log.change_marker]

    def changed() -> bool:
        moved = log.change_marker not in seen
        seen.append(log.change_marker)
        return moved

    log.maybe_assign_epoch_start_offset(0, 0)
    assert changed()
    log.append_as_leader(recs(3), leader_epoch=0)
    assert changed()
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert changed()
    assert not log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert not changed()
    log.maybe_increment_log_start_offset(1)
    assert changed()
    log.truncate_to(2)
    assert changed()
    log.mark_changed()
    assert changed()
    replacement = make_log()  # a partition deleted and created again: a new log
    assert replacement.change_marker not in seen

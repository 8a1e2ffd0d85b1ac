"""Log retention: segments deleted by age, by size and below the log start offset, never at or
above the high watermark; the log start offset follows; followers follow their leader's."""

from __future__ import annotations

import pytest

from replica import ApiError, BrokerConfig, Errors, FetchIsolation, Log, Record, TopicPartition
from replica.records import batch_size_in_bytes
from tests.replica.harness import Cluster

TP = TopicPartition("t", 0)
BATCH = [Record(None, bytes(100), 0) for _ in range(2)]
BATCH_BYTES = batch_size_in_bytes(BATCH)


def log_of(batches: int, *, timestamps: list[int] | None = None) -> Log:
    """A log with one batch of two records per segment, every offset committed."""
    log = Log(TP, BATCH_BYTES, 1 << 20)
    for i in range(batches):
        stamp = 0 if timestamps is None else timestamps[i]
        log.append_as_leader([Record(None, bytes(100), stamp)] * 2, leader_epoch=i)
    log.update_high_watermark(log.log_end_offset)
    return log


def test_segments_older_than_retention_ms_go_and_the_start_offset_follows() -> None:
    log = log_of(4, timestamps=[100, 200, 300, 400])
    assert len(log.segments) == 4
    assert log.delete_old_segments(now_ms=1250, retention_ms=1000, retention_bytes=-1) == 2
    assert log.log_start_offset == 4 and log.segments[0].base_offset == 4
    with pytest.raises(ApiError) as raised:
        log.read(3, 1 << 20, FetchIsolation.HIGH_WATERMARK, True)
    assert raised.value.error is Errors.OFFSET_OUT_OF_RANGE
    assert log.read(4, 1 << 20, FetchIsolation.HIGH_WATERMARK, True).records
    # The leader epochs of deleted offsets are gone; the epoch in force at the start is kept.
    assert log.leader_epoch_cache.entries == ((2, 4), (3, 6))


def test_retention_bytes_keeps_at_least_that_much() -> None:
    log = log_of(5)
    assert log.delete_old_segments(0, retention_ms=-1, retention_bytes=2 * BATCH_BYTES + 1) == 2
    assert log.size_in_bytes == 3 * BATCH_BYTES and log.log_start_offset == 4
    assert log.delete_old_segments(0, retention_ms=-1, retention_bytes=3 * BATCH_BYTES) == 0


def test_nothing_at_or_above_the_high_watermark_is_deleted() -> None:
    uncommitted = Log(TP, BATCH_BYTES, 1 << 20)
    for epoch in range(4):
        uncommitted.append_as_leader(BATCH, leader_epoch=epoch)
    uncommitted.maybe_increment_high_watermark(uncommitted.convert_to_offset_metadata(4))
    # Segments [0,2) and [2,4) are below the high watermark of 4; [4,6) is not.
    assert uncommitted.delete_old_segments(10_000, retention_ms=0, retention_bytes=-1) == 2
    assert uncommitted.log_start_offset == 4 and uncommitted.log_end_offset == 8


def test_an_expired_active_segment_is_rolled_then_deleted() -> None:
    log = log_of(1, timestamps=[0])
    assert log.delete_old_segments(10, retention_ms=5, retention_bytes=-1) == 1
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (2, 2, 2)
    assert [segment.base_offset for segment in log.segments] == [2]
    log.append_as_leader(BATCH, leader_epoch=1)
    log.update_high_watermark(4)
    assert log.read(2, 1 << 20, FetchIsolation.HIGH_WATERMARK, True).records
    # An empty active segment is never "deleted" again.
    assert log.delete_old_segments(10_000, retention_ms=0, retention_bytes=0) == 1
    assert log.delete_old_segments(10_000, retention_ms=0, retention_bytes=0) == 0


def test_limits_off_delete_nothing() -> None:
    log = log_of(3)
    assert log.delete_old_segments(10**12, retention_ms=-1, retention_bytes=-1) == 0
    assert log.log_start_offset == 0


def test_a_moved_start_offset_frees_the_segments_wholly_below_it() -> None:
    log = log_of(3)
    assert log.maybe_increment_log_start_offset(3)
    assert not log.maybe_increment_log_start_offset(2)  # never backwards
    assert log.delete_old_segments(0, retention_ms=-1, retention_bytes=-1) == 1
    assert log.log_start_offset == 3 and log.segments[0].base_offset == 2
    # The start is capped at the high watermark.
    assert log.maybe_increment_log_start_offset(100) and log.log_start_offset == 6


def test_brokers_run_retention_on_their_schedule_and_followers_follow_the_leader() -> None:
    config = BrokerConfig(
        log_segment_bytes=BATCH_BYTES,
        log_retention_bytes=2 * BATCH_BYTES,
        log_retention_check_interval_ms=1000,
    )
    cluster = Cluster(config=config)
    cluster.elect(TP, leader=0)
    cluster.pump()
    for _i in range(6):
        cluster.produce(0, TP, [bytes(100), bytes(100)])
        cluster.pump()
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    assert leader.log_start_offset(TP) == 0 and leader.high_watermark(TP) == 12
    cluster.advance(999)
    assert leader.log_start_offset(TP) == 0
    cluster.advance(1)  # the retention check runs on every broker
    assert leader.log_start_offset(TP) == 8
    assert follower.log_start_offset(TP) == 8  # its own retention, same limits
    # A fetch below the start offset is out of range.
    assert cluster.consume(0, TP, 0).fetch(TP).error is Errors.OFFSET_OUT_OF_RANGE
    assert cluster.consume(0, TP, 8).fetch(TP).records


def test_a_follower_takes_its_leaders_start_offset() -> None:
    cluster = Cluster(config=BrokerConfig(log_segment_bytes=BATCH_BYTES))
    cluster.elect(TP, leader=0)
    cluster.pump()
    for _ in range(3):
        cluster.produce(0, TP, [bytes(100), bytes(100)])
        cluster.pump()
    leader_log = cluster.brokers[0].get_partition(TP)
    assert leader_log is not None
    leader_log.log.delete_old_segments(0, retention_ms=-1, retention_bytes=BATCH_BYTES)
    assert cluster.brokers[0].log_start_offset(TP) == 4
    cluster.produce(0, TP, [bytes(100), bytes(100)])
    cluster.pump()  # the fetch response carries the leader's start offset
    assert cluster.brokers[1].log_start_offset(TP) == 4

"""Partition: high watermark, ISR shrink/expand, min.insync.replicas, leader checks."""

from __future__ import annotations

import pytest

from replica import (
    ApiError,
    BrokerConfig,
    Errors,
    FetchIsolation,
    LogOffsetMetadata,
    Partition,
    PartitionState,
    Record,
    TopicPartition,
)

TP = TopicPartition("t", 0)
LAG = 10_000


def recs(n: int) -> list[Record]:
    return [Record(None, b"v", 0) for _ in range(n)]


def leader(isr: tuple[int, ...] = (0, 1, 2), min_isr: int = 1, now: int = 0) -> Partition:
    config = BrokerConfig(min_insync_replicas=min_isr, replica_lag_time_max_ms=LAG)
    partition = Partition(TP, 0, config)
    partition.make_leader(PartitionState(0, 1, isr, (0, 1, 2)), now)
    return partition


def fetch(partition: Partition, replica: int, offset: int, now: int) -> bool:
    """A follower fetch at ``offset``, as the ReplicaManager records it."""
    position = partition.log.convert_to_offset_metadata(offset)
    return partition.update_follower_fetch_state(
        replica, position, 0, now, partition.log.log_end_offset
    )


def test_high_watermark_is_the_minimum_log_end_offset_over_the_isr() -> None:
    p = leader()
    info, moved = p.append_records_to_leader(recs(5), 1, 0)
    assert (info.first_offset, info.last_offset, moved) == (0, 4, False)
    assert p.log.high_watermark == 0
    assert fetch(p, 1, 5, 1) is False  # replica 2 is still at an unknown position
    assert fetch(p, 2, 3, 1) is True
    assert p.log.high_watermark == 3
    assert fetch(p, 2, 5, 2) is True
    assert p.log.high_watermark == 5


def test_single_replica_isr_moves_the_high_watermark_on_append() -> None:
    p = leader(isr=(0,))
    _, moved = p.append_records_to_leader(recs(2), -1, 0)
    assert moved and p.log.high_watermark == 2


def test_high_watermark_never_decreases_on_the_leader() -> None:
    p = leader(isr=(0, 1))
    p.append_records_to_leader(recs(4), 1, 0)
    fetch(p, 1, 4, 0)
    assert p.log.high_watermark == 4
    # Follower 2 joins later, behind; a stale lower report from 1 changes nothing.
    p.append_records_to_leader(recs(4), 1, 0)
    fetch(p, 1, 2, 1)
    assert p.log.high_watermark == 4


def test_isr_expands_when_a_follower_reaches_the_high_watermark() -> None:
    p = leader(isr=(0, 1))
    p.append_records_to_leader(recs(4), 1, 0)
    fetch(p, 1, 4, 0)
    assert p.log.high_watermark == 4
    fetch(p, 2, 3, 1)
    assert p.isr == (0, 1)
    fetch(p, 2, 4, 2)
    assert p.isr == (0, 1, 2)


def test_isr_expansion_needs_the_leader_epoch_start_offset() -> None:
    p = Partition(TP, 0, BrokerConfig(replica_lag_time_max_ms=LAG))
    p.log.append_as_leader(recs(6), 0)  # written under an earlier role
    p.log.update_high_watermark(2)  # as a lagging follower would know it
    p.make_leader(PartitionState(0, 1, (0, 1), (0, 1, 2)), 0)
    assert p.leader_epoch_start_offset == 6
    assert p.log.high_watermark == 2  # follower 1's position is unknown yet
    fetch(p, 2, 4, 1)  # past the high watermark but before the epoch start
    assert p.isr == (0, 1)
    fetch(p, 2, 6, 2)
    assert p.isr == (0, 1, 2)


def test_isr_shrinks_after_replica_lag_time_max_ms() -> None:
    p = leader(now=0)
    fetch(p, 1, 0, 0)
    fetch(p, 2, 0, 0)
    p.append_records_to_leader(recs(3), 1, 100)
    fetch(p, 1, 3, 200)  # follower 1 keeps up, follower 2 does not fetch
    assert not p.maybe_shrink_isr(LAG)
    assert p.isr == (0, 1, 2)
    assert p.maybe_shrink_isr(LAG + 1)  # 2 leaves; HW moves to min(3, 3)
    assert p.isr == (0, 1)
    assert p.log.high_watermark == 3


def test_a_follower_at_the_log_end_stays_in_sync_however_long_ago_it_caught_up() -> None:
    p = leader(isr=(0, 1))
    fetch(p, 1, 0, 0)
    assert not p.maybe_shrink_isr(10 * LAG)
    assert p.isr == (0, 1)


def test_a_follower_that_fetches_but_never_catches_up_leaves_the_isr() -> None:
    p = leader(isr=(0, 1))
    t = 0
    fetch(p, 1, 0, t)
    while t <= LAG + 1000:
        p.append_records_to_leader(recs(1), 1, t)
        end = p.log.log_end_offset
        fetch(p, 1, end - 2 if end >= 2 else 0, t)  # always two behind
        t += 500
    p.maybe_shrink_isr(t)
    assert p.isr == (0,)


def test_min_insync_replicas_rejects_acks_all_before_appending() -> None:
    p = leader(isr=(0,), min_isr=2)
    with pytest.raises(ApiError) as error:
        p.append_records_to_leader(recs(1), -1, 0)
    assert error.value.error is Errors.NOT_ENOUGH_REPLICAS
    assert p.log.log_end_offset == 0
    p.append_records_to_leader(recs(1), 1, 0)  # acks=1 is not affected
    assert p.log.log_end_offset == 1


def test_check_enough_replicas_reach_offset() -> None:
    p = leader(isr=(0, 1), min_isr=2)
    p.append_records_to_leader(recs(2), -1, 0)
    assert p.check_enough_replicas_reach_offset(2) == (False, Errors.NONE)
    fetch(p, 1, 2, 1)
    assert p.check_enough_replicas_reach_offset(2) == (True, Errors.NONE)
    p.append_records_to_leader(recs(2), -1, 2)
    p.maybe_shrink_isr(LAG + 10)  # follower 1 is behind and silent: it leaves the ISR
    assert p.isr == (0,)
    # Below min.insync.replicas the high watermark stays at 2 (KIP-966): offset 4 waits...
    assert p.check_enough_replicas_reach_offset(4) == (False, Errors.NONE)
    # ...and records it had reached are done, but with too small an ISR.
    assert p.check_enough_replicas_reach_offset(2) == (
        True,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    )
    p.make_follower(PartitionState(1, 2, (1,), (0, 1, 2)), 0)
    assert p.check_enough_replicas_reach_offset(4) == (False, Errors.NOT_LEADER_OR_FOLLOWER)


def test_reads_check_leadership_and_epoch() -> None:
    p = leader()
    p.append_records_to_leader(recs(1), 1, 0)
    assert p.read_records(0, 1, 100, FetchIsolation.LOG_END, True).records
    for epoch, error in ((0, Errors.FENCED_LEADER_EPOCH), (2, Errors.UNKNOWN_LEADER_EPOCH)):
        with pytest.raises(ApiError) as raised:
            p.read_records(0, epoch, 100, FetchIsolation.LOG_END, True)
        assert raised.value.error is error
    log_end = p.fetch_end_offset_metadata(None, FetchIsolation.LOG_END)
    high_watermark = p.fetch_end_offset_metadata(1, FetchIsolation.HIGH_WATERMARK)
    assert log_end is not None and log_end.message_offset == 1
    assert high_watermark is not None and high_watermark.message_offset == 0
    # A delayed fetch's check: no end offset (and no exception) where a read would fail.
    assert p.fetch_end_offset_metadata(0, FetchIsolation.LOG_END) is None
    assert p.fetch_end_offset_metadata(2, FetchIsolation.HIGH_WATERMARK) is None
    p.stop()
    for call in (
        lambda: p.read_records(0, None, 100, FetchIsolation.LOG_END, True),
        lambda: p.append_records_to_leader(recs(1), 1, 0),
    ):
        with pytest.raises(ApiError) as raised:
            call()
        assert raised.value.error is Errors.NOT_LEADER_OR_FOLLOWER
    assert p.fetch_end_offset_metadata(None, FetchIsolation.LOG_END) is None


def test_unknown_follower_is_rejected() -> None:
    p = leader()
    with pytest.raises(ApiError) as raised:
        p.update_follower_fetch_state(7, LogOffsetMetadata(0, 0, 0), 0, 0, 0)
    assert raised.value.error is Errors.NOT_LEADER_OR_FOLLOWER


def test_new_leader_forgets_follower_positions_and_restarts_catch_up_clock() -> None:
    p = leader(isr=(0, 1, 2))
    fetch(p, 1, 0, 0)
    p.make_follower(PartitionState(1, 2, (0, 1, 2), (0, 1, 2)), 5)
    assert p.remote_replicas == {}
    assert p.make_leader(PartitionState(0, 3, (0, 1), (0, 1, 2)), 50)
    assert p.remote_replicas[1].log_end_offset == -1
    assert p.remote_replicas[1].last_caught_up_time_ms == 50  # in the ISR
    assert p.remote_replicas[2].last_caught_up_time_ms == 0  # not in the ISR
    assert not p.make_leader(PartitionState(0, 4, (0, 1), (0, 1, 2)), 60)  # already leader


def test_a_reelected_leader_gives_an_out_of_isr_follower_no_caught_up_credit() -> None:
    # Kafka 3.3+ (Partition.makeLeader -> Replica.resetReplicaState): the same leader in a new
    # epoch counts an ISR follower as having fetched, and caught up, now; an out-of-ISR
    # follower as neither (time 0), so a fetch it did not send earns it no credit to stay in
    # the ISR it then joins.
    p = leader(isr=(0, 1))  # 2 is out of the ISR and never fetched
    p.append_records_to_leader(recs(3), 1, 0)
    fetch(p, 1, 3, 0)
    reelected = 2 * LAG
    assert not p.make_leader(PartitionState(0, 2, (0, 1), (0, 1, 2)), reelected)
    assert p.remote_replicas[1].last_fetch_time_ms == reelected
    assert p.remote_replicas[2].last_fetch_time_ms == 0
    assert p.remote_replicas[2].last_caught_up_time_ms == 0
    p.append_records_to_leader(recs(2), 1, reelected)
    fetch(p, 2, 3, reelected + 1)  # at the epoch's start, behind the log end: joins the ISR
    assert p.isr == (0, 1, 2)
    assert p.remote_replicas[2].last_caught_up_time_ms == 0
    assert p.maybe_shrink_isr(reelected + 2) is False  # the high watermark stays at 3
    assert p.isr == (0, 1)  # 2 leaves at once; 1 is still within its lag limit


def test_the_high_watermark_stays_while_the_isr_is_below_min_insync_replicas() -> None:
    # KIP-966 / KAFKA-15583 (3.7+, whether or not ELR is enabled): the high watermark does
    # not advance while the ISR is smaller than min.insync.replicas.
    p = leader(isr=(0, 1), min_isr=2)
    p.append_records_to_leader(recs(2), 1, 0)
    fetch(p, 1, 2, 1)
    assert p.log.high_watermark == 2
    p.append_records_to_leader(recs(2), 1, 2)
    assert p.maybe_shrink_isr(LAG + 10) is False  # 1 leaves; the leader alone would make it 4
    assert (p.isr, p.log.high_watermark) == ((0,), 2)
    _, moved = p.append_records_to_leader(recs(1), 1, LAG + 20)
    assert (moved, p.log.high_watermark) == (False, 2)  # acks=1 records stay uncommitted
    assert fetch(p, 1, 5, LAG + 30)  # 1 catches up and rejoins: the high watermark moves
    assert (p.isr, p.log.high_watermark) == ((0, 1), 5)


def test_a_leader_elected_alone_below_min_insync_replicas_commits_nothing() -> None:
    p = leader(isr=(0,), min_isr=2)
    _, moved = p.append_records_to_leader(recs(2), 1, 0)
    assert (moved, p.log.high_watermark) == (False, 0)


def test_min_insync_replicas_is_capped_at_the_replication_factor() -> None:
    # Kafka 3.7+ (Partition.effectiveMinIsr): min(min.insync.replicas, replicas).
    p = Partition(TP, 0, BrokerConfig(min_insync_replicas=3, replica_lag_time_max_ms=LAG))
    p.make_leader(PartitionState(0, 1, (0, 1), (0, 1)), 0)  # replication factor 2
    p.append_records_to_leader(recs(1), -1, 0)  # not NOT_ENOUGH_REPLICAS
    assert fetch(p, 1, 1, 1) and p.log.high_watermark == 1
    assert p.check_enough_replicas_reach_offset(1) == (True, Errors.NONE)
    single = Partition(TP, 0, BrokerConfig(min_insync_replicas=2))
    single.make_leader(PartitionState(0, 1, (0,), (0,)), 0)  # replication factor 1
    _, moved = single.append_records_to_leader(recs(1), -1, 0)
    assert moved and single.check_enough_replicas_reach_offset(1) == (True, Errors.NONE)

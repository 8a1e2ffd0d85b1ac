"""Epoch-based follower truncation: the leader's diverging-epoch answers, and the sequences that
lose acknowledged records when followers truncate to their high watermark (KAFKA-1211, KIP-279).
"""

from __future__ import annotations

import pytest

from replica import (
    BrokerConfig,
    EpochEndOffset,
    Errors,
    IsolationLevel,
    PartitionFetchInfo,
    PartitionState,
    RecordBatch,
    TopicPartition,
)
from tests.replica.harness import Cluster, Recorder

TP = TopicPartition("t", 0)
CONFIG = BrokerConfig(min_insync_replicas=2, replica_lag_time_max_ms=10_000)


def batches(cluster: Cluster, broker_id: int) -> list[RecordBatch]:
    partition = cluster.brokers[broker_id].get_partition(TP)
    assert partition is not None
    return [b for s in partition.log.segments for b in s.batches]


def values(cluster: Cluster, broker_id: int) -> list[bytes | None]:
    return [r.value for b in batches(cluster, broker_id) for r in b.records]


def epochs(cluster: Cluster, broker_id: int) -> tuple[tuple[int, int], ...]:
    partition = cluster.brokers[broker_id].get_partition(TP)
    assert partition is not None
    return partition.log.leader_epoch_cache.entries


def follower_fetch(
    cluster: Cluster, leader: int, info: PartitionFetchInfo, replica_id: int = 1
) -> Recorder:
    recorder = Recorder()
    cluster.brokers[leader].fetch_messages(
        replica_id, {TP: info}, 1, 500, 1 << 20, IsolationLevel.READ_UNCOMMITTED, recorder
    )
    return recorder


def acked_write(config: BrokerConfig = CONFIG) -> tuple[Cluster, RecordBatch]:
    """Brokers 0, 1, 2; 0 leads epoch 0; ``m`` is acknowledged (acks=-1) at offset 0, but the
    followers have not yet learned the new high watermark."""
    cluster = Cluster(config=config)
    cluster.elect(TP, leader=0)
    cluster.pump()
    produce = cluster.produce(0, TP, [b"m"])
    cluster.pump()  # the followers take m, then report it: HW 1, m is acknowledged
    assert produce.produce(TP).error is Errors.NONE
    assert [cluster.brokers[b].high_watermark(TP) for b in (0, 1, 2)] == [1, 0, 0]
    (acked,) = batches(cluster, 0)
    return cluster, acked


# -- the leader's answer ------------------------------------------------------------------


@pytest.fixture
def cluster() -> Cluster:
    """Leader 0 of offsets 0..1 (epoch 0) and 2..3 (epoch 2: re-elected at offset 2)."""
    c = Cluster()
    c.elect(TP, leader=0)
    c.produce(0, TP, [b"a", b"b"], acks=1)
    c.epochs[TP] = 1  # epoch 1 went to another broker that wrote nothing
    c.elect(TP, leader=0)
    c.produce(0, TP, [b"c", b"d"], acks=1)
    assert epochs(c, 0) == ((0, 0), (2, 2))
    return c


def test_a_diverging_follower_is_answered_at_once_and_not_recorded(cluster: Cluster) -> None:
    leader = cluster.brokers[0].get_partition(TP)
    assert leader is not None
    follower_fetch(cluster, 0, PartitionFetchInfo(1, 1 << 20, 2, 0, 0))
    assert leader.remote_replicas[1].log_end_offset == 1
    # Epoch 0 ends at 2 here; a follower with epoch 0 up to offset 3 diverges.
    response = follower_fetch(cluster, 0, PartitionFetchInfo(3, 1 << 20, 2, 0, 0)).fetch(TP)
    assert response.diverging_epoch == EpochEndOffset(0, 2)
    assert (response.error, response.records, response.log_end_offset) == (Errors.NONE, (), 4)
    assert leader.remote_replicas[1].log_end_offset == 1  # the diverging position is not recorded
    # Epoch 1 is unknown here: the largest epoch below it is 0, ending at 2.
    response = follower_fetch(cluster, 0, PartitionFetchInfo(2, 1 << 20, 2, 0, 1)).fetch(TP)
    assert response.diverging_epoch == EpochEndOffset(0, 2)


def test_a_consistent_follower_reads_and_waits_as_before(cluster: Cluster) -> None:
    leader = cluster.brokers[0].get_partition(TP)
    assert leader is not None
    data = follower_fetch(cluster, 0, PartitionFetchInfo(1, 1 << 20, 2, 0, 0)).fetch(TP)
    assert data.diverging_epoch is None and [b.base_offset for b in data.records] == [0, 2]
    assert leader.remote_replicas[1].log_end_offset == 1
    at_end = follower_fetch(cluster, 0, PartitionFetchInfo(4, 1 << 20, 2, 0, 2))
    assert not at_end.done  # parked: nothing to read yet
    assert leader.remote_replicas[1].log_end_offset == 4


def test_bad_last_fetched_epochs(cluster: Cluster) -> None:
    def error(info: PartitionFetchInfo) -> Errors:
        return follower_fetch(cluster, 0, info).fetch(TP).error

    assert error(PartitionFetchInfo(0, 100, None, 0, -1)) is Errors.INVALID_REQUEST
    # Newer than any epoch of the leader (only possible without current_leader_epoch).
    assert error(PartitionFetchInfo(0, 100, None, 0, 9)) is Errors.OFFSET_OUT_OF_RANGE
    # Fencing comes first.
    assert error(PartitionFetchInfo(3, 100, 1, 0, 0)) is Errors.FENCED_LEADER_EPOCH
    consumer = Recorder()
    cluster.brokers[0].fetch_messages(
        -1,
        {TP: PartitionFetchInfo(3, 100, None, -1, 0)},
        1,
        500,
        100,
        IsolationLevel.READ_UNCOMMITTED,
        consumer,
    )
    assert consumer.fetch(TP).diverging_epoch == EpochEndOffset(0, 2)


# -- sequences that lost acknowledged records before KIP-101 ---------------------------------


def test_kafka_1211_a_stalled_follower_keeps_acked_records_across_two_quick_failovers() -> None:
    c, acked = acked_write()
    # Broker 2 stalls from now on: it fetches no more but stays in the ISR for a while.
    c.brokers[0].stop_replica(TP, delete=False)
    c.elect(TP, leader=1, isr=(1, 2), brokers=(1, 2))  # clean: 1 is in the ISR
    assert batches(c, 2) == [acked]  # becoming a follower truncated nothing (HW was 0)
    assert c.brokers[1].isr(TP) == (1, 2)
    c.brokers[1].stop_replica(TP, delete=False)
    c.elect(TP, leader=2, isr=(2,), brokers=(2,))  # clean: 2 is the last ISR member
    assert batches(c, 2)[0] is acked
    # The others come back as followers and agree with the new leader.
    c.elect(TP, leader=2, isr=(2,))
    c.pump()
    assert c.produce(2, TP, [b"n"]).done is False
    c.pump()
    assert c.brokers[2].isr(TP) == (2, 0, 1)
    assert values(c, 0) == values(c, 1) == values(c, 2) == [b"m", b"n"]


def test_kafka_1211_b_a_same_leader_epoch_bump_truncates_no_follower() -> None:
    c, acked = acked_write()
    c.brokers[2].stop_replica(TP, delete=False)
    # A ZooKeeper-mode controller shrinks the ISR with a new leader epoch.
    c.elect(TP, leader=0, isr=(0, 1), brokers=(0, 1))
    assert batches(c, 1) == [acked]
    assert c.brokers[0].high_watermark(TP) <= c.brokers[1].log_end_offset(TP)
    c.pump()  # epoch 0 still ends at 1 on the leader: no divergence, the fetch is parked
    c.advance(500)  # it expires and tells broker 1 the high watermark
    assert (c.brokers[1].log_end_offset(TP), c.brokers[1].high_watermark(TP)) == (1, 1)
    c.brokers[0].stop_replica(TP, delete=False)
    c.elect(TP, leader=1, isr=(1,), brokers=(1,))
    assert batches(c, 1)[0] is acked


def test_kip_279_a_former_leader_drops_the_epoch_it_wrote_alone() -> None:
    """A follower that led epoch 1 briefly (writing offsets 3..6 nobody copied) follows the
    epoch-2 leader, which holds offsets 3..4 from epoch 0. The leader answers epoch 1 with
    (epoch 0, ends at 5); truncating to 5 would keep the follower's own 3..4. It truncates to
    the end of its own epoch 0 (3) instead and copies 3..4 from the leader."""
    c = Cluster(config=BrokerConfig(replica_lag_time_max_ms=10_000))
    c.elect(TP, leader=0)
    for value in (b"a", b"b"):
        c.produce(0, TP, [value], acks=1)
        c.pump()
    for value in (b"c", b"d", b"e"):  # broker 2 stalls: its parked fetch takes c, no more
        c.produce(0, TP, [value], acks=1)
        c.pump(brokers=(1,))
    assert (c.brokers[1].log_end_offset(TP), c.brokers[2].log_end_offset(TP)) == (5, 3)
    c.brokers[0].stop_replica(TP, delete=False)
    c.elect(TP, leader=2, isr=(1, 2), brokers=(1, 2))  # epoch 1; broker 1 stalls now
    for value in (b"x1", b"x2", b"x3", b"x4"):
        c.produce(2, TP, [value], acks=1)
    assert epochs(c, 2) == ((0, 0), (1, 3))
    c.brokers[2].stop_replica(TP, delete=False)
    c.elect(TP, leader=1, isr=(1,), brokers=(1,))  # epoch 2
    assert epochs(c, 1) == ((0, 0), (2, 5))
    state = PartitionState(1, c.epochs[TP], (1,), (0, 1, 2))
    c.brokers[2].become_leader_or_follower({TP: state})
    assert c.send_fetches(2) == 1  # diverging (0, 5): truncate to 3, the end of our epoch 0
    assert values(c, 2) == [b"a", b"b", b"c"]
    c.pump(brokers=(2,))
    assert batches(c, 2) == batches(c, 1)
    assert values(c, 2) == [b"a", b"b", b"c", b"d", b"e"]


def test_an_epoch_led_without_writing_is_dropped_without_looping() -> None:
    """Broker 1 led epoch 1 without writing; following epoch 2 it reports last epoch 1, which
    the leader does not know: the answer (0, 2) truncates no record, only the empty epoch."""
    c = Cluster()
    c.elect(TP, leader=0)
    c.pump()
    c.produce(0, TP, [b"a", b"b"], acks=1)
    c.elect(TP, leader=1)
    assert epochs(c, 1) == ((0, 0), (1, 2))
    c.elect(TP, leader=0)
    assert c.pump() < 10
    assert epochs(c, 1) == ((0, 0),)
    assert values(c, 1) == [b"a", b"b"] and values(c, 2) == [b"a", b"b"]
    c.produce(0, TP, [b"c"], acks=1)
    c.pump()
    assert values(c, 1) == values(c, 0) == [b"a", b"b", b"c"]
    assert epochs(c, 1) == ((0, 0), (2, 2))

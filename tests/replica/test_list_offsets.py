"""ReplicaManager.fetch_offset_for_timestamp: ListOffsets as Kafka's Partition answers it."""

from __future__ import annotations

import pytest

from replica import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_TIMESTAMP,
    UNKNOWN_OFFSET,
    BrokerConfig,
    Errors,
    FetchPartitionData,
    IsolationLevel,
    ListOffsetsResult,
    Record,
    RecordBatch,
    ReplicaManager,
    TopicPartition,
)
from replica.records import batch_size_in_bytes
from tests.replica.harness import Cluster

TP = TopicPartition("t", 0)
UNCOMMITTED = IsolationLevel.READ_UNCOMMITTED
COMMITTED = IsolationLevel.READ_COMMITTED


def lookup(
    broker: ReplicaManager,
    timestamp: int,
    isolation: IsolationLevel | None = UNCOMMITTED,
    epoch: int | None = None,
    tp: TopicPartition = TP,
) -> ListOffsetsResult:
    return broker.fetch_offset_for_timestamp(
        tp, timestamp, isolation=isolation, current_leader_epoch=epoch
    )


def produce_stamped(cluster: Cluster, leader: int, *timestamps: int) -> None:
    records = [Record(None, b"v", ts) for ts in timestamps]
    cluster.brokers[leader].append_messages(1000, 1, {TP: records}, lambda _response: None)


@pytest.fixture
def cluster() -> Cluster:
    """Leader 0 (epoch 0) of offsets 0..4 with timestamps 10, 20, 30 | 40, 50, HW 3."""
    c = Cluster()
    c.elect(TP, leader=0)
    produce_stamped(c, 0, 10, 20, 30)
    c.pump()  # followers report LEO 3: HW 3
    produce_stamped(c, 0, 40, 50)  # not committed yet (followers hold it, HW stays 3)
    assert c.brokers[0].high_watermark(TP) == 3 and c.brokers[0].log_end_offset(TP) == 5
    return c


def test_latest_is_the_high_watermark_for_consumers_and_the_log_end_for_replicas(
    cluster: Cluster,
) -> None:
    leader = cluster.brokers[0]
    for isolation in (UNCOMMITTED, COMMITTED):
        assert lookup(leader, LATEST_TIMESTAMP, isolation) == ListOffsetsResult(
            Errors.NONE, NO_TIMESTAMP, 3, 0
        )
    assert lookup(leader, LATEST_TIMESTAMP, None) == ListOffsetsResult(
        Errors.NONE, NO_TIMESTAMP, 5, 0
    )


def test_earliest_is_the_log_start_with_its_epoch(cluster: Cluster) -> None:
    assert lookup(cluster.brokers[0], EARLIEST_TIMESTAMP) == ListOffsetsResult(
        Errors.NONE, NO_TIMESTAMP, 0, 0
    )


def test_timestamp_lookup_is_bounded_by_the_isolation_end(cluster: Cluster) -> None:
    leader = cluster.brokers[0]
    assert lookup(leader, 0) == ListOffsetsResult(Errors.NONE, 10, 0, 0)
    assert lookup(leader, 15, COMMITTED) == ListOffsetsResult(Errors.NONE, 20, 1, 0)
    assert lookup(leader, 30) == ListOffsetsResult(Errors.NONE, 30, 2, 0)
    # Offset 3 (timestamp 40) is above the high watermark: only a replica may see it.
    assert lookup(leader, 31) == ListOffsetsResult(Errors.NONE, NO_TIMESTAMP, UNKNOWN_OFFSET)
    assert lookup(leader, 31, None) == ListOffsetsResult(Errors.NONE, 40, 3, 0)
    assert lookup(leader, 51, None) == ListOffsetsResult(Errors.NONE)
    cluster.pump()
    assert lookup(leader, 31) == ListOffsetsResult(Errors.NONE, 40, 3, 0)


def test_errors(cluster: Cluster) -> None:
    leader = cluster.brokers[0]
    assert (
        lookup(leader, 0, tp=TopicPartition("nope", 0)).error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert lookup(cluster.brokers[1], LATEST_TIMESTAMP).error is Errors.NOT_LEADER_OR_FOLLOWER
    assert lookup(leader, LATEST_TIMESTAMP, epoch=0).error is Errors.NONE
    assert lookup(leader, LATEST_TIMESTAMP, epoch=1).error is Errors.UNKNOWN_LEADER_EPOCH
    cluster.elect(TP, leader=0)
    assert lookup(leader, LATEST_TIMESTAMP, epoch=0).error is Errors.FENCED_LEADER_EPOCH
    for bad in (-3, -4, -100):
        assert lookup(leader, bad) == ListOffsetsResult(Errors.INVALID_REQUEST)


def test_offset_not_available_while_a_new_leaders_high_watermark_lags_its_epoch_start() -> None:
    c = Cluster()
    c.elect(TP, leader=0)
    c.pump()
    produce_stamped(c, 0, 10)  # the followers' parked fetches take it at once
    assert c.brokers[1].log_end_offset(TP) == 1 and c.brokers[1].high_watermark(TP) == 0
    c.elect(TP, leader=1, isr=(1, 2), brokers=(1, 2))  # epoch 1 starts at offset 1, HW 0
    new_leader = c.brokers[1]
    assert lookup(new_leader, LATEST_TIMESTAMP).error is Errors.OFFSET_NOT_AVAILABLE
    assert lookup(new_leader, 0, COMMITTED).error is Errors.OFFSET_NOT_AVAILABLE
    # A replica asking is not affected; EARLIEST neither.
    assert lookup(new_leader, LATEST_TIMESTAMP, None) == ListOffsetsResult(
        Errors.NONE, NO_TIMESTAMP, 1, 1
    )
    assert lookup(new_leader, EARLIEST_TIMESTAMP).error is Errors.NONE
    c.pump()  # broker 2 fetches from the new leader: its HW reaches 1
    assert new_leader.high_watermark(TP) == 1
    assert lookup(new_leader, LATEST_TIMESTAMP) == ListOffsetsResult(
        Errors.NONE, NO_TIMESTAMP, 1, 1
    )
    assert lookup(new_leader, 0) == ListOffsetsResult(Errors.NONE, 10, 0, 0)


def test_earliest_has_no_epoch_when_the_first_epoch_starts_after_the_log_start() -> None:
    c = Cluster(broker_ids=(0, 1), config=BrokerConfig())
    c.elect(TP, leader=0, replicas=(0, 1))
    follower = c.brokers[1]
    fetcher = follower.replica_fetchers[0]
    fetcher.build_fetch_request(0)
    records = (Record(None, b"v", 5),)
    no_epoch = RecordBatch(0, records, batch_size_in_bytes(records))  # written without epochs
    fetcher.handle_fetch_response(
        {TP: FetchPartitionData(Errors.NONE, 1, 0, 1, (no_epoch,), no_epoch.size_in_bytes, 1)}, 0
    )
    c.elect(TP, leader=1, replicas=(0, 1), isr=(1,), brokers=(1,))
    assert lookup(follower, EARLIEST_TIMESTAMP) == ListOffsetsResult(
        Errors.NONE, NO_TIMESTAMP, 0, None
    )
    assert lookup(follower, 5) == ListOffsetsResult(Errors.NONE, 5, 0, None)

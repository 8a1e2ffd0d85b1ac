"""The API refactoring document's request-handling workflows, end to end on 3 brokers, RF 3."""

from __future__ import annotations

from typing import Any

import pytest

from apis import (
    DEBUGGING_REPLICA_ID,
    Errors,
    FetchResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    KafkaConfig,
    OffsetCommitResponse,
    OffsetFetchResponse,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResult,
    ProduceResponse,
)
from cluster import Call, Client, Cluster
from coordinator import OffsetConfig
from replica.config import BrokerConfig
from replica.types import GROUP_METADATA_TOPIC_NAME, TopicPartition

TP = TopicPartition("events", 0)
GROUP = "billing"


def make_cluster(**broker: Any) -> tuple[Cluster, Client]:
    config = KafkaConfig(
        broker=BrokerConfig(**broker),
        offsets=OffsetConfig(offsets_topic_num_partitions=5),
    )
    cluster = Cluster(3, config=config)
    cluster.create_topic("events", 1, 3)
    # Followers' fetches already waiting at a leader (for __consumer_offsets) do not include
    # the new partition; it joins their next fetch, after replica.fetch.wait.max.ms at most.
    cluster.advance(config.broker.replica_fetch_wait_max_ms)
    return cluster, Client(cluster)


def produce_error(call: Call) -> Errors:
    return call.result(ProduceResponse).responses[TP].error


def hw(cluster: Cluster, broker_id: int, tp: TopicPartition = TP) -> int | None:
    return cluster.broker(broker_id).replica_manager.high_watermark(tp)


def followers(cluster: Cluster, tp: TopicPartition = TP) -> list[int]:
    state = cluster.controller.partition_state(tp)
    return [r for r in state.replicas if r != state.leader]


def test_acks_all_completes_only_after_both_followers_fetch() -> None:
    cluster, client = make_cluster()
    leader = cluster.leader(TP)
    first, second = followers(cluster)
    cluster.pause_fetchers(first)
    cluster.pause_fetchers(second)
    call = client.produce(TP, [b"a", b"b"], acks=-1)
    assert not call.done
    assert hw(cluster, leader) == 0
    cluster.resume_fetchers(first)  # one follower confirms both records
    assert not call.done
    assert hw(cluster, leader) == 0
    cluster.advance(100)
    assert not call.done
    cluster.resume_fetchers(second)
    assert produce_error(call) is Errors.NONE
    assert call.answered_at == 600
    assert hw(cluster, leader) == 2
    for broker_id in cluster.brokers:
        assert cluster.broker(broker_id).replica_manager.log_end_offset(TP) == 2


def test_acks_one_and_zero_answer_after_the_local_append() -> None:
    cluster, client = make_cluster()
    for follower in followers(cluster):
        cluster.pause_fetchers(follower)
    one = client.produce(TP, [b"a"], acks=1)
    zero = client.produce(TP, [b"b"], acks=0)
    assert produce_error(one) is Errors.NONE
    assert produce_error(zero) is Errors.NONE
    assert not zero.request.expects_response
    assert cluster.broker(cluster.leader(TP)).replica_manager.log_end_offset(TP) == 2
    assert hw(cluster, cluster.leader(TP)) == 0


def test_produce_times_out_when_a_follower_stalls() -> None:
    cluster, client = make_cluster()
    stalled = followers(cluster)[0]
    cluster.pause_fetchers(stalled)
    call = client.produce(TP, [b"a"], acks=-1, timeout_ms=1_000)
    cluster.advance(999)
    assert not call.done
    cluster.advance(1)
    assert produce_error(call) is Errors.REQUEST_TIMED_OUT
    assert call.answered_at == 1_500
    assert hw(cluster, cluster.leader(TP)) == 0  # the stalled follower holds the HW back
    cluster.resume_fetchers(stalled)
    assert hw(cluster, cluster.leader(TP)) == 1  # the record was appended; now it commits


def test_not_enough_replicas_when_the_isr_is_below_min_insync() -> None:
    cluster, client = make_cluster(min_insync_replicas=2)
    for follower in followers(cluster):
        cluster.stop_broker(follower)
    leader = cluster.leader(TP)
    assert cluster.controller.partition_state(TP).isr == (leader,)
    call = client.produce(TP, [b"a"], acks=-1)
    assert produce_error(call) is Errors.NOT_ENOUGH_REPLICAS
    assert cluster.broker(leader).replica_manager.log_end_offset(TP) == 0
    assert produce_error(client.produce(TP, [b"a"], acks=1)) is Errors.NONE


def test_acks_all_times_out_after_the_leader_shrinks_the_isr_below_min_insync() -> None:
    # KIP-966 / KAFKA-15583 (3.7+): below min.insync.replicas the high watermark stays, so a
    # waiting acks=all produce times out (before 3.7 it got NOT_ENOUGH_REPLICAS_AFTER_APPEND
    # when the ISR shrank); new ones are rejected before appending.
    cluster, client = make_cluster(min_insync_replicas=2, replica_lag_time_max_ms=2_000)
    leader = cluster.leader(TP)
    for follower in followers(cluster):
        cluster.pause_fetchers(follower)
    pending = client.produce(TP, [b"a"], acks=-1, timeout_ms=10_000)
    cluster.advance(3_000)  # followers stop being caught up: the leader drops them
    assert cluster.broker(leader).replica_manager.isr(TP) == (leader,)
    assert cluster.broker(leader).replica_manager.high_watermark(TP) == 0
    assert produce_error(client.produce(TP, [b"b"], acks=-1)) is Errors.NOT_ENOUGH_REPLICAS
    assert not pending.done
    cluster.advance(7_000)
    assert produce_error(pending) is Errors.REQUEST_TIMED_OUT


def test_consumer_fetch_long_polls_until_data_is_committed() -> None:
    cluster, client = make_cluster()
    for follower in followers(cluster):
        cluster.pause_fetchers(follower)
    fetch = client.fetch(TP, 0, max_wait_ms=500)
    cluster.advance(100)
    client.produce(TP, [b"a"], acks=1)  # appended, but above the HW: not visible
    assert not fetch.done
    cluster.advance(100)
    for follower in followers(cluster):
        cluster.resume_fetchers(follower)  # the HW moves past the record
    response = fetch.result(FetchResponse)
    assert fetch.answered_at == 700
    data = response.responses[TP]
    assert data.error is Errors.NONE
    assert data.high_watermark == 1
    assert [r.value for batch in data.records for r in batch.records] == [b"a"]


def test_consumer_fetch_answers_empty_at_max_wait() -> None:
    cluster, client = make_cluster()
    fetch = client.fetch(TP, 0, max_wait_ms=300)
    cluster.advance(299)
    assert not fetch.done
    cluster.advance(1)
    assert fetch.result(FetchResponse).responses[TP].records == ()
    assert fetch.answered_at == 800


def coordinator_followers(cluster: Cluster) -> list[int]:
    coordinator = cluster.coordinator(GROUP)
    return [b for b in cluster.brokers if b != coordinator]


def committed(client: Client, **kwargs: int) -> int:
    response = client.fetch_offsets(GROUP, [TP], **kwargs).result(OffsetFetchResponse)
    assert response.error is Errors.NONE
    return response.offsets[TP].offset


def test_offset_commit_completes_after_replication_then_offset_fetch_sees_it() -> None:
    cluster, client = make_cluster()
    for broker_id in coordinator_followers(cluster):
        cluster.pause_fetchers(broker_id)
    commit = client.commit(GROUP, {TP: 17}, metadata="from test")
    assert not commit.done
    assert committed(client) == -1  # not in the cache before the write is replicated
    for broker_id in coordinator_followers(cluster):
        cluster.resume_fetchers(broker_id)
    assert commit.result(OffsetCommitResponse).errors == {TP: Errors.NONE}
    response = client.fetch_offsets(GROUP).result(OffsetFetchResponse)
    assert response.offsets[TP].offset == 17
    assert response.offsets[TP].metadata == "from test"


def test_commit_that_cannot_replicate_times_out_and_leaves_the_cache() -> None:
    cluster, client = make_cluster()
    assert client.commit(GROUP, {TP: 5}).result(OffsetCommitResponse).errors == {TP: Errors.NONE}
    cluster.pause_fetchers(coordinator_followers(cluster)[0])
    commit = client.commit(GROUP, {TP: 6})
    timeout = cluster.config.offsets.offsets_commit_timeout_ms
    cluster.advance(timeout - 1)
    assert not commit.done
    cluster.advance(1)
    assert commit.result(OffsetCommitResponse).errors == {TP: Errors.REQUEST_TIMED_OUT}
    assert committed(client) == 5


def test_commit_below_min_insync_maps_to_coordinator_not_available() -> None:
    cluster, client = make_cluster(min_insync_replicas=2)
    assert client.commit(GROUP, {TP: 5}).result(OffsetCommitResponse).errors == {TP: Errors.NONE}
    for broker_id in coordinator_followers(cluster):
        cluster.stop_broker(broker_id)
    commit = client.commit(GROUP, {TP: 6})
    assert commit.result(OffsetCommitResponse).errors == {TP: Errors.COORDINATOR_NOT_AVAILABLE}
    assert committed(client) == 5


@pytest.mark.parametrize("move", ["elect", "stop"])
def test_offsets_survive_a_coordinator_move(move: str) -> None:
    cluster, client = make_cluster()
    old = cluster.coordinator(GROUP)
    assert client.commit(GROUP, {TP: 42}).result(OffsetCommitResponse).errors == {TP: Errors.NONE}
    offsets_tp = TopicPartition(
        GROUP_METADATA_TOPIC_NAME, cluster.broker(old).offset_manager.partition_for(GROUP)
    )
    new = next(b for b in cluster.controller.partition_state(offsets_tp).isr if b != old)
    if move == "elect":
        cluster.elect_leader(offsets_tp, new)
        stale = client.fetch_offsets(GROUP, destination=old).result(OffsetFetchResponse)
        assert stale.error is Errors.NOT_COORDINATOR
    else:
        cluster.stop_broker(old)
        new = cluster.coordinator(GROUP)
    assert cluster.coordinator(GROUP) == new != old
    found = client.cluster.send(new, FindCoordinatorRequest(GROUP)).result(FindCoordinatorResponse)
    assert found.coordinator is not None and found.coordinator.broker_id == new
    assert committed(client) == 42
    commit = client.commit(GROUP, {TP: 43})
    # followers move their fetch to the new leader; one already waiting there (for other
    # partitions) picks the partition up when it returns, within replica.fetch.wait.max.ms
    cluster.advance(cluster.config.broker.replica_fetch_wait_max_ms)
    assert commit.result(OffsetCommitResponse).errors == {TP: Errors.NONE}
    assert committed(client) == 43


def test_offset_for_leader_epoch_says_where_an_epoch_ends_after_a_leader_change() -> None:
    """KIP-320: a consumer that read epoch 0's records asks the new leader where epoch 0 ends
    (the start of epoch 1) and where the current epoch ends (the log end offset)."""
    cluster, client = make_cluster()
    old = cluster.leader(TP)
    client.produce(TP, [b"a", b"b"], acks=-1)
    cluster.run_until_idle()
    cluster.stop_broker(old)
    new = cluster.leader(TP)
    client.produce(TP, [b"c"], acks=-1)
    cluster.run_until_idle()

    def ask(
        broker: int, epoch: int, current: int | None = None, replica_id: int = -1
    ) -> OffsetForLeaderEpochResult:
        request = OffsetForLeaderEpochRequest(
            {TP: OffsetForLeaderEpochPartition(epoch, current)}, replica_id
        )
        call = cluster.send(broker, request)
        cluster.run_until_idle()
        return call.result(OffsetForLeaderEpochResponse).responses[TP]

    assert ask(new, 0) == OffsetForLeaderEpochResult(Errors.NONE, 0, 2)
    assert ask(new, 1, current=1) == OffsetForLeaderEpochResult(Errors.NONE, 1, 3)
    assert ask(new, 7) == OffsetForLeaderEpochResult(Errors.NONE, -1, -1)  # newer than any
    assert ask(new, 0, current=0).error is Errors.FENCED_LEADER_EPOCH
    assert ask(new, 0, current=2).error is Errors.UNKNOWN_LEADER_EPOCH
    follower = next(b for b in followers(cluster) if b not in (new, old))
    assert ask(follower, 0).error is Errors.NOT_LEADER_OR_FOLLOWER
    # Kafka's debugging replica id is answered by any replica
    assert ask(follower, 0, replica_id=DEBUGGING_REPLICA_ID) == OffsetForLeaderEpochResult(
        Errors.NONE, 0, 2
    )
    unknown = OffsetForLeaderEpochRequest(
        {TopicPartition("nope", 0): OffsetForLeaderEpochPartition(0)}
    )
    call = cluster.send(new, unknown)
    cluster.run_until_idle()
    [result] = call.result(OffsetForLeaderEpochResponse).responses.values()
    assert result.error is Errors.UNKNOWN_TOPIC_OR_PARTITION

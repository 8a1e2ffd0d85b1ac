"""Idle partitions in fetch sessions: the leader skips them without a read, and a follower's
place in the ISR is what Kafka's rule gives (Kafka 3.9 ``isCaughtUp``: at the leader's log end,
or caught up within replica.lag.time.max.ms)."""

from __future__ import annotations

from typing import Any

import pytest

from apis import Errors, KafkaConfig, ProduceResponse
from cluster import Client, Cluster
from coordinator import OffsetConfig
from replica.config import BrokerConfig
from replica.log import Log
from replica.partition import Partition
from replica.types import TopicPartition

BUSY = TopicPartition("events", 0)
IDLE = TopicPartition("events", 1)
LAG_MS = 2_000


def make_cluster(session_slots: int = 1000) -> tuple[Cluster, Client]:
    config = KafkaConfig(
        broker=BrokerConfig(replica_lag_time_max_ms=LAG_MS, replica_fetch_wait_max_ms=500),
        offsets=OffsetConfig(offsets_topic_num_partitions=2),
        max_incremental_fetch_session_cache_slots=session_slots,
    )
    cluster = Cluster(2, config=config)
    cluster.create_topic("events", 2, 2)
    cluster.advance(config.broker.replica_fetch_wait_max_ms)
    return cluster, Client(cluster)


def leader_and_follower(cluster: Cluster, tp: TopicPartition) -> tuple[int, int]:
    state = cluster.controller.partition_state(tp)
    (follower,) = (r for r in state.replicas if r != state.leader)
    return state.leader, follower


def count_reads(monkeypatch: pytest.MonkeyPatch, log: Log) -> list[int]:
    """Count the reads of ``log`` from now on (one entry per read)."""
    reads: list[int] = []
    original = Log.read

    def read(self: Log, *args: Any) -> Any:
        if self is log:
            reads.append(args[0])
        return original(self, *args)

    monkeypatch.setattr(Log, "read", read)
    return reads


@pytest.mark.pure_python
def test_a_follower_idle_on_a_partition_for_longer_than_the_lag_limit_stays_in_the_isr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, client = make_cluster()
    leader, follower = leader_and_follower(cluster, IDLE)
    leader_rm = cluster.broker(leader).replica_manager
    cluster.advance(LAG_MS)  # the follower's session has seen the idle partition idle
    reads = count_reads(monkeypatch, leader_rm.partitions[IDLE].log)
    for _ in range(4):  # the other partition is busy; IDLE gets nothing for 4 x the lag limit
        assert (
            client.produce(BUSY, [b"x"], acks=-1).result(ProduceResponse).responses[BUSY].error
            is Errors.NONE
        )
        cluster.advance(LAG_MS)
    assert reads == []  # the session's fetches skipped the idle partition, never read it
    assert leader_rm.isr(IDLE) == (leader, follower)
    # Data arrives; the follower's fetch waiting at the leader takes it, then the follower
    # stalls: the leader sees it behind, caught up last at its latest (skipped) fetch of the
    # idle partition, less than replica.lag.time.max.ms ago, so the ISR checks keep it.
    cluster.pause_fetchers(follower)
    assert (
        client.produce(IDLE, [b"a", b"b"], acks=1).result(ProduceResponse).responses[IDLE].error
        is Errors.NONE
    )
    assert reads  # the change made the partition worth reading again
    cluster.advance(LAG_MS * 3 // 4)
    assert leader_rm.partitions[IDLE].remote_replicas[follower].log_end_offset == 0
    assert leader_rm.isr(IDLE) == (leader, follower)
    cluster.resume_fetchers(follower)
    cluster.advance(500)  # the follower reports its position, then learns the high watermark
    assert leader_rm.high_watermark(IDLE) == 2
    assert cluster.broker(follower).replica_manager.high_watermark(IDLE) == 2
    assert leader_rm.isr(IDLE) == (leader, follower)


@pytest.mark.pure_python
def test_a_waiting_fetch_checks_an_idle_partition_only_when_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, client = make_cluster()
    leader, follower = leader_and_follower(cluster, IDLE)
    leader_rm = cluster.broker(leader).replica_manager
    cluster.advance(LAG_MS)
    checks: list[int] = []
    original = Partition.fetch_end_offset_metadata
    idle_partition = leader_rm.partitions[IDLE]

    def fetch_end_offset_metadata(self: Partition, *args: Any) -> Any:
        if self is idle_partition:
            checks.append(1)
        return original(self, *args)

    monkeypatch.setattr(Partition, "fetch_end_offset_metadata", fetch_end_offset_metadata)
    cluster.advance(2 * LAG_MS)  # the follower's fetches wait at the leader, one after another
    assert checks == []
    waiting = [op for op in leader_rm.fetch_purgatory.watchers(IDLE) if not op.is_completed]
    assert len(waiting) == 1  # but it is watched
    client.produce(IDLE, [b"a"], acks=1)  # completes the waiting fetch (min.bytes 1) at once
    assert checks
    assert cluster.broker(follower).replica_manager.log_end_offset(IDLE) == 1


def test_a_follower_that_stops_fetching_drops_out_of_an_idle_partitions_isr() -> None:
    cluster, client = make_cluster()
    leader, follower = leader_and_follower(cluster, IDLE)
    leader_rm = cluster.broker(leader).replica_manager
    cluster.advance(3 * LAG_MS)
    assert leader_rm.isr(IDLE) == (leader, follower)
    cluster.pause_fetchers(follower)
    cluster.advance(LAG_MS // 2)
    client.produce(IDLE, [b"a"], acks=1)  # the follower is behind from now on
    cluster.advance(LAG_MS)
    assert leader_rm.isr(IDLE) == (leader,)


@pytest.mark.parametrize("event", ["none", "pause_follower", "move_leader"])
def test_the_leaders_view_of_its_followers_is_the_same_with_and_without_sessions(
    event: str,
) -> None:
    """Without session slots every fetch is full and reads every partition: the skipped reads
    and the fetch state recorded for idle partitions (on the follower's replica the session's
    entry keeps, also across leadership moving away and back) must leave the leader's view of
    its followers (positions, fetch and caught-up times, ISR, high watermark) exactly as
    that."""
    views = []
    for slots in (0, 1000):
        cluster, client = make_cluster(slots)
        view = []
        for step in range(8):
            if step == 3 and event == "pause_follower":
                cluster.pause_fetchers(leader_and_follower(cluster, IDLE)[1])
            if step in (3, 5) and event == "move_leader":
                cluster.elect_leader(IDLE, leader_and_follower(cluster, IDLE)[1])
            if step % 3 == 0:
                client.produce(BUSY if step % 2 else IDLE, [b"v"] * (step + 1), acks=1)
            cluster.advance(LAG_MS // 3)
            for tp in (BUSY, IDLE):
                leader, follower = leader_and_follower(cluster, tp)
                partition = cluster.broker(leader).replica_manager.partitions[tp]
                replica = partition.remote_replicas[follower]
                view.append(
                    (
                        tp,
                        partition.isr,
                        partition.log.high_watermark,
                        replica.log_end_offset,
                        replica.last_fetch_time_ms,
                        replica.last_caught_up_time_ms,
                    )
                )
        views.append(view)
    assert views[0] == views[1]

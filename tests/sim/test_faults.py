"""Faults of a scenario, from the file to their effect on the running world."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

from replica.types import GROUP_METADATA_TOPIC_NAME, TopicPartition
from sim.runner import run_scenario
from sim.scenario import (
    BrokerFailure,
    ConsumerCrash,
    FollowerStall,
    ScenarioError,
    load_scenario,
)
from tests.sim.world_scenarios import LOCAL_TIME_US, ONE_WAY_US, built_world, small_scenario

EVENTS = [TopicPartition("events", p) for p in range(3)]  # events-p is led by broker p

FAULTS_FILE = """
[[topics]]
name = "events"
replication_factor = 3
[burrow]
topic = "events"
[[faults]]
type = "broker_failure"
broker = 1
at = "2s"
duration = "1s"
log = "lost"
[[faults]]
type = "follower_stall"
broker = 2
at = "3s"
[[faults]]
type = "consumer_crash"
at = "4s"
duration = "500ms"
"""


def test_fault_tables_load(tmp_path: Path) -> None:
    path = tmp_path / "faults.toml"
    path.write_text(FAULTS_FILE, encoding="utf-8")
    assert load_scenario(path).faults == [
        BrokerFailure(broker=1, at=2_000_000, duration=1_000_000, log="lost"),
        FollowerStall(broker=2, at=3_000_000),
        ConsumerCrash(consumer="burrow", at=4_000_000, duration=500_000),
    ]


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        (
            [{"type": "follower_stall", "broker": 3, "at": "1s"}],
            "faults[0].broker: no such broker: ids are 0..2, got 3",
        ),
        (
            [{"type": "consumer_crash", "consumer": "consumer-0", "at": "1s"}],
            "faults[0].consumer: no such consumer 'consumer-0' (consumers: burrow)",
        ),
        (
            [
                {"type": "broker_failure", "broker": 1, "at": "1s", "duration": "2s"},
                {"type": "broker_failure", "broker": 1, "at": "2s"},
            ],
            "faults[1].at: overlaps faults[0] (broker_failure of 1 from 1s): "
            "one broker_failure at a time per target",
        ),
        (
            [{"type": "broker_failure", "broker": 1, "at": "1s", "duration": 0}],
            "faults[0].duration: must be >= 1, got 0",
        ),
    ],
)
def test_bad_faults_are_refused_naming_the_field(faults: list[object], message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        small_scenario(faults=faults)
    assert str(caught.value) == f"scenario error: {message}"


def test_a_failed_broker_loses_its_leaderships_and_rejoins_the_isr() -> None:
    scenario = small_scenario(
        faults=[{"type": "broker_failure", "broker": 0, "at": "1s", "duration": "1s"}],
    )
    sim, world, _ = built_world(scenario)
    cluster = world.cluster
    sim.run_until(1_100_000)
    assert [cluster.leader(tp) for tp in EVENTS] == [1, 1, 2]  # the next replica in the ISR
    assert not world.network.is_up("broker-0")
    assert all(0 not in cluster.controller.partition_state(tp).isr for tp in EVENTS)
    sim.run_until(3_000_000)
    assert world.network.is_up("broker-0") and cluster.brokers[0].running
    assert all(0 in cluster.controller.partition_state(tp).isr for tp in EVENTS)
    offsets = TopicPartition(GROUP_METADATA_TOPIC_NAME, 0)
    assert cluster.brokers[0].replica_manager.log_end_offset(offsets) == (
        cluster.brokers[1].replica_manager.log_end_offset(offsets)
    )


def test_a_broker_that_lost_its_log_rebuilds_it_from_the_leaders() -> None:
    failure = {
        "type": "broker_failure",
        "broker": 2,
        "at": "1s",
        "duration": "500ms",
        "log": "lost",
    }
    sim, world, _ = built_world(small_scenario(faults=[failure]))
    before = world.cluster.brokers[2]
    sim.run_until(1_500_000)
    fresh = world.cluster.brokers[2]
    assert fresh is not before and fresh.running
    assert fresh.replica_manager.partitions == {}  # restarted with no logs at all
    sim.run_until(2_500_000)
    for tp in EVENTS:
        leader = world.cluster.brokers[world.cluster.leader(tp)].replica_manager
        assert fresh.replica_manager.log_end_offset(tp) == leader.log_end_offset(tp) > 100
        assert 2 in world.cluster.controller.partition_state(tp).isr


def test_a_stalled_follower_leaves_the_isr_and_comes_back() -> None:
    scenario = small_scenario(
        "cluster.replica_lag_time_max_ms=1000",
        faults=[{"type": "follower_stall", "broker": 2, "at": "500ms", "duration": "1500ms"}],
    )
    sim, world, _ = built_world(scenario)
    leader = world.cluster.brokers[0].replica_manager
    sim.run_until(1_400_000)  # stalled, but not for replica.lag.time.max.ms yet
    assert leader.isr(EVENTS[0]) == (0, 1, 2)
    sim.run_until(2_000_000)  # the ISR check (every 500 ms) dropped it
    assert leader.isr(EVENTS[0]) == (0, 1)
    sim.run_until(2_500_000)  # fetching again since 2 s: caught up, back in
    assert set(leader.isr(EVENTS[0]) or ()) == {0, 1, 2}


def test_a_latency_spike_slows_the_matching_links_only_during_its_window() -> None:
    spike = {"type": "latency_spike", "src": "producer-0", "dst": "broker-0",
             "at": "1s", "duration": "1s", "extra": "5ms"}  # fmt: skip
    run = run_scenario(small_scenario(faults=[spike]))
    requests = run.requests
    produce = requests.filter(pc.equal(requests.column("api"), "Produce"))
    base = 2 * ONE_WAY_US + LOCAL_TIME_US + (2 * ONE_WAY_US + LOCAL_TIME_US)  # acks=all
    by_broker: dict[tuple[int, bool], set[int]] = {}
    for row in produce.to_pylist():
        inside = 1_000_000 <= row["sent_us"] < 1_990_000
        outside = row["sent_us"] >= 2_100_000 or row["sent_us"] < 990_000
        if inside or outside:
            by_broker.setdefault((row["broker"], inside), set()).add(row["round_trip_us"])
    assert by_broker[(0, True)] == {base + 10_000}  # 5 ms more each way
    assert by_broker[(0, False)] == {base}
    assert by_broker[(1, True)] == by_broker[(1, False)] == {base}


def test_a_crashed_consumer_restarts_from_the_committed_offsets() -> None:
    crash = {"type": "consumer_crash", "consumer": "burrow", "at": "1200ms", "duration": "300ms"}
    sim, world, recorder = built_world(small_scenario("simulation.duration=3s", faults=[crash]))
    slot = world.consumers["burrow"]
    first = slot.instance
    sim.run_until(1_300_000)
    assert not slot.running and first.stopped
    committed = {tp: first.consumer.committed(tp) or 0 for tp in first.consumer.assignment}
    sim.run_until(3_000_000)
    assert slot.running and slot.restarts == 1 and slot.instance is not first
    messages, _, _ = recorder.tables()
    redelivered = messages.filter(pc.greater(messages.column("deliveries"), 1))
    assert redelivered.num_rows > 0
    # Only what the last commit before the crash did not cover is delivered again.
    for row in redelivered.to_pylist():
        tp = TopicPartition(row["topic"], row["partition"])
        assert row["offset"] >= committed.get(tp, 0)


def test_plain_consumers_run_and_crash_too() -> None:
    consumer = {"topics": ["events"], "group_id": "plain", "auto_offset_reset": "earliest",
                "auto_commit_interval_ms": 200}  # fmt: skip
    crash = {"type": "consumer_crash", "consumer": "consumer-0", "at": "1s", "duration": "200ms"}
    run = run_scenario(
        small_scenario("simulation.duration=2s", consumers=[consumer], burrow=None, faults=[crash])
    )
    messages = run.messages
    acked_before = pc.and_(
        pc.equal(messages.column("ack_error"), 0), pc.less(messages.column("sent_us"), 1_500_000)
    )
    assert pc.all(pc.is_valid(messages.column("delivered_us").filter(acked_before))).as_py()
    assert run.summary["messages"]["committed"] > 0


def test_consumers_back_off_from_a_dead_broker_and_follow_the_new_leaders() -> None:
    """A broken connection makes the consumer refresh its metadata and leave that broker
    alone for retry.backoff.ms, as Kafka's client does: it neither hammers the dead broker
    nor waits for it to come back."""
    failure = {"type": "broker_failure", "broker": 0, "at": "1s", "duration": "1s"}
    run = run_scenario(small_scenario(faults=[failure]))
    requests = run.requests
    to_dead = pc.and_(
        pc.equal(requests.column("broker"), 0),
        pc.and_(
            pc.greater_equal(requests.column("sent_us"), 1_000_000),
            pc.less(requests.column("sent_us"), 2_000_000),
        ),
    )
    assert pc.sum(to_dead).as_py() <= 3
    messages = run.messages
    during = pc.and_(
        pc.greater_equal(messages.column("sent_us"), 1_000_000),
        pc.less(messages.column("sent_us"), 2_000_000),
    )
    e2e = messages.column("end_to_end_latency_us").filter(during).drop_null()
    assert len(e2e) > 150 and pc.max(e2e).as_py() < 500_000  # not until broker 0 is back


def test_an_acks_0_producer_follows_a_leader_change() -> None:
    """Its connection breaking (the leader crashed, or a former leader closed it after
    refusing a produce) makes the acks=0 producer refresh its metadata: messages sent after
    the failover reach the new leaders instead of being lost for the rest of the run."""
    failure = {"type": "broker_failure", "broker": 0, "at": "1s"}
    run = run_scenario(
        small_scenario("producers[0].acks=0", "producers[0].rate=1000", faults=[failure])
    )
    messages = run.messages
    late = pc.greater_equal(messages.column("sent_us"), 1_500_000)
    late_delivered = pc.and_(late, pc.is_valid(messages.column("delivered_us")))
    assert pc.sum(late_delivered).as_py() >= pc.sum(late).as_py() - 20  # in flight at the end
    requests = run.requests
    producer_metadata = pc.and_(
        pc.equal(requests.column("api"), "Metadata"),
        pc.equal(requests.column("client"), "producer-0"),
    )
    assert pc.sum(producer_metadata).as_py() >= 2

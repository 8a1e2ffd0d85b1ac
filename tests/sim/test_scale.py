"""The scale scenario (``confluent-2020``) and what it needed: several producers woken at one
instant, consumers sharing a topic's partitions."""

from __future__ import annotations

import pyarrow.compute as pc

from sim.runner import run_scenario
from sim.scenario import load_scenario, with_overrides
from tests.sim.world_scenarios import small_scenario


def test_the_scale_scenario_has_the_benchmarks_shape() -> None:
    scenario = load_scenario("confluent-2020")
    assert scenario.cluster.brokers == 10
    assert scenario.cluster.broker.min_insync_replicas == 2
    [topic] = scenario.topics
    assert (topic.partitions, topic.replication_factor) == (100, 3)
    assert len(scenario.producers) == 4
    assert sum(p.workload.rate for p in scenario.producers) == 200_000
    assert {p.config.acks for p in scenario.producers} == {-1}
    assert {p.workload.message_size.mean for p in scenario.producers} == {1024}
    assert [(c.member, c.members) for c in scenario.consumers] == [(i, 4) for i in range(4)]
    assert scenario.burrow is None


def test_a_very_short_scale_run_delivers_each_message_once() -> None:
    scenario = with_overrides(
        load_scenario("confluent-2020"), ["simulation.duration=30ms", "simulation.warmup=10ms"]
    )
    messages = run_scenario(scenario).messages
    assert messages.num_rows > 3000  # 200 messages per simulated ms
    acked = pc.sum(pc.is_valid(messages.column("acked_us"))).as_py()
    delivered = pc.sum(pc.is_valid(messages.column("delivered_us"))).as_py()
    assert acked > messages.num_rows / 2
    assert delivered > acked / 2
    assert not pc.any(messages.column("duplicate")).as_py()  # each partition has one consumer


def test_producers_woken_at_the_same_instant_both_send() -> None:
    # Constant arrivals at one rate: both producers' wake-ups fall on the same instants. Each
    # wake-up makes way once for the other events of its instant; before, the two made way
    # for each other forever and the run never ended.
    producer = {"topic": "events", "rate": 500.0, "arrivals": "constant", "linger_ms": 0}
    run = run_scenario(small_scenario("simulation.duration=1s", producers=[producer, producer]))
    sent = run.messages.column("producer").to_pylist()
    assert sent.count("producer-0") == sent.count("producer-1") >= 400


def test_consumers_with_members_split_the_partitions() -> None:
    consumer = {"topics": ["events"], "members": 2, "auto_offset_reset": "earliest"}
    scenario = small_scenario(
        "simulation.duration=1s",
        burrow=None,
        consumers=[consumer, {**consumer, "member": 1}],
    )
    messages = run_scenario(scenario).messages
    delivered = messages.filter(pc.is_valid(messages.column("delivered_us")))
    assert delivered.num_rows > 100
    assert not pc.any(messages.column("duplicate")).as_py()
    assert set(delivered.column("partition").to_pylist()) == {0, 1, 2}

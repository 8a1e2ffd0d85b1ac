"""Consumer groups in the simulator: members join, split the partitions, heartbeat; a crashed
member is found by its session timeout, a closed one leaves; the survivors take over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

from replica.types import TopicPartition
from sim.clients import Consumer
from sim.clients.consumer_group import TRANSITIONS, MemberEvent, MemberState
from sim.clients.range_assignor import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from sim.runner import run_scenario
from sim.scenario import ScenarioError, load_scenario, subscribes
from sim.world.clients import ConsumerSlot
from tests.sim.world_scenarios import built_world, small_scenario

_MEMBER: dict[str, Any] = {
    "topics": ["events"],
    "group_id": "g",
    "auto_offset_reset": "earliest",
    "auto_commit_interval_ms": 200,
    "session_timeout_ms": 1500,
    "heartbeat_interval_ms": 300,
    "processing_time": {"distribution": "exponential", "mean": "200us"},
}
_GROUP = (
    "cluster.group_min_session_timeout_ms=1000",
    "cluster.group_initial_rebalance_delay_ms=200",
)
_ALL = {TopicPartition("events", p) for p in range(3)}


def _group_scenario(*overrides: str, faults: list[dict[str, Any]] | None = None) -> Any:
    return small_scenario(
        *_GROUP, *overrides, consumers=[_MEMBER] * 3, burrow=None, faults=faults or []
    )


def _consumer(slot: ConsumerSlot) -> Consumer:
    instance = slot.instance
    assert isinstance(instance, Consumer)
    return instance


def _assignments(world: Any) -> dict[str, set[TopicPartition]]:
    return {
        cid: set(_consumer(slot).assignment)
        for cid, slot in world.consumers.items()
        if slot.running
    }


def test_members_join_the_group_and_split_its_partitions() -> None:
    sim, world, recorder = built_world(_group_scenario())
    sim.run_until(1_000_000)
    members = [_consumer(slot).membership for slot in world.consumers.values()]
    assert all(m is not None and m.state is MemberState.STABLE for m in members)
    generations = {m.generation[0] for m in members if m is not None}
    assert len(generations) == 1 and generations.pop() >= 1
    assignments = _assignments(world)
    assert all(len(tps) == 1 for tps in assignments.values())
    assert set().union(*assignments.values()) == _ALL
    requests = recorder.tables()[1]
    assert {"JoinGroup", "SyncGroup", "Heartbeat"} <= set(requests.column("api").to_pylist())


def test_a_crashed_member_is_found_by_its_session_timeout_and_the_survivors_take_over() -> None:
    crash = {"type": "consumer_crash", "consumer": "consumer-2", "at": "1s"}
    scenario = _group_scenario("simulation.duration=4s", faults=[crash])
    sim, world, recorder = built_world(scenario)
    sim.run_until(1_000_000)
    crashed = _consumer(world.consumers["consumer-2"])
    (orphan,) = crashed.assignment
    generation = _consumer(world.consumers["consumer-0"]).membership.generation[0]  # type: ignore[union-attr]
    sim.run_until(2_400_000)  # within the session timeout: nobody has its partition
    assert orphan not in set().union(*_assignments(world).values())
    sim.run_until(4_000_000)
    survivors = _assignments(world)
    assert set(survivors) == {"consumer-0", "consumer-1"}
    assert set().union(*survivors.values()) == _ALL
    for cid in survivors:
        membership = _consumer(world.consumers[cid]).membership
        assert membership is not None and membership.state is MemberState.STABLE
        assert membership.generation[0] > generation and membership.rebalances == 1
    messages, _, _ = recorder.tables()
    # Everything sent after the warmup and acked in time is delivered, the orphan's too.
    sent = messages.column("sent_us")
    due = pc.and_(
        pc.equal(messages.column("ack_error"), 0),
        pc.and_(pc.greater_equal(sent, 500_000), pc.less(sent, 3_500_000)),
    )
    assert pc.all(pc.is_valid(messages.column("delivered_us").filter(due))).as_py()
    # Only the orphan's messages are delivered twice: those the crashed member had not
    # committed.
    again = messages.filter(pc.greater(messages.column("deliveries"), 1))
    assert again.num_rows > 0
    assert set(again.column("partition").to_pylist()) == {orphan.partition}


def test_a_closed_member_leaves_and_the_group_rebalances_at_once() -> None:
    sim, world, _ = built_world(_group_scenario("simulation.duration=2s"))
    sim.run_until(1_000_000)
    _consumer(world.consumers["consumer-1"]).close()
    sim.run_until(1_300_000)  # far less than the session timeout
    survivors = {cid: tps for cid, tps in _assignments(world).items() if cid != "consumer-1"}
    assert set().union(*survivors.values()) == _ALL


def test_a_restarted_member_rejoins_and_gets_partitions_back() -> None:
    crash = {"type": "consumer_crash", "consumer": "consumer-0", "at": "1s", "duration": "100ms"}
    sim, world, _ = built_world(_group_scenario("simulation.duration=5s", faults=[crash]))
    sim.run_until(5_000_000)
    assignments = _assignments(world)
    assert len(assignments) == 3 and all(len(tps) == 1 for tps in assignments.values())
    assert set().union(*assignments.values()) == _ALL


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    crash = {"type": "consumer_crash", "consumer": "consumer-2", "at": "1s"}
    outputs = []
    for name in ("a", "b"):
        run_scenario(_group_scenario("simulation.duration=3s", faults=[crash])).write(
            tmp_path / name, plots=False
        )
        outputs.append({p.name: p.read_bytes() for p in sorted((tmp_path / name).iterdir())})
    assert outputs[0] == outputs[1]


def test_a_lone_consumer_of_a_group_is_assigned_unless_membership_is_on() -> None:
    lone = small_scenario(consumers=[_MEMBER], burrow=None)
    sim, world, _ = built_world(lone)
    assert _consumer(world.consumers["consumer-0"]).membership is None
    member = small_scenario(*_GROUP, "consumers[0].group_membership=on", consumers=[_MEMBER])
    sim, world, _ = built_world(member)
    sim.run_until(1_000_000)
    membership = _consumer(world.consumers["consumer-0"]).membership
    assert membership is not None and membership.state is MemberState.STABLE
    assert set(_consumer(world.consumers["consumer-0"]).assignment) == _ALL


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ("consumers[0].heartbeat_interval_ms=2000",),
            "heartbeat_interval_ms (2000) must be less than session_timeout_ms (1500)",
        ),
        (
            ("cluster.group_min_session_timeout_ms=6000",),
            "consumers[0].session_timeout_ms: must be within "
            "cluster.group_min_session_timeout_ms (6000)",
        ),
        (("consumers[0].group_membership=maybe",), "consumers[0].group_membership"),
        (("cluster.group_initial_rebalance_delay_ms=-1",), "group_initial_rebalance_delay_ms"),
        (("consumers[0].members=2",), "consumers[0].members: a fixed share"),
    ],
)
def test_group_knobs_are_checked(overrides: tuple[str, ...], message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        small_scenario(*_GROUP[:1], *overrides, consumers=[_MEMBER] * 2, burrow=None)
    assert message in str(caught.value)


def test_a_group_has_only_members_or_only_assigned_consumers() -> None:
    member = {**_MEMBER, "group_id": "burrow"}
    with pytest.raises(ScenarioError, match=r"burrow\.consumer\.group_membership: group 'burrow'"):
        small_scenario(*_GROUP, "burrow.consumer.group_membership=off", consumers=[member])
    with pytest.raises(ScenarioError, match=r"burrow\.members: 2 Burrow consumers must join"):
        small_scenario(
            *_GROUP, "burrow.members=2", "burrow.consumer.group_membership=off", consumers=[]
        )
    # A consumer sharing Burrow's group makes both members.
    scenario = small_scenario(
        *_GROUP, "burrow.consumer.session_timeout_ms=20000", consumers=[member]
    )
    assert subscribes(scenario, scenario.consumers[0]) and subscribes(scenario, scenario.burrow)


_BURROW = (
    *_GROUP,
    "burrow.members=3",
    "burrow.consumer.heartbeat_interval_ms=300",
    "burrow.consumer.session_timeout_ms=1500",
    "burrow.commit_interval_ms=200",
)


@pytest.mark.parametrize("failures", [0.0, 0.05])
def test_burrow_members_share_the_group_and_survivors_take_over(failures: float) -> None:
    """Three Burrow consumers in one group; burrow-2 is killed. The survivors revoke (waiting
    for their work in flight and committing it), rejoin and consume everything; with failing
    attempts the pool runs every job as events, without them on the batch schedule."""
    crash = {"type": "consumer_crash", "consumer": "burrow-2", "at": "1s"}
    scenario = small_scenario(
        *_BURROW,
        f"burrow.failure_probability={failures}",
        "burrow.max_retries=10",
        "burrow.processing_time.mean=20ms",  # jobs in flight when the rebalance begins
        "simulation.duration=4s",
        consumers=[],
        faults=[crash],
    )
    sim, world, recorder = built_world(scenario)
    sim.run_until(1_000_000)
    assert set(world.consumers) == {"burrow", "burrow-1", "burrow-2"}
    first = {cid: set(slot.instance.consumer.assignment) for cid, slot in world.consumers.items()}
    assert all(len(tps) == 1 for tps in first.values()) and set().union(*first.values()) == _ALL
    (orphan,) = first["burrow-2"]
    sim.run_until(4_000_000)
    survivors = {
        cid: set(slot.instance.consumer.assignment)
        for cid, slot in world.consumers.items()
        if slot.running
    }
    assert set(survivors) == {"burrow", "burrow-1"}
    assert set().union(*survivors.values()) == _ALL
    for cid in survivors:
        membership = world.consumers[cid].instance.consumer.membership
        assert membership is not None and membership.rebalances == 1
    messages, _, _ = recorder.tables()
    sent = messages.column("sent_us")
    due = pc.and_(
        pc.equal(messages.column("ack_error"), 0),
        pc.and_(pc.greater_equal(sent, 500_000), pc.less(sent, 3_000_000)),
    )
    assert pc.all(pc.is_valid(messages.column("committed_us").filter(due))).as_py()
    again = messages.filter(pc.greater(messages.column("deliveries"), 1))
    assert set(again.column("partition").to_pylist()) <= {orphan.partition}


def test_membership_on_needs_a_group_id() -> None:
    with pytest.raises(ScenarioError, match="group_membership = 'on' needs a group_id"):
        small_scenario(consumers=[{"topics": ["events"], "group_membership": "on"}], burrow=None)


def test_range_assignment_splits_each_topic_in_ranges_by_member_id() -> None:
    counts = {"a": 7, "b": 2}
    assigned = range_assign(
        {"m2": ["a"], "m1": ["a", "b"], "m3": ["a", "b"]}, lambda topic: counts.get(topic)
    )
    a = [[tp.partition for tp in assigned[m] if tp.topic == "a"] for m in ("m1", "m2", "m3")]
    b = [[tp.partition for tp in assigned[m] if tp.topic == "b"] for m in ("m1", "m2", "m3")]
    assert a == [[0, 1, 2], [3, 4], [5, 6]]
    assert b == [[0], [], [1]]
    assert decode_assignment(encode_assignment(assigned["m3"])) == tuple(assigned["m3"])
    assert decode_subscription(encode_subscription(["b", "a", "b"])) == ["a", "b"]
    assert decode_assignment(b"") == ()


def test_the_bundled_rebalance_scenario_loads() -> None:
    scenario = load_scenario("rebalance")
    assert len(scenario.consumers) == 3
    assert {c.group_id for c in scenario.consumers} == {"app"}


def test_the_member_state_table() -> None:
    s, e = MemberState, MemberEvent
    assert dict(TRANSITIONS) == {
        (s.UNJOINED, e.JOIN): s.PREPARING_REBALANCE,
        (s.PREPARING_REBALANCE, e.JOINED): s.COMPLETING_REBALANCE,
        (s.COMPLETING_REBALANCE, e.SYNCED): s.STABLE,
        (s.PREPARING_REBALANCE, e.RESET): s.UNJOINED,
        (s.COMPLETING_REBALANCE, e.RESET): s.UNJOINED,
        (s.STABLE, e.RESET): s.UNJOINED,
    }

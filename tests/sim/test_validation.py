"""The simulator against what its answers must agree with (../shared/reference/validation.md).

Every run here is the real broker code (apis/replica/coordinator through the cluster) on the
simulated network, with small scenarios (tests/sim/world_scenarios.py): constant 1 ms one-way
latencies and 100 us of handler time, so the broker laws can be checked to the microsecond.
"""

from __future__ import annotations

import filecmp
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from coordinator.hashing import partition_for_group
from replica.errors import Errors
from replica.types import GROUP_METADATA_TOPIC_NAME, TopicPartition
from sim.core.engine import Simulator
from sim.output import MetricsRecorder, RunResult
from sim.runner import build_cluster, run_scenario
from sim.scenario import Scenario
from sim.world import World
from tests.sim.world_scenarios import LOCAL_TIME_US, ONE_WAY_US, small_scenario

FOLLOWER_ROUND_TRIP_US = 2 * ONE_WAY_US + LOCAL_TIME_US
"""A fetch response to the follower, its next fetch back to the leader, the leader's handling."""


def _column(table: pa.Table, name: str, mask: Any = None) -> np.ndarray[Any, Any]:
    column = table.column(name) if mask is None else table.column(name).filter(mask)
    return np.asarray(column.drop_null().to_numpy(zero_copy_only=False), dtype=np.int64)


def _requests(result: RunResult, api: str) -> pa.Table:
    return result.requests.filter(pc.equal(result.requests.column("api"), api))


def _ids(table: pa.Table, mask: Any) -> set[int]:
    return set(table.column("message_id").filter(mask).to_pylist())


def _run_with_world(scenario: Scenario) -> tuple[RunResult, World]:
    worlds: list[World] = []

    def build(sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> World:
        worlds.append(build_cluster(sim, scenario, recorder))
        return worlds[-1]

    return run_scenario(scenario, build=build), worlds[0]


# -- acks=all vs acks=1 --------------------------------------------------------------------------


def test_acks_all_costs_one_follower_fetch_round_trip_not_the_fetch_wait() -> None:
    """Followers wait in the leader's fetch purgatory (replica.fetch.wait.max.ms = 500): an
    append completes their fetch at once, their next fetch carries the new offset, the HW
    moves. So acks=all adds a follower round trip (2 x 1 ms + 100 us), not 500 ms."""
    wait = "cluster.replica_fetch_wait_max_ms=500"
    all_acks = run_scenario(small_scenario(wait, "producers[0].acks=-1"))
    one_ack = run_scenario(small_scenario(wait, "producers[0].acks=1"))
    # Per request: exactly one follower round trip, spent in the produce purgatory.
    produce_all = _requests(all_acks, "Produce")
    produce_one = _requests(one_ack, "Produce")
    assert np.median(_column(produce_all, "round_trip_us")) == (
        np.median(_column(produce_one, "round_trip_us")) + FOLLOWER_ROUND_TRIP_US
    )
    assert set(_column(produce_all, "produce_purgatory_us")) == {FOLLOWER_ROUND_TRIP_US}
    assert produce_one.column("produce_purgatory_us").null_count == produce_one.num_rows
    # Per message: a few ms more, nowhere near the 500 ms fetch wait.
    gap = (
        all_acks.summary["latency"]["produce"]["p50_ms"]
        - (one_ack.summary["latency"]["produce"]["p50_ms"])
    )
    assert FOLLOWER_ROUND_TRIP_US / 1000 * 0.5 < gap < 10


def test_with_realistic_latencies_acks_all_is_still_far_below_the_fetch_wait() -> None:
    lognormal = {"distribution": "lognormal", "median": "250us", "sigma": 0.3}
    network = {"client_broker": lognormal, "broker_broker": lognormal}
    results = {
        acks: run_scenario(small_scenario(f"producers[0].acks={acks}", network=network))
        for acks in (-1, 1)
    }
    p50 = {acks: r.summary["latency"]["produce"]["p50_ms"] for acks, r in results.items()}
    assert 0 < p50[-1] - p50[1] < 5  # replica.fetch.wait.max.ms is 500


def test_fetch_min_bytes_above_a_batch_pushes_acks_all_toward_the_fetch_wait() -> None:
    """With replica.fetch.min.bytes (1 MiB) above what arrives during a fetch wait at low
    throughput (20 messages/s of 1 KiB), a follower fetch only returns when it expires, and
    acks=all waits for it: its latency climbs to replica.fetch.wait.max.ms (500 ms)."""
    round_trips = {}
    for min_bytes in ("1B", "1MiB"):
        result = run_scenario(
            small_scenario(
                f"cluster.replica_fetch_min_bytes={min_bytes}",
                "cluster.replica_fetch_wait_max_ms=500",
                "producers[0].rate=20",
                "simulation.duration=6s",
            )
        )
        round_trips[min_bytes] = _column(_requests(result, "Produce"), "round_trip_us")
    assert np.median(round_trips["1B"]) == 2 * ONE_WAY_US + LOCAL_TIME_US + FOLLOWER_ROUND_TRIP_US
    waiting = round_trips["1MiB"]
    assert waiting.size >= 20
    assert np.median(waiting) > 400_000
    # Bounded by one full fetch wait plus the follower round trip and the produce's own trip.
    assert waiting.max() <= 500_000 + FOLLOWER_ROUND_TRIP_US + 2 * ONE_WAY_US + LOCAL_TIME_US


def test_end_to_end_latency_does_not_improve_with_acks_1() -> None:
    """Consumers only read below the HW, which moves when followers fetch, whatever acks."""
    results = {acks: run_scenario(small_scenario(f"producers[0].acks={acks}")) for acks in (-1, 1)}
    e2e = {acks: r.summary["latency"]["end_to_end"]["p50_ms"] for acks, r in results.items()}
    produce = {acks: r.summary["latency"]["produce"]["p50_ms"] for acks, r in results.items()}
    assert e2e[1] >= e2e[-1] - 0.001
    assert produce[1] < produce[-1]
    # With acks=1 the consumer sees a message a follower round trip after its ack.
    assert e2e[1] - produce[1] >= FOLLOWER_ROUND_TRIP_US / 1000 * 0.5


# -- commits and at-least-once ----------------------------------------------------------------


def test_nothing_is_committed_before_it_is_processed() -> None:
    result = run_scenario(small_scenario())
    messages = result.messages
    committed = pc.is_valid(messages.column("committed_us"))
    assert pc.sum(committed).as_py() > 300
    latency = _column(messages, "commit_latency_us")
    assert latency.size == pc.sum(committed).as_py() and latency.min() >= 0
    processed = _column(messages, "processed_us", committed)
    assert (_column(messages, "committed_us", committed) >= processed).all()
    assert result.summary["latency"]["commit"]["p50_ms"] > 0


def _crashes(rng: random.Random, count: int, start_us: int, end_us: int) -> list[dict[str, Any]]:
    """``count`` Burrow crashes at random, non-overlapping times, each down 50-300 ms."""
    slot = (end_us - start_us) // count
    faults = []
    for i in range(count):
        at = start_us + i * slot + rng.randrange(slot // 2)
        faults.append(
            {"type": "consumer_crash", "consumer": "burrow", "at": at,
             "duration": rng.randrange(50_000, 300_000)}
        )  # fmt: skip
    return faults


@pytest.mark.parametrize("seed", [1, 2])
def test_at_least_once_under_random_consumer_crashes(seed: int) -> None:
    """Every produced (acknowledged) message is processed at least once across Burrow
    crashes; redeliveries are counted as duplicates."""
    scenario = small_scenario(
        "producers[0].message_count=700",
        "simulation.duration=6s",
        ("simulation.seed", seed),
        faults=_crashes(random.Random(seed), 5, 500_000, 4_000_000),
    )
    result, world = _run_with_world(scenario)
    messages = result.messages
    acked = _ids(messages, pc.equal(messages.column("ack_error"), 0))
    processed = _ids(messages, pc.is_valid(messages.column("processed_us")))
    assert len(acked) == 700
    assert acked <= processed
    duplicates = pc.sum(pc.greater(messages.column("deliveries"), 1)).as_py()
    assert result.summary["messages"]["duplicates"] == duplicates > 0
    assert world.consumers["burrow"].restarts == 5


def test_acks_all_data_survives_a_leader_failure() -> None:
    """min.insync.replicas = 2: a leader crash loses nothing that was acknowledged, whether
    the broker comes back with its log or without it."""
    for log in ("kept", "lost"):
        failure = {"type": "broker_failure", "broker": 0, "at": "1s", "duration": "1500ms",
                   "log": log}  # fmt: skip
        scenario = small_scenario(
            "producers[0].message_count=600", "simulation.duration=6s", faults=[failure]
        )
        result, world = _run_with_world(scenario)
        messages = result.messages
        acked = _ids(messages, pc.equal(messages.column("ack_error"), 0))
        delivered = _ids(messages, pc.is_valid(messages.column("delivered_us")))
        assert len(acked) == 600, log
        assert acked <= delivered, log
        # The crash hit: produces were retried (Retry.Backoff is 100 ms).
        assert result.summary["latency"]["produce"]["max_ms"] > 100, log
        # Broker 0 re-replicated everything: its logs end where the leaders' do.
        for tp in world.cluster.controller.partitions():
            leader = world.cluster.brokers[world.cluster.leader(tp)].replica_manager
            follower = world.cluster.brokers[0].replica_manager
            assert follower.log_end_offset(tp) == leader.log_end_offset(tp), (log, tp)


def test_with_the_isr_shrunk_to_one_acks_all_fails_and_commits_fail() -> None:
    """min.insync.replicas = 2: once the followers of the coordinator's partitions stall long
    enough to leave the ISR, the high watermark of those partitions stops (KIP-966, Kafka
    3.7+): the acks=all produces and offset commits waiting there time out
    (REQUEST_TIMED_OUT), and later ones are refused before appending: produces get
    NOT_ENOUGH_REPLICAS, commits COORDINATOR_NOT_AVAILABLE. Short produce and commit timeouts
    let the waiting ones time out within the run."""
    coordinator = partition_for_group("burrow", 3)  # partition p is led by broker p
    stalls = [
        {"type": "follower_stall", "broker": broker, "at": "1s"}
        for broker in range(3)
        if broker != coordinator
    ]
    scenario = small_scenario(
        "cluster.replica_lag_time_max_ms=1000",
        "simulation.duration=5s",
        "producers[0].message_count=800",
        "producers[0].ack_timeout_ms=500ms",
        "offsets.offsets_commit_timeout_ms=500ms",
        faults=stalls,
    )
    result, world = _run_with_world(scenario)
    produce = _requests(result, "Produce")
    produce_errors = set(produce.column("error").to_pylist())
    assert int(Errors.REQUEST_TIMED_OUT) in produce_errors
    assert int(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND) not in produce_errors
    assert int(Errors.NOT_ENOUGH_REPLICAS) in produce_errors
    messages = result.messages
    failed = messages.filter(
        pc.equal(messages.column("ack_error"), int(Errors.NOT_ENOUGH_REPLICAS))
    )
    assert failed.num_rows > 0
    assert set(failed.column("partition").to_pylist()) == {coordinator}
    commit_errors = set(_requests(result, "OffsetCommit").column("error").to_pylist())
    assert int(Errors.REQUEST_TIMED_OUT) in commit_errors
    assert int(Errors.COORDINATOR_NOT_AVAILABLE) in commit_errors
    offsets_partition = TopicPartition(GROUP_METADATA_TOPIC_NAME, coordinator)
    assert world.cluster.brokers[coordinator].replica_manager.isr(offsets_partition) == (
        coordinator,
    )


# -- determinism ----------------------------------------------------------------------------------


def test_same_seed_gives_a_byte_identical_run_directory(tmp_path: Path) -> None:
    scenario = small_scenario(
        "simulation.duration=2s",
        faults=[{"type": "broker_failure", "broker": 1, "at": "800ms", "duration": "500ms"}],
    )
    first = run_scenario(scenario).write(tmp_path / "a", plots=False)
    second = run_scenario(scenario).write(tmp_path / "b", plots=False)
    assert [p.name for p in first] == [p.name for p in second]
    for a, b in zip(first, second, strict=True):
        assert filecmp.cmp(a, b, shallow=False), a.name
    other = run_scenario(scenario, seed=8).write(tmp_path / "c", plots=False)
    assert not filecmp.cmp(first[0], other[0], shallow=False)

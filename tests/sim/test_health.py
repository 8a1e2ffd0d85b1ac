"""Metrics that cannot hide a saturated system: send-to-commit latency, what never finished,
and the warnings of the run summary (fell behind, empty statistics, faults matching nothing)."""

from __future__ import annotations

import functools
import random
from typing import Any

import pyarrow as pa
import pytest

from sim.output import RunResult, health
from sim.output.health import empty_latency_warnings, fell_behind_warnings
from sim.output.recorder import TIMESERIES_SCHEMA
from sim.runner import run_scenario
from sim.scenario import load_scenario
from sim.sweep.simulate import point_scenario, scenario_table
from sim.sweep.study import load_study
from tests.sim.world_scenarios import built_world, small_scenario


@functools.cache
def _pool(workers: int) -> RunResult:
    """2,000 msg/s into a Burrow pool of ``workers`` workers taking 1.2 ms per message
    (exponential), committing every 200 ms: 2 workers are at rho 1.2, 4 at rho 0.6."""
    return run_scenario(
        small_scenario(
            "producers[0].rate=2000",
            f"burrow.num_workers={workers}",
            "burrow.processing_time.mean=1200us",
            "burrow.commit_interval_ms=200",
            "simulation.duration=4s",
            "simulation.warmup=1s",
        )
    )


def test_an_overloaded_pool_cannot_hide_behind_its_processing_to_commit_latency() -> None:
    overloaded, healthy = _pool(2).summary, _pool(4).summary
    # Processing to commit: the same for both (what the issue reported) ...
    commit = overloaded["latency"]["commit"]["p99_ms"], healthy["latency"]["commit"]["p99_ms"]
    assert commit[0] == pytest.approx(commit[1], rel=0.05)
    # ... but not send to commit, nor what never got committed.
    send_to_commit = overloaded["latency"]["send_to_commit"]["p99_ms"]
    assert send_to_commit > 3 * overloaded["latency"]["commit"]["p99_ms"]
    assert send_to_commit > 3 * healthy["latency"]["send_to_commit"]["p99_ms"]
    unfinished = overloaded["unfinished"]
    assert unfinished["never_processed"] > 0.15 * unfinished["sent_after_warmup"]
    assert unfinished["never_committed"] > 2 * healthy["unfinished"]["never_committed"]
    [warning] = overloaded["warnings"]
    assert warning.startswith("consumer burrow fell behind: its group lag")
    assert f"warning: {warning}" in _pool(2).format_table()
    assert healthy["warnings"] == []
    assert "warning" not in _pool(4).format_table()


def test_an_empty_commit_latency_says_why() -> None:
    result = run_scenario(
        load_scenario(
            "default",
            ["simulation.duration=2s", "simulation.warmup=500ms", "producers[0].rate=1000"],
        )
    )
    sent = result.summary["unfinished"]["sent_after_warmup"]
    empty, lag = result.summary["warnings"]
    assert empty == (
        f"commit and send_to_commit latency are empty: none of the {sent} messages sent after "
        "the warmup was committed: the duration must exceed the warmup plus the consumers' "
        "commit interval (burrow.commit_interval_ms, auto_commit_interval_ms)"
    )
    # Burrow commits every 5 s: its lag only grows in these 2 s, which is not falling behind.
    assert lag.startswith("consumer burrow committed nothing after the warmup: its group lag")
    assert lag.endswith("it stopped, or it commits less often than the run can show")


def _latency(**counts: int) -> dict[str, dict[str, Any]]:
    return {name: {"count": counts.get(name, 1)} for name in
            ("produce", "end_to_end", "commit", "send_to_commit")}  # fmt: skip


def _unfinished(
    sent: int, acked: int, delivered: int, processed: int, committed: int
) -> dict[str, int]:
    return {
        "sent_after_warmup": sent,
        "never_acked": sent - acked,
        "never_delivered": sent - delivered,
        "never_processed": sent - processed,
        "never_committed": sent - committed,
    }


def test_empty_latency_warnings_name_the_first_stage_nothing_reached() -> None:
    assert empty_latency_warnings(_latency(), _unfinished(10, 10, 10, 10, 10)) == []
    assert empty_latency_warnings(
        _latency(produce=0, end_to_end=0, commit=0, send_to_commit=0), _unfinished(0, 0, 0, 0, 0)
    ) == [
        "produce, end_to_end, commit and send_to_commit latency are empty: no message was sent "
        "after the warmup"
    ]
    [delivered] = empty_latency_warnings(
        _latency(end_to_end=0, commit=0, send_to_commit=0), _unfinished(10, 10, 0, 0, 0)
    )
    assert delivered.startswith(
        "end_to_end, commit and send_to_commit latency are empty: "
        "none of the 10 messages sent after the warmup was delivered"
    )
    [processed] = empty_latency_warnings(
        _latency(commit=0, send_to_commit=0), _unfinished(10, 10, 10, 0, 0)
    )
    assert "was processed: the consumers finished processing none of them" in processed
    [acked] = empty_latency_warnings(_latency(produce=0), _unfinished(10, 0, 0, 0, 0))
    assert acked.startswith("produce latency is empty: none of the 10 messages sent after the "
                            "warmup was acknowledged")  # fmt: skip


def _samples(rows: list[tuple[int, str, str, float]]) -> pa.Table:
    columns = list(zip(*rows, strict=True))
    return pa.Table.from_arrays([pa.array(c) for c in columns], schema=TIMESERIES_SCHEMA)


def test_fell_behind_compares_whole_teeth_of_the_commit_saw_tooth() -> None:
    times = list(range(0, 10_000_001, 100_000))  # 10 s, warmup 2 s: quarters of 2 s
    # A commit every second draws a saw-tooth from 0 to 1,000 on each of two partitions, each
    # receiving 1,000 messages a second: the windows' means agree, so a consumer that keeps up
    # is not flagged.
    tooth = [float(t % 1_000_000 // 1000) for t in times]
    steady = [(t, f"burrow:events-{p}", "group_lag", v) for p in (0, 1)
              for t, v in zip(times, tooth, strict=True)]  # fmt: skip
    arrivals = {"events-0": 1000.0, "events-1": 1000.0, "producer-0": 2000.0}
    assert fell_behind_warnings(_samples(steady), 2_000_000, 10_000_000, arrivals) == []

    # Falling 50 messages per second further behind on one partition (2.5% of the arrivals)
    # is not falling behind; 400 per second (20%) is.
    def falling(per_second: int) -> pa.Table:
        return _samples([
            (t, s, m, v + (t * per_second / 1e6 if s.endswith("-1") else 0.0))
            for t, s, m, v in steady
        ])  # fmt: skip

    assert fell_behind_warnings(falling(50), 2_000_000, 10_000_000, arrivals) == []
    [warning] = fell_behind_warnings(falling(400), 2_000_000, 10_000_000, arrivals)
    assert warning == (
        "consumer burrow fell behind: its group lag (log end offset - committed offset, all "
        "partitions) averaged 2080 messages early after the warmup and 4520 at the end: it grew "
        "by 400 a second, 20% of the 2,000 a second sent to its partitions (> 5%): it is not "
        "keeping up, and its latencies only cover the messages that got through"
    )
    growing = falling(400).to_pylist()
    # Quarters that cut the teeth would flag a healthy run: 20 s, warmup 5 s, a commit every
    # 5 s at 10,000 messages a second (quarters of 3.75 s average 18,500 and 30,184); windows
    # of one whole tooth agree.
    long_times = range(0, 20_000_001, 100_000)
    healthy = [(t, "burrow:events-0", "group_lag", float(t % 5_000_000 // 100)) for t in long_times]
    assert fell_behind_warnings(_samples(healthy), 5_000_000, 20_000_000, {"events-0": 1e4}) == []
    # A lag that cannot be known (NaN) is left out; a backlog near zero is not flagged.
    unknown = [
        (r["time_us"], r["source"], r["metric"], float("nan") if r["time_us"] > 9e6 else r["value"])
        for r in growing
    ]
    assert len(fell_behind_warnings(_samples(unknown), 2_000_000, 10_000_000, arrivals)) == 1
    small = [(t, "producer-0", "producer_backlog", t / 1e6) for t in times]  # 2 -> 9 messages
    assert fell_behind_warnings(_samples(small), 2_000_000, 10_000_000, {}) == []
    backlog = [(t, "producer-0", "producer_backlog", float(t) / 5000) for t in times]
    [warning] = fell_behind_warnings(_samples(backlog), 2_000_000, 10_000_000, arrivals)
    assert warning.startswith("producer producer-0 fell behind: its backlog")
    assert "grew by 200 a second, 10% of the 2,000 a second it sent (> 5%)" in warning
    assert fell_behind_warnings(_samples(backlog), 2_000_000, 2_100_000, arrivals) == []


def test_fell_behind_sees_growth_on_a_lag_that_piled_up_during_the_warmup() -> None:
    # The default study's pool at rho 1.16, committing every 50 ms, sampled every 100 ms: its
    # lag grows ~1,300 messages a second from the start (13% of the 10,000 a second that
    # arrive) and drops only where a commit lands between two samples. What piled up in the
    # 1 s warmup is half the lag at the end: the windows used to be cut at those irregular
    # drops, side by side mid-run, and compared with that level they missed the growth.
    noise = random.Random(1)
    times = list(range(0, 3_000_001, 100_000))
    growing = [(t, "burrow:events-0", "group_lag", 1.3 * t / 1000 + noise.uniform(-150, 150))
               for t in times]  # fmt: skip
    arrivals = {"events-0": 10_000.0}
    [warning] = fell_behind_warnings(_samples(growing), 1_000_000, 3_000_000, arrivals)
    assert warning.startswith("consumer burrow fell behind")
    steady = [(t, s, m, v - 1.3 * t / 1000 + 2000) for t, s, m, v in growing]
    assert fell_behind_warnings(_samples(steady), 1_000_000, 3_000_000, arrivals) == []


def _default_study_point(workers: int, seed: int) -> dict[str, Any]:
    """The summary of one run of the bundled default study (``sim/studies/default.toml``),
    built as the sweep builds it."""
    study = load_study("default")
    overrides = {**study.fixed, "burrow.num_workers": workers, "simulation.seed": seed}
    table = scenario_table(study.scenario_path)
    return run_scenario(point_scenario(table, overrides, study.duration_s)).summary


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_default_study_warns_where_the_pool_is_saturated(seed: int) -> None:
    overloaded = _default_study_point(8, seed)  # rho 1.16: a fifth never committed
    unfinished = overloaded["unfinished"]
    assert unfinished["never_committed"] > 0.15 * unfinished["sent_after_warmup"]
    assert [w for w in overloaded["warnings"] if w.startswith("consumer burrow fell behind")]
    assert _default_study_point(12, seed)["warnings"] == []  # rho 0.77


@pytest.mark.parametrize(
    ("overrides", "faults", "warning"),
    [
        ((), [{"type": "latency_spike", "at": "1s", "duration": "1s", "extra": 0}],
         "faults[0] (latency_spike) adds 0 latency: it changes nothing"),
        ((), [{"type": "broker_failure", "broker": 1, "at": "3s"}],
         "faults[0] (broker_failure) starts at 3s, when the run has ended (3s): it never "
         "happens"),
        (("topics[0].replication_factor=1", "offsets.offsets_topic_replication_factor=1"),
         [{"type": "follower_stall", "broker": 2, "at": "1s"}],
         "faults[0] (follower_stall) stalls broker 2, which follows no partition: it changes "
         "nothing"),
    ],
)  # fmt: skip
def test_a_fault_that_changes_nothing_is_a_warning(
    overrides: tuple[str, ...], faults: list[dict[str, Any]], warning: str
) -> None:
    _, _, recorder = built_world(small_scenario(*overrides, faults=faults))
    assert recorder.warnings == [warning]


def test_faults_that_match_something_give_no_warning() -> None:
    faults = [
        {"type": "latency_spike", "at": "1s", "duration": "1s", "extra": "5ms",
         "src": "broker-2", "dst": "broker-*", "bidirectional": False},
        {"type": "latency_spike", "at": "1s", "duration": "1s", "extra": "5ms",
         "src": "burrow", "dst": "broker-0"},
        {"type": "follower_stall", "broker": 2, "at": "1s"},
        {"type": "broker_failure", "broker": 1, "at": "2999ms"},
    ]  # fmt: skip
    _, _, recorder = built_world(small_scenario(faults=faults))
    assert recorder.warnings == []


def test_the_fault_warnings_come_first_in_the_summary() -> None:
    spike = {"type": "latency_spike", "at": "500ms", "duration": "1s", "extra": 0}
    result = run_scenario(
        small_scenario("simulation.duration=1s", "simulation.warmup=0s", faults=[spike])
    )
    assert result.summary["warnings"] == [
        "faults[0] (latency_spike) adds 0 latency: it changes nothing"
    ]
    assert result.format_table().endswith(
        "\nwarning: faults[0] (latency_spike) adds 0 latency: it changes nothing"
    )


@pytest.mark.parametrize("slice_rows", [3, 1 << 20])
def test_arrival_rates_count_per_producer_and_partition(
    slice_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health, "_SLICE_ROWS", slice_rows)  # ten rows in one or four slices
    messages = pa.table({
        "producer": ["p0", "p1", "p0", "p0", "p1", "p0", "p0", "p1", "p0", "p0"],
        "topic": ["t"] * 9 + ["u"],
        "partition": pa.array([0, 1, 0, None, 1, 0, 1, 1, 0, 0], pa.int32()),
        "sent_us": [0, 500_000, 1_000_000, 1_200_000, 1_500_000, 2_000_000, 2_500_000,
                    2_900_000, 3_000_000, 3_100_000],
    })  # fmt: skip
    # [1 s, 3 s]: p0 sent 5 (one not yet partitioned), p1 2; t-0 got 3, t-1 3, u-0 (after
    # the window) none.
    assert health.arrival_rates(messages, 1_000_000, 3_000_000) == {
        "p0": 2.5, "p1": 1.0, "t-0": 1.5, "t-1": 1.5,
    }  # fmt: skip

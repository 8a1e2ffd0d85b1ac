"""The sweep benchmark's arithmetic and report (the timing itself runs as a benchmark)."""

from __future__ import annotations

import json
import math

import pytest

# These tests start no Spark, but sim.sweep.bench imports pyspark when it is imported.
pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

from sim.sweep.bench import (
    TARGET_SPEEDUP,
    BenchResult,
    FixedCost,
    MasterTiming,
    format_fixed_cost,
    format_result,
    one_point,
    parallel_capacity,
)
from sim.sweep.grid import expand_tasks
from sim.sweep.study import load_study


def result() -> BenchResult:
    return BenchResult(
        study="bench",
        runner="tests.sim.sweep.fake_world:run_point",
        runs=16,
        duration_s=5.0,
        direct_run_s=1.5,
        timings=(
            MasterTiming("local[2]", 1.9, 4.0, 1.5, 25.0, 30.0),
            MasterTiming("local[1]", 1.8, 2.0, 0.5, 36.0, 30.0),
            MasterTiming("local[1]", 1.7, 0.5, 0.5, 40.0, 30.0),
            MasterTiming("local[2]", 2.0, 0.5, 1.0, 20.0, 30.0),
        ),
    )


def test_speedup_and_overhead_use_the_fastest_trial_of_each_master() -> None:
    bench = result()
    assert bench.speedup == 36.0 / 20.0
    assert bench.overhead_s == 4.0 + 1.0  # the cold first session start + the fastest empty job
    document = json.loads(json.dumps(bench.as_dict()))
    assert document["speedup"] == 1.8 and document["overhead_s"] == 5.0
    assert document["meets_target"] is (TARGET_SPEEDUP <= 1.8)
    assert document["repeat"] == 2
    assert document["parallel_capacity"] == 1.7
    assert [t["master"] for t in document["timings"]] == [
        "local[2]", "local[1]", "local[1]", "local[2]"
    ]  # fmt: skip


def test_the_text_report_flags_a_stand_in_run_function() -> None:
    text = format_result(result(), real_simulator=False)
    assert "NOT the simulator" in text
    assert "speedup local[2] vs local[1] (fastest trials): 1.80x (meets the 1.6x target)" in text
    assert "NOT the simulator" not in format_result(result(), real_simulator=True)


def test_parallel_capacity_times_both_sides_and_returns_their_ratio() -> None:
    # Only that the two-process pool ran and a finite ratio came back: its value is a timing,
    # which a test must not bound (a busy CI machine can push it anywhere).
    capacity = parallel_capacity(50_000, trials=1)
    assert math.isfinite(capacity) and capacity > 0


def test_the_fixed_cost_is_a_one_run_sweep_minus_the_run_alone() -> None:
    study = load_study("default")
    single = one_point(study)
    assert [k.values for k in single.grid] == [(8,), ("global",)] and single.seeds == (1,)
    assert len(expand_tasks(single)) == 1
    cost = FixedCost("default", 2.0, 4.0, 3.0, 1.5, 1.0, 0.5, 0.5)
    assert cost.sweep_s == 9.0 and cost.fixed_s == 7.0
    assert cost.as_dict()["sweep_over_direct"] == 4.5
    assert "fixed cost of a sweep: 7.00 s (4.5x the run alone)" in format_fixed_cost(cost)

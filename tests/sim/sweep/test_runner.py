"""Run functions: naming one, checking what it returns, and the simulate path (no Spark)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sim.output import MESSAGES_SCHEMA, REQUESTS_SCHEMA
from sim.scenario import resolve_source
from sim.sweep import simulate
from sim.sweep.errors import RunnerError
from sim.sweep.runner import DEFAULT_RUNNER, check_tables, load_runner
from sim.sweep.simulate import flatten_summary, point_scenario, scenario_table
from tests.sim.sweep import fake_world

OVERRIDES = {"producers.rate": 500.0, "simulation.warmup": "100ms", "burrow.num_workers": 2}


def test_the_default_runner_is_the_real_simulate_path() -> None:
    assert load_runner(DEFAULT_RUNNER) is simulate.run_point


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("no_colon", "expected MODULE:FUNCTION"),
        (":run_point", "expected MODULE:FUNCTION"),
        ("sim.no_such_module:f", "cannot import sim.no_such_module"),
        ("sim.sweep.simulate:nothing", "has no function 'nothing'"),
        ("sim.sweep.simulate:DURATION_KNOB", "has no function 'DURATION_KNOB'"),
    ],
)
def test_bad_runner_names(spec: str, expected: str) -> None:
    with pytest.raises(RunnerError, match=expected):
        load_runner(spec)


def test_check_tables() -> None:
    good = {
        "messages": MESSAGES_SCHEMA.empty_table(),
        "requests": REQUESTS_SCHEMA.empty_table(),
        "run_summary": pa.table({"run_warmup_us": [0], "run_duration_us": [1]}),
    }
    assert check_tables(good, "here") == good
    with pytest.raises(RunnerError, match="here: the run function returned list"):
        check_tables([], "here")
    with pytest.raises(RunnerError, match="no 'requests' table"):
        check_tables({"messages": good["messages"], "run_summary": good["run_summary"]}, "here")
    with pytest.raises(RunnerError, match="table 'requests' is dict"):
        check_tables({**good, "requests": {}}, "here")
    with pytest.raises(RunnerError, match="table name 'bad name' is not an identifier"):
        check_tables({**good, "bad name": good["messages"]}, "here")


def test_overrides_apply_in_order_then_the_duration() -> None:
    table = scenario_table(resolve_source("default"))
    scenario = point_scenario(table, {**OVERRIDES, "burrow.num_workers": 3}, 2.5)
    assert scenario.burrow is not None and scenario.burrow.num_workers == 3
    assert scenario.simulation.duration == 2_500_000
    assert scenario.simulation.warmup == 100_000


def test_same_point_and_seed_give_equal_tables_and_another_seed_does_not() -> None:
    table = scenario_table(resolve_source("default"))
    first = fake_world.run_point(table, OVERRIDES, 3, 0.5)
    again = fake_world.run_point(table, OVERRIDES, 3, 0.5)
    other = fake_world.run_point(table, OVERRIDES, 4, 0.5)
    assert set(first) == {"messages", "requests", "timeseries", "run_summary"}
    for name in first:
        assert first[name].equals(again[name], check_metadata=True)
    assert not first["messages"].equals(other["messages"])
    assert first["messages"].schema == MESSAGES_SCHEMA
    summary = first["run_summary"].to_pylist()
    assert len(summary) == 1
    assert summary[0]["run_seed"] == 3 and summary[0]["run_duration_us"] == 500_000


def test_flatten_summary_joins_keys_into_column_names() -> None:
    flat = flatten_summary({"run": {"seed": 1}, "latency": {"commit": {"p99.9_ms": 2.5}}})
    assert flat == {"run_seed": 1, "latency_commit_p99_9_ms": 2.5}

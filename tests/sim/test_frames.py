"""The notebook API: a run's tables as DataFrames with the right dtypes, and a run directory
read back (``sim.load_run``) equal to the result that was written."""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd
import pytest

import sim
from sim.output import RunResult
from sim.runner import load_run, run_scenario
from sim.scenario import Scenario
from sim.scenario.writing import scenario_toml
from tests.sim.world_scenarios import small_scenario

_FAULT = {"type": "follower_stall", "broker": 2, "at": "1s", "duration": "500ms"}


@functools.cache
def _scenario() -> Scenario:
    return small_scenario("simulation.duration=2s", faults=[_FAULT])


@functools.cache
def _result() -> RunResult:
    return run_scenario(_scenario())


def test_the_message_table_keeps_integers_exact_and_nulls_as_na() -> None:
    frame = _result().messages_df()
    dtypes = frame.dtypes.astype(str).to_dict()
    assert dtypes == {
        "message_id": "Int64", "producer": "category", "topic": "category",
        "partition": "Int32", "offset": "Int64", "sent_us": "Int64", "acked_us": "Int64",
        "ack_error": "Int16", "delivered_us": "Int64", "processed_us": "Int64",
        "committed_us": "Int64", "produce_latency_us": "Int64",
        "end_to_end_latency_us": "Int64", "commit_latency_us": "Int64",
        "send_to_commit_latency_us": "Int64", "deliveries": "Int32", "duplicate": "boolean",
        "acks": "Int8", "log_copies": "Int32", "retained_out": "boolean",
    }  # fmt: skip
    assert len(frame) == _result().messages.num_rows > 100
    # The messages sent after the last commit are not committed: <NA>, not NaN or 0.
    uncommitted = frame["committed_us"].isna()
    assert 0 < uncommitted.sum() < len(frame)
    assert frame.loc[uncommitted, "send_to_commit_latency_us"].isna().all()
    committed = frame[~uncommitted]
    assert (committed.committed_us - committed.sent_us == committed.send_to_commit_latency_us).all()
    assert list(frame["producer"].cat.categories) == ["producer-0"]


def test_requests_timeseries_and_latency_frames() -> None:
    result = _result()
    requests = result.requests_df()
    assert requests.dtypes.astype(str).to_dict() == {
        "api": "category", "broker": "Int32", "client": "category", "sent_us": "Int64",
        "completed_us": "Int64", "round_trip_us": "Int64", "queue_time_us": "Int64",
        "produce_purgatory_us": "Int64", "fetch_purgatory_us": "Int64", "error": "Int16",
    }  # fmt: skip
    assert {"Produce", "OffsetCommit", "FetchFollower"} <= set(requests["api"].cat.categories)
    assert requests["produce_purgatory_us"].isna().any()  # a fetch never enters it
    series = result.timeseries_df()
    assert series.dtypes.astype(str).to_dict() == {
        "time_us": "Int64",
        "source": "category",
        "metric": "category",
        "value": "float64",
    }
    latency = result.latency_df()
    assert list(latency.index) == ["produce", "end_to_end", "commit", "send_to_commit"]
    assert latency["count"].dtype == "Int64" and latency["p99_ms"].dtype == "float64"
    summary = result.summary["latency"]["send_to_commit"]
    assert latency.loc["send_to_commit", "count"] == summary["count"]
    assert latency.loc["send_to_commit", "p99_ms"] == summary["p99_ms"]


def test_a_run_directory_reads_back_equal_to_the_result(tmp_path: Path) -> None:
    result = _result()
    result.write(tmp_path, plots=False)
    (tmp_path / "scenario.toml").write_text(scenario_toml(_scenario()), encoding="utf-8")
    loaded = sim.load_run(tmp_path)
    assert loaded == result
    assert loaded.faults == result.faults and len(loaded.faults) == 1
    pd.testing.assert_frame_equal(loaded.messages_df(), result.messages_df())
    pd.testing.assert_frame_equal(loaded.timeseries_df(), result.timeseries_df())
    pd.testing.assert_frame_equal(loaded.latency_df(), result.latency_df())
    # Without the scenario file (RunResult.write alone) the fault windows are unknown.
    (tmp_path / "scenario.toml").unlink()
    assert load_run(tmp_path).faults == ()
    (tmp_path / "summary.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"summary\.json"):
        load_run(tmp_path)
    # The directory of `sim run --seeds` holds runs: the error names them.
    (tmp_path / "replications.json").write_text("{}", encoding="utf-8")
    (tmp_path / "seed-1").mkdir()
    (tmp_path / "seed-2").mkdir()
    with pytest.raises(
        FileNotFoundError, match=r"load one of its run directories \(seed-1, seed-2\)"
    ):
        load_run(tmp_path)


def test_the_notebook_names_are_on_the_sim_package() -> None:
    from sim.sweep.frames import load_sweep

    assert (sim.run_scenario, sim.load_run, sim.load_sweep) == (run_scenario, load_run, load_sweep)
    with pytest.raises(AttributeError, match="no attribute 'load_runs'"):
        sim.load_runs  # noqa: B018

"""The sweep on local Spark: records, Spark task = direct run, analysis against the records.

Most tests read the one sweep the ``finished_sweep`` fixture ran through the command line.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

from pyspark.sql import SparkSession

from sim.core.statistics import mean_confidence_interval
from sim.output.provenance import environment
from sim.replications import STATISTICS, run_statistics
from sim.runner import run_scenario
from sim.scenario import load_scenario
from sim.sweep import session as session_module
from sim.sweep import simulate
from sim.sweep.analysis import analyse
from sim.sweep.cli import EXIT_INTERRUPTED, sweep_bench_main, sweep_main
from sim.sweep.errors import JavaNotFoundError, OutputConflictError, SweepError
from sim.sweep.grid import expand_tasks
from sim.sweep.java import install_hint
from sim.sweep.job import run_sweep
from sim.sweep.manifest import Manifest
from sim.sweep.progress import run_with_progress
from sim.sweep.runner import DEFAULT_RUNNER
from sim.sweep.simulate import scenario_table
from sim.sweep.statistics import QUANTILES, metrics
from sim.sweep.study import load_study
from tests.sim.sweep import fake_world
from tests.sim.sweep.conftest import FAKE_RUNNER, TINY_STUDY, FinishedSweep, run_cli

LATENCY_COLUMNS = {
    "produce": "produce_latency_us",
    "end_to_end": "end_to_end_latency_us",
    "commit": "commit_latency_us",
    "send_to_commit": "send_to_commit_latency_us",
}
NEVER = {  # per-seed count -> the messages column that stays null
    "never_delivered": "delivered_us",
    "never_processed": "processed_us",
    "never_committed": "committed_us",
}


def records(out_dir: Path, table: str, point_id: int, seed: int) -> pa.Table:
    """One run's rows of a records table, as Spark wrote them (row order kept)."""
    rows = pq.read_table(out_dir / "records" / table / f"point_id={point_id}")
    return rows.filter(pc.equal(rows.column("seed"), seed))


def test_the_command_prints_where_the_report_is(finished_sweep: FinishedSweep) -> None:
    assert finished_sweep.status == 0, finished_sweep.stderr
    report = finished_sweep.out_dir / "report.md"
    assert finished_sweep.stdout.splitlines()[-1] == f"report: {report}"
    text = report.read_text(encoding="utf-8")
    assert text.startswith("# Sweep report: tiny")
    assert text.count("\n| ") >= 2 + 4  # the grid table and one row per point
    plots = sorted((finished_sweep.out_dir / "plots").glob("*.png"))
    assert [p.stem for p in plots] == sorted(
        ["send_to_commit_p99_ms", "commit_p99_ms", "commit_p50_ms", "end_to_end_p99_ms",
         "produce_p99_ms", "throughput_msg_s", "never_committed"]
    )  # fmt: skip
    for plot in plots:
        assert plot.read_bytes().startswith(b"\x89PNG\r\n")
        assert f"(plots/{plot.name})" in text
    assert "8/8" in finished_sweep.stderr  # the progress bar reached every run


def test_the_report_lists_every_runs_warnings(finished_sweep: FinishedSweep) -> None:
    out = finished_sweep.out_dir
    text = (out / "report.md").read_text(encoding="utf-8")
    warnings = text[text.index("## Warnings") : text.index("## Plots")].splitlines()
    manifest = Manifest.read(out)
    few = sorted(p for p, knobs in manifest.points.items() if knobs["burrow.num_workers"] == 2)
    # Every run of the stand-in world loses acknowledged messages (its final log leaves out
    # every LOST_EVERY-th): each says so; the runs with 2 workers warn about them as well.
    assert warnings[2].startswith("8 of 8 runs gave warnings")
    listed = warnings[4:-1]
    assert [line for line in listed if "stand-in" in line] == [
        f"- point {p} (burrow.num_workers=2, burrow.commit_interval_ms="
        f"{manifest.points[p]['burrow.commit_interval_ms']}), seed {seed}: stand-in warning: "
        "only 2 workers"
        for p in few
        for seed in (1, 2)
    ]
    lost = [line for line in listed if "stand-in" not in line]
    assert len(lost) == 8 and all(
        "messages acknowledged with acks=all are missing from the final leader logs" in line
        for line in lost
    )
    summary = pq.read_table(out / "summary.parquet").to_pylist()
    assert {r["point_id"]: r["warnings"] for r in summary} == {
        p: 2.0 if p in few else 1.0 for p in manifest.points
    }


def test_records_are_partitioned_by_point_and_carry_the_knob_values(
    finished_sweep: FinishedSweep,
) -> None:
    out = finished_sweep.out_dir
    manifest = Manifest.read(out)
    assert sorted(manifest.points) == [0, 1, 2, 3]
    for name in ("messages", "requests", "run_summary"):
        folders = sorted(p.name for p in (out / "records" / name).glob("point_id=*"))
        assert folders == [f"point_id={i}" for i in range(4)]
        total = 0
        for point_id, knobs in manifest.points.items():
            rows = pq.read_table(out / "records" / name / f"point_id={point_id}")
            total += rows.num_rows
            assert set(rows.column("seed").to_pylist()) == {1, 2}
            for knob in manifest.knobs:
                assert set(rows.column(knob.column).to_pylist()) == {knobs[knob.name]}
        assert total == manifest.tables[name].rows > 0
    runs = pq.read_table(out / "per_seed.parquet")
    assert runs.num_rows == 8


def test_a_spark_task_gives_the_same_tables_as_a_direct_run(finished_sweep: FinishedSweep) -> None:
    study = load_study(TINY_STUDY)
    table = scenario_table(study.scenario_path)
    for task in expand_tasks(study):
        direct = fake_world.run_point(table, dict(task.overrides), task.seed, study.duration_s)
        for name in ("messages", "requests", "timeseries"):
            stored = records(finished_sweep.out_dir, name, task.point_id, task.seed)
            stored = stored.select(direct[name].column_names)
            assert stored.schema == direct[name].schema
            assert stored.equals(direct[name]), (name, task)
        # The summary is one row; all-null columns are stored as float64, so compare values.
        summary = records(finished_sweep.out_dir, "run_summary", task.point_id, task.seed)
        row = summary.select(direct["run_summary"].column_names).to_pylist()
        assert row == direct["run_summary"].to_pylist()


def _window(out: Path, point_id: int, seed: int) -> tuple[int, int]:
    run = records(out, "run_summary", point_id, seed).to_pylist()[0]
    return int(run["run_warmup_us"]), int(run["run_duration_us"])


def _expected_per_seed(out: Path, point_id: int, seed: int) -> dict[str, float]:
    """The analysis' per-run statistics, recomputed with numpy from the Parquet records."""
    warmup, duration = _window(out, point_id, seed)
    messages = records(out, "messages", point_id, seed).to_pylist()
    requests = records(out, "requests", point_id, seed).to_pylist()
    measured = [m for m in messages if m["sent_us"] >= warmup]
    expected: dict[str, float] = {}
    for name, column in LATENCY_COLUMNS.items():
        values = np.array(
            [m[column] for m in measured if m[column] is not None
             and (name != "produce" or m["ack_error"] == 0)]
        )  # fmt: skip
        for label, fraction in QUANTILES:
            nearest_rank = np.percentile(values, fraction * 100, method="inverted_cdf")
            expected[f"{name}_{label}_ms"] = float(nearest_rank) / 1000
    processed = [
        m for m in messages if m["processed_us"] is not None
        and warmup <= m["processed_us"] <= duration
    ]  # fmt: skip
    expected["throughput_msg_s"] = len(processed) / ((duration - warmup) / 1e6)
    expected["duplicates"] = sum(1 for m in measured if m["duplicate"])
    expected["commit_failures"] = sum(
        1 for r in requests
        if r["api"] == "OffsetCommit" and r["error"] != 0 and r["sent_us"] >= warmup
    )  # fmt: skip
    expected["sent_after_warmup"] = len(measured)
    expected["never_acked"] = sum(
        1 for m in measured if m["acked_us"] is None or m["ack_error"] != 0
    )
    for name, column in NEVER.items():
        expected[name] = sum(1 for m in measured if m[column] is None)
    absent = [m for m in messages if m["ack_error"] == 0 and m["log_copies"] == 0]
    for name, acks in (
        ("lost_acked_acks_all", -1), ("lost_acked_acks_1", 1), ("sent_absent_acks_0", 0)
    ):  # fmt: skip
        expected[name] = sum(1 for m in absent if m["acks"] == acks and not m["retained_out"])
    expected["duplicated_in_log"] = sum(1 for m in messages if m["log_copies"] > 1)
    expected["retained_out"] = sum(1 for m in absent if m["retained_out"])
    run = records(out, "run_summary", point_id, seed).to_pylist()[0]
    expected["warnings"] = len(run["warnings"])
    return expected


def test_per_seed_statistics_match_numpy_on_the_records(finished_sweep: FinishedSweep) -> None:
    out = finished_sweep.out_dir
    rows = pq.read_table(out / "per_seed.parquet").to_pylist()
    assert [(r["point_id"], r["seed"]) for r in rows] == [(p, s) for p in range(4) for s in (1, 2)]
    commit_failures = 0
    for row in rows:
        expected = _expected_per_seed(out, row["point_id"], row["seed"])
        for metric in metrics():
            assert row[metric] == pytest.approx(expected[metric], rel=1e-12), metric
        commit_failures += row["commit_failures"]
        assert row["lost_acked_acks_all"] > 0 and row["duplicated_in_log"] > 0
        # The same nearest-rank percentiles as the simulator's own run summary.
        run = records(out, "run_summary", row["point_id"], row["seed"]).to_pylist()[0]
        for name in LATENCY_COLUMNS:
            for label, _ in QUANTILES:
                ours = row[f"{name}_{label}_ms"]
                assert ours == pytest.approx(run[f"latency_{name}_{label}_ms"], rel=1e-12)
        assert row["commit_failures"] == run["requests_OffsetCommit_errors"]
        for name in ("sent_after_warmup", "never_acked", *NEVER):
            assert row[name] == run[f"unfinished_{name}"], name
        # The same loss counts as the run summary's.
        assert row["lost_acked_acks_all"] == run["loss_acks_all_lost_acked"]
        assert row["duplicated_in_log"] == run["loss_acks_all_duplicated"]
    assert commit_failures > 0
    assert {row["never_committed"] > 0 for row in rows} == {True}  # the last commit interval


def test_a_run_s_own_statistics_are_the_sweep_s_per_seed_statistics(
    finished_sweep: FinishedSweep,
) -> None:
    # sim run --seeds and sim compare reduce a run to the sweep's per-seed statistics.
    assert list(STATISTICS) == metrics()
    study = load_study(TINY_STUDY)
    table = scenario_table(study.scenario_path)
    rows = pq.read_table(finished_sweep.out_dir / "per_seed.parquet").to_pylist()
    by_run = {(row["point_id"], row["seed"]): row for row in rows}
    for task in expand_tasks(study):
        scenario = simulate.point_scenario(table, dict(task.overrides), study.duration_s)
        result = run_scenario(scenario, task.seed, build=fake_world.fake_world)
        ours = run_statistics(result.messages, result.summary)
        row = by_run[(task.point_id, task.seed)]
        assert ours == pytest.approx({name: row[name] for name in STATISTICS}, rel=1e-12)


def test_summary_is_the_mean_and_t_interval_over_seeds(finished_sweep: FinishedSweep) -> None:
    out = finished_sweep.out_dir
    per_seed = pq.read_table(out / "per_seed.parquet").to_pylist()
    summary = pq.read_table(out / "summary.parquet").to_pylist()
    csv_header = (out / "summary.csv").read_text(encoding="utf-8").splitlines()[0]
    assert '"commit_p99_ms","commit_p99_ms_ci95"' in csv_header
    manifest = Manifest.read(out)
    assert [row["point_id"] for row in summary] == [0, 1, 2, 3]
    for row in summary:
        for knob in manifest.knobs:
            assert row[knob.column] == manifest.points[row["point_id"]][knob.name]
        assert row["seeds"] == 2
        seeds = [r for r in per_seed if r["point_id"] == row["point_id"]]
        for metric in metrics():
            interval = mean_confidence_interval([float(r[metric]) for r in seeds])
            assert row[metric] == pytest.approx(interval.mean, rel=1e-9), metric
            assert row[f"{metric}_ci95"] == pytest.approx(interval.half_width, rel=1e-9, abs=1e-12)


def test_the_analysis_reruns_on_an_old_output_and_needs_a_manifest(
    spark: SparkSession, finished_sweep: FinishedSweep, tmp_path: Path
) -> None:
    _, summary = analyse(spark, finished_sweep.out_dir)
    assert summary.equals(pq.read_table(finished_sweep.out_dir / "summary.parquet"))
    with pytest.raises(SweepError, match=r"no sweep\.json"):
        analyse(spark, tmp_path)
    manifest = Manifest.read(finished_sweep.out_dir)
    tables = {name: info for name, info in manifest.tables.items() if name != "run_summary"}
    attrs.evolve(manifest, tables=tables).write(tmp_path)
    with pytest.raises(SweepError, match="needs column 'run_warmup_us' of table 'run_summary'"):
        analyse(spark, tmp_path)


def test_the_sweep_records_its_resolved_scenario_and_installation(
    finished_sweep: FinishedSweep,
) -> None:
    study = load_study(TINY_STUDY)
    resolved = load_scenario(finished_sweep.out_dir / "scenario.toml")
    table = scenario_table(study.scenario_path)
    assert resolved == simulate.point_scenario(table, study.fixed, study.duration_s)
    assert resolved.producers[0].rate == 1000.0 and resolved.simulation.duration == 1_000_000
    manifest = Manifest.read(finished_sweep.out_dir)
    assert manifest.environment == environment()


def test_progress_bar_follows_the_spark_job(
    spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    sc = spark.sparkContext
    result = run_with_progress(
        sc,
        lambda: sc.parallelize(range(6), 3).map(lambda x: x * x).collect(),
        total=3,
        description="squares",
        enabled=True,
    )
    assert result == [0, 1, 4, 9, 16, 25]
    assert "squares: 100%" in capsys.readouterr().err


def test_a_broken_run_function_fails_every_run_in_one_line(
    spark: SparkSession, tmp_path: Path
) -> None:
    runner = "tests.sim.sweep.fake_world:no_messages"
    argv = [str(TINY_STUDY), "--out", str(tmp_path), "--runner", runner, "--no-progress"]
    status, stdout, stderr = run_cli(sweep_main, argv)
    assert status == 1
    assert stderr.count("\n") == 1
    assert stderr.startswith("sweep: 8 of 8 runs failed: point 0 seed 1 (RunnerError: ")
    assert "no 'messages' table" in stderr and ", and 5 more; all are listed in " in stderr
    assert stdout.splitlines()[-1] == f"report: {tmp_path / 'report.md'}"
    assert f"records: {tmp_path / 'records'} (none: no run finished)" in stdout
    report = (tmp_path / "report.md").read_text()
    assert report.count("RunnerError") == 8
    assert "analysis 0.0 s" in report  # nothing analysed, not "not measured"
    assert not (tmp_path / "summary.csv").exists()


def test_sweep_without_java_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def no_java() -> Any:
        raise JavaNotFoundError(install_hint())

    monkeypatch.setattr(session_module, "ensure_java", no_java)
    argv = [str(TINY_STUDY), "--out", str(tmp_path), "--runner", fake_world.__name__ + ":run_point"]
    status, stdout, stderr = run_cli(sweep_main, argv)
    assert (status, stdout) == (1, "")
    assert stderr.count("\n") == 1 and "Java 17" in stderr


def test_bad_study_and_runner_exit_2_before_spark(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\nscenario = 'default'\nseeds = 0\n[grid]\n'a.b' = [1]\n")
    status, _, stderr = run_cli(sweep_main, [str(bad)])
    assert status == 2 and "[study] seeds" in stderr and stderr.count("\n") == 1
    status, _, stderr = run_cli(sweep_main, [str(TINY_STUDY), "--runner", "nope"])
    assert status == 2 and "expected MODULE:FUNCTION" in stderr
    status, _, stderr = run_cli(sweep_main, [str(TINY_STUDY), "--time-limit", "-1"])
    assert status == 2 and stderr == (
        "sweep: --time-limit: expected a positive number of seconds, got -1.0\n"
    )
    huge = tmp_path / "huge.toml"
    huge.write_text(TINY_STUDY.read_text().replace("seeds = 2", "seeds = 1_000_000_000"))
    status, _, stderr = run_cli(sweep_main, [str(huge)])
    assert status == 2 and stderr.count("\n") == 1
    assert "[study] seeds: 1,000,000,000 seeds x 4 points" in stderr


def test_bench_says_clearly_when_the_run_function_cannot_run() -> None:
    runner = "tests.sim.sweep.fake_world:failing"
    status, stdout, stderr = run_cli(sweep_bench_main, ["--json", "--runner", runner])
    assert (status, stdout) == (1, "")
    assert stderr.count("\n") == 1
    assert "cannot run yet (RuntimeError" in stderr and "nothing measured" in stderr


def test_the_real_simulator_gives_the_same_tables_in_a_spark_task(
    spark: SparkSession, tmp_path: Path
) -> None:
    study_file = tmp_path / "real.toml"
    study_file.write_text(
        "[study]\nscenario = 'default'\nseeds = 1\nduration_s = 0.5\n"
        "[set]\n'producers.rate' = 200.0\n'simulation.warmup' = '100ms'\n"
        "[grid]\n'burrow.num_workers' = [2]\n",
        encoding="utf-8",
    )
    study = load_study(study_file)
    out = tmp_path / "out"
    run_sweep(spark, study, out, simulate.run_point, runner_name=DEFAULT_RUNNER, progress=False)
    task = expand_tasks(study)[0]
    direct = simulate.run_point(
        scenario_table(study.scenario_path), dict(task.overrides), task.seed, study.duration_s
    )
    assert direct["messages"].num_rows > 0 and direct["requests"].num_rows > 0
    for name in ("messages", "requests", "timeseries"):
        stored = records(out, name, task.point_id, task.seed).select(direct[name].column_names)
        assert stored.equals(direct[name]), name


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep command fails the test if it starts Spark."""

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark must not start")

    monkeypatch.setattr("sim.sweep.cli.start_session", never)


@pytest.mark.usefixtures("no_spark")
def test_an_output_directory_that_cannot_be_written_exits_2_before_spark(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory\n")
    out = tmp_path / "file" / "sweep"
    argv = [str(TINY_STUDY), "--out", str(out), "--runner", fake_world.__name__ + ":run_point"]
    status, stdout, stderr = run_cli(sweep_main, argv)
    assert (status, stdout) == (2, "")
    assert stderr.count("\n") == 1
    assert stderr.startswith(f"sweep: output error: {out}: cannot ")


@pytest.mark.usefixtures("no_spark")
def test_an_output_directory_of_other_files_exits_2_before_spark(tmp_path: Path) -> None:
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "mine.parquet").write_bytes(b"someone's data")
    argv = [str(TINY_STUDY), "--out", str(tmp_path), "--runner", FAKE_RUNNER]
    for fresh in ([], ["--fresh"]):
        status, stdout, stderr = run_cli(sweep_main, [*argv, *fresh])
        assert (status, stdout) == (2, "")
        assert stderr == (
            f"sweep: {tmp_path}: not empty and not a sweep's output directory (it has no tasks/ "
            "nor sweep.json); a sweep deletes and overwrites files in its output directory: "
            "choose a new or empty one\n"
        )
    assert (tmp_path / "records" / "mine.parquet").read_bytes() == b"someone's data"


def test_failed_and_timed_out_runs_are_recorded_and_the_rest_finish(
    spark: SparkSession, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    runner = "tests.sim.sweep.fake_world:troubled"
    argv = [str(TINY_STUDY), "--out", str(out), "--runner", runner, "--time-limit", "3"]
    status, stdout, stderr = run_cli(sweep_main, [*argv, "--no-progress"])
    assert status == 1
    assert stderr == (
        "sweep: 2 of 8 runs failed: point 0 seed 1 (TaskTimeLimit: the run took longer than "
        "its time limit of 3 s), point 3 seed 2 (RuntimeError: boom at point 3 seed 2); all "
        f"are listed in {out / 'report.md'}; run the same command again to retry them "
        "(finished runs are kept)\n"
    )
    manifest = Manifest.read(out)
    assert [(f.point_id, f.seed) for f in manifest.failed] == [(0, 1), (3, 2)]
    assert manifest.time_limit_s == 3.0
    # Every other run is written, summarised and reported; the failed ones are nowhere.
    summary = pq.read_table(out / "summary.parquet").to_pylist()
    assert [(row["point_id"], row["seeds"]) for row in summary] == [(0, 1), (1, 2), (2, 2), (3, 1)]
    for name in ("messages", "requests", "run_summary"):  # the fake world has no time series
        rows = pq.read_table(out / "records" / name).select(["point_id", "seed"]).to_pylist()
        assert {(r["point_id"], r["seed"]) for r in rows} == {
            (p, s) for p in range(4) for s in (1, 2)
        } - {(0, 1), (3, 2)}, name
    report = (out / "report.md").read_text()
    assert "**2 failed** (listed under Failed runs)" in report
    assert "| 3 | 8 | 100 | 2 | RuntimeError: boom at point 3 seed 2 |" in report
    runs = pyarrow.csv.read_csv(out / "runs.csv").to_pylist()
    assert [r["error"] for r in runs if r["error"]] == [
        "TaskTimeLimit: the run took longer than its time limit of 3 s",
        "RuntimeError: boom at point 3 seed 2",
    ]
    assert "summary: " in stdout
    outcome = json.loads((out / "tasks" / "point-3-seed-2.json").read_text())
    assert outcome["error"] == "RuntimeError: boom at point 3 seed 2"  # kept, with its error


def test_a_killed_python_worker_is_retried_and_one_that_always_dies_is_a_failed_run(
    spark: SparkSession, tmp_path: Path
) -> None:
    assert spark.sparkContext.master == "local[2, 4]"
    study = _study_on_scenario(tmp_path, description=str(tmp_path))
    runner = "tests.sim.sweep.fake_world:crashing"
    argv = [str(study), "--out", str(tmp_path / "out"), "--runner", runner, "--no-progress"]
    status, _, stderr = run_cli(sweep_main, argv)
    assert (tmp_path / "crashed-once").exists()  # point 1 seed 1 died once, then ran
    assert status == 1 and stderr.count("\n") == 1
    assert stderr.startswith(
        "sweep: 1 of 8 runs failed: point 2 seed 2 (its Spark task failed 4 times: "
        "Python worker exited unexpectedly (crashed)); all are listed in "
    )
    manifest = Manifest.read(tmp_path / "out")
    assert [(f.point_id, f.seed) for f in manifest.failed] == [(2, 2)]
    assert manifest.tables["run_summary"].rows == 7


def _study_on_scenario(tmp_path: Path, *, description: str) -> Path:
    """tiny.toml on a copy of the default scenario whose description is ``description``."""
    (tmp_path / "scenario.toml").write_text(
        f'base = "default"\ndescription = {json.dumps(description)}\n', encoding="utf-8"
    )
    study = tmp_path / "study.toml"
    study.write_text(
        TINY_STUDY.read_text().replace('scenario = "default"', 'scenario = "scenario.toml"'),
        encoding="utf-8",
    )
    return study


def test_a_rerun_keeps_the_finished_runs_and_runs_only_the_others(
    spark: SparkSession, tmp_path: Path
) -> None:
    study = load_study(TINY_STUDY)
    out, log = tmp_path / "out", tmp_path / "log"
    log.mkdir()
    run = functools.partial(fake_world.logged, log)
    run_sweep(spark, study, out, run, runner_name="logged", progress=False)
    assert len(list(log.iterdir())) == 8
    first = {p: p.read_bytes() for p in sorted((out / "records").rglob("seed-*.parquet"))}
    # As if interrupted: two runs never finished, one left a partial file, no manifest.
    (out / "tasks" / "point-1-seed-2.json").unlink()
    (out / "tasks" / "point-3-seed-1.json").unlink()
    (out / "records" / "messages" / "point_id=3" / "seed-1.parquet").write_bytes(b"partial")
    (out / "sweep.json").unlink()
    for path in log.iterdir():
        path.unlink()
    output = run_sweep(spark, study, out, run, runner_name="logged", progress=False)
    assert sorted(p.name.rsplit("-", 1)[0] for p in log.iterdir()) == [
        "1000.0-200ms-2-100-seed-2", "1000.0-200ms-8-100-seed-1"
    ]  # fmt: skip
    again = {p: p.read_bytes() for p in sorted((out / "records").rglob("seed-*.parquet"))}
    assert again == first  # same seed, same bytes, whether kept or run again
    assert output.manifest.failed == () and len(output.manifest.points) == 4
    # Another runner (or any other input) is another run: nothing could be kept, and the
    # finished runs are not deleted behind the caller's back: refused, unless afresh.
    for path in log.iterdir():
        path.unlink()
    with pytest.raises(OutputConflictError, match="holds 8 finished runs this study does not"):
        run_sweep(spark, study, out, run, runner_name="other", progress=False)
    assert not list(log.iterdir()) and again == {
        p: p.read_bytes() for p in sorted((out / "records").rglob("seed-*.parquet"))
    }
    run_sweep(spark, study, out, run, runner_name="other", progress=False, resume=False)
    assert len(list(log.iterdir())) == 8
    run_sweep(spark, study, out, run, runner_name="other", progress=False, resume=False)
    assert len(list(log.iterdir())) == 16


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the JVM through /proc")
def test_an_interrupted_driver_says_so_in_one_line_without_spark_s_stack_traces(
    tmp_path: Path,
) -> None:
    """SIGINT to the driver alone while a run is busy (not Ctrl-C in a terminal, which also
    reaches the workers): the running job is cancelled quietly and the sweep ends with its
    own line, not the cancelled task's Java stack trace."""
    out = tmp_path / "out"
    runner = "tests.sim.sweep.fake_world:driver_interrupting"
    argv = [str(TINY_STUDY), "--out", str(out), "--runner", runner, "--master", "local[1]"]
    completed = subprocess.run(
        [sys.executable, "-m", "sim", "sweep", *argv],
        capture_output=True, text=True, check=False, timeout=600,
        env={**os.environ, fake_world.INTERRUPT_DRIVER: "1"},
    )  # fmt: skip
    assert completed.returncode == EXIT_INTERRUPTED, completed.stderr
    lines = completed.stderr.splitlines()
    assert lines[-1].startswith("sweep: interrupted; the runs that finished are kept")
    after_start = lines[next(i for i, line in enumerate(lines) if "sweep tiny" in line) :]
    spark_lines = [line for line in after_start if " WARN " in line or " ERROR " in line]
    assert not spark_lines and not [line for line in lines if line.lstrip().startswith("at ")]
    assert "Traceback" not in completed.stderr


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the JVM through /proc")
def test_a_killed_jvm_is_one_line_and_the_rerun_resumes(
    spark: SparkSession, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    runner = "tests.sim.sweep.fake_world:jvm_killing"
    argv = [str(TINY_STUDY), "--out", str(out), "--runner", runner, "--master", "local[1]"]
    completed = subprocess.run(
        [sys.executable, "-m", "sim", "sweep", *argv],
        capture_output=True, text=True, check=False, timeout=600,
        env={**os.environ, fake_world.KILL_JVM: "1"},
    )  # fmt: skip
    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    ours = [line for line in completed.stderr.splitlines() if line.startswith("sweep: ")]
    assert ours == [completed.stderr.splitlines()[-1]]  # above it: Spark's log, progress bar
    assert ours[0].startswith("sweep: the Spark JVM stopped during the sweep (killed, or out")
    assert ours[0].endswith("run the same command again to run the rest")
    finished = {p.name: p.stat().st_mtime_ns for p in (out / "tasks").glob("*.json")}
    assert 0 < len(finished) < 8 and not (out / "sweep.json").exists()
    status, _, stderr = run_cli(sweep_main, [*argv[:-2], "--no-progress"])
    assert status == 0, stderr
    after = {p.name: p.stat().st_mtime_ns for p in (out / "tasks").glob("*.json")}
    assert len(after) == 8 and all(after[name] == mtime for name, mtime in finished.items())


def test_ctrl_c_is_one_line_that_says_a_rerun_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Session:
        def stop(self) -> None:
            pass

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("sim.sweep.cli.start_session", lambda *a, **k: Session())
    monkeypatch.setattr("sim.sweep.cli.run_sweep", interrupted)
    argv = [str(TINY_STUDY), "--out", str(tmp_path), "--runner", fake_world.__name__ + ":run_point"]
    status, stdout, stderr = run_cli(sweep_main, argv)
    assert (status, stdout) == (130, "")
    assert stderr == (
        "sweep: interrupted; the runs that finished are kept in the output directory: run the "
        "same command again to run the rest\n"
    )


def test_a_sweep_starts_spark_without_its_start_up_noise(tmp_path: Path) -> None:
    # A fresh driver JVM (a subprocess): the session's log4j2 file, the loopback address and
    # untruncated plans keep Spark's notices that say nothing about the sweep off stderr.
    argv = [str(TINY_STUDY), "--out", str(tmp_path / "out"), "--runner", FAKE_RUNNER]
    completed = subprocess.run(
        [sys.executable, "-m", "sim", "sweep", *argv],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    for noise in (
        "log4j profile", "Setting default log level", "NativeCodeLoader", "loopback address",
        "Truncated the string representation",
    ):  # fmt: skip
        assert noise not in completed.stderr, completed.stderr

"""The sweep job's task and driver steps, without Spark: files, summaries, schema checks,
failed runs, time limits, outcome files and what a rerun keeps."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# These tests start no Spark, but sim.sweep.job imports pyspark when it is imported.
pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

from sim.output import MESSAGES_SCHEMA, REQUESTS_SCHEMA
from sim.sweep.errors import OutputConflictError, RunnerError, SweepError
from sim.sweep.grid import Task
from sim.sweep.job import _check_schemas, _crash_message, execute_task
from sim.sweep.session import with_task_retries
from sim.sweep.task_files import (
    PendingTask,
    TaskResult,
    check_output_dir,
    clear_unfinished,
    read_task_file,
    task_file,
    task_key,
    write_task_file,
)
from sim.sweep.time_limit import TaskTimeLimit, time_limit

WORKERS = pa.field("burrow_num_workers", pa.int64(), False)
TASK = Task(task_id=5, point_id=2, seed=9, overrides=(("burrow.num_workers", 4),))
PENDING = PendingTask(TASK, "key-1")


def tables_for(seed: int, summary_rows: int = 1) -> dict[str, pa.Table]:
    messages = MESSAGES_SCHEMA.empty_table()
    if seed % 2:
        messages = pa.table({"message_id": [seed]})  # another schema on odd seeds
    return {
        "messages": messages,
        "requests": REQUESTS_SCHEMA.empty_table(),
        "run_summary": pa.table({"run_seed": [seed] * summary_rows}),
    }


def run_point(
    table: Mapping[str, Any], overrides: Mapping[str, Any], seed: int, duration_s: float | None
) -> dict[str, pa.Table]:
    assert table == {"x": 1} and dict(overrides) == {"burrow.num_workers": 4}
    assert duration_s == 2.0
    return tables_for(seed)


def test_a_task_writes_its_tables_and_outcome_and_returns_only_metadata(tmp_path: Path) -> None:
    columns = {2: [(WORKERS, 4)]}
    result = execute_task(run_point, {"x": 1}, 2.0, str(tmp_path), columns, None, PENDING)
    assert (result.task_id, result.point_id, result.seed, result.error) == (5, 2, 9, None)
    assert dict(result.summary) == {"run_seed": 9}
    assert dict(result.rows) == {"messages": 1, "requests": 0}
    records = tmp_path / "records"
    stored = pq.read_table(records / "messages" / "point_id=2" / "seed-9.parquet")
    assert stored.to_pylist() == [{"seed": 9, "burrow_num_workers": 4, "message_id": 9}]
    assert not (records / "run_summary").exists()  # the driver writes the summaries
    assert read_task_file(tmp_path, PENDING) == result
    assert read_task_file(tmp_path, PendingTask(TASK, "another key")) is None


def test_a_run_that_raises_is_recorded_as_failed_not_raised(tmp_path: Path) -> None:
    def two_rows(*args: Any) -> dict[str, pa.Table]:
        return tables_for(2, summary_rows=2)

    result = execute_task(two_rows, {}, None, str(tmp_path), {2: []}, None, PENDING)
    assert result.error == "RunnerError: point 2 seed 9: 'run_summary' has 2 rows, not 1"
    assert not result.ok and dict(result.rows) == {} and dict(result.summary) == {}

    def boom(*args: Any) -> dict[str, pa.Table]:
        raise ValueError("no\nnewlines")

    result = execute_task(boom, {}, None, str(tmp_path), {2: []}, None, PENDING)
    assert result.error == "ValueError: no newlines"
    assert read_task_file(tmp_path, PENDING) == result


def test_a_run_past_its_time_limit_is_recorded_as_failed(tmp_path: Path) -> None:
    def stubborn(*args: Any) -> dict[str, pa.Table]:
        while True:
            try:
                time.sleep(0.01)
            except Exception:  # swallowing Exception does not stop the time limit
                continue

    started = time.perf_counter()
    result = execute_task(stubborn, {}, None, str(tmp_path), {2: []}, 0.2, PENDING)
    assert 0.2 <= time.perf_counter() - started < 5
    assert result.error == "TaskTimeLimit: the run took longer than its time limit of 0.2 s"
    assert result.wall_s >= 0.2
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL  # the handler is restored
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_time_limit_needs_the_main_thread() -> None:
    with time_limit(None):
        pass
    errors: list[BaseException] = []

    def in_a_thread() -> None:
        try:
            with time_limit(1.0):
                pass
        except SweepError as error:
            errors.append(error)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert "needs SIGALRM in the main thread" in str(errors[0])
    with pytest.raises(TaskTimeLimit), time_limit(0.05):
        time.sleep(1)


def test_a_run_key_changes_with_every_input() -> None:
    base = ("r:f", {"x": 1}, 2.0, [(WORKERS, 4)], TASK)
    key = task_key(*base)
    assert key == task_key(*base)
    changed = [
        ("r:g", {"x": 1}, 2.0, [(WORKERS, 4)], TASK),
        ("r:f", {"x": 2}, 2.0, [(WORKERS, 4)], TASK),
        ("r:f", {"x": 1}, 3.0, [(WORKERS, 4)], TASK),
        ("r:f", {"x": 1}, 2.0, [(WORKERS, 8)], TASK),
        ("r:f", {"x": 1}, 2.0, [(WORKERS, 4)], attrs.evolve(TASK, seed=10)),
        ("r:f", {"x": 1}, 2.0, [(WORKERS, 4)], attrs.evolve(TASK, overrides=())),
    ]
    assert len({key, *(task_key(*c) for c in changed)}) == 1 + len(changed)


def test_clearing_keeps_only_the_runs_named(tmp_path: Path) -> None:
    records = tmp_path / "records"
    kept = [
        records / "messages" / "point_id=0" / "seed-1.parquet",
        records / "requests" / "point_id=0" / "seed-1.parquet",
        task_file(tmp_path, 0, 1),
    ]
    gone = [
        records / "messages" / "point_id=0" / "seed-2.parquet",
        records / "messages" / "point_id=0" / ".seed-3.parquet.abc.tmp",
        records / "run_summary" / "point_id=0" / "all-seeds.parquet",
        records / "messages" / "point_id=7" / "seed-1.parquet",
        task_file(tmp_path, 0, 2),
    ]
    for path in kept + gone:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    clear_unfinished(tmp_path, records, {(0, 1)})
    assert all(path.exists() for path in kept)
    assert not any(path.exists() for path in gone)
    assert not (records / "messages" / "point_id=7").exists()
    assert not (records / "run_summary").exists()


@pytest.mark.parametrize(
    ("master", "expected"),
    [
        ("local", "local[1, 4]"),
        ("local[2]", "local[2, 4]"),
        ("local[*]", "local[*, 4]"),
        ("local[2, 1]", "local[2, 1]"),
        ("spark://host:7077", "spark://host:7077"),
    ],
)
def test_local_masters_retry_failed_tasks(master: str, expected: str) -> None:
    assert with_task_retries(master) == expected


def result(seed: int, schema: pa.Schema, rows: int) -> TaskResult:
    return TaskResult(
        task_id=seed, point_id=0, seed=seed, rows={"messages": rows},
        schemas={"messages": schema.serialize().to_pybytes()}, summary={}, wall_s=0.0,
    )  # fmt: skip


def test_every_run_must_give_a_table_the_same_schema() -> None:
    one = pa.schema([("seed", pa.int64()), ("a", pa.int64())])
    tables = _check_schemas([result(1, one, 3), result(2, one, 4)])
    assert tables["messages"].rows == 7
    assert tables["messages"].columns == ("point_id", "seed", "a")
    other = pa.schema([("seed", pa.int64()), ("a", pa.string())])
    with pytest.raises(RunnerError, match="table 'messages': point 0 seed 2 has columns"):
        _check_schemas([result(1, one, 3), result(2, other, 4)])


def test_a_crashed_task_is_named_by_the_cause_of_its_last_attempt() -> None:
    text = (
        "An error occurred while calling o1.count.\n: org.apache.spark.SparkException: Job "
        "aborted due to stage failure: Task 5 in stage 0.0 failed 4 times, most recent "
        "failure: Lost task 5.3 in stage 0.0 (TID 11) (192.0.2.2 executor driver): "
        "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed). "
        "Consider setting ...\n\tat org.apache.spark.api.python..."
    )
    assert _crash_message(text, 4) == (
        "its Spark task failed 4 times: Python worker exited unexpectedly (crashed)"
    )
    assert _crash_message("no such text", 2) == "its Spark task failed 2 times: see Spark's log"


def test_clearing_records_only_keeps_every_outcome_file(tmp_path: Path) -> None:
    records = tmp_path / "records"
    record = records / "messages" / "point_id=0" / "seed-2.parquet"
    outcome = task_file(tmp_path, 0, 2)
    for path in (record, outcome):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    clear_unfinished(tmp_path, records, set(), outcomes=False)
    assert outcome.exists() and not record.exists()


def _outcome(out: Path, point_id: int, seed: int, key: str, error: str | None = None) -> None:
    result = TaskResult(point_id * 10 + seed, point_id, seed, {}, {}, {}, 1.0, error)
    write_task_file(out, key, result)


def test_an_output_directory_holding_what_a_sweep_would_delete_is_refused(
    tmp_path: Path,
) -> None:
    pending = [PendingTask(Task(i, 0, seed, ()), f"key-{seed}") for i, seed in enumerate((1, 2))]
    check_output_dir(tmp_path / "new", pending, resume=True)  # not there yet
    check_output_dir(tmp_path, pending, resume=True)  # empty
    # Someone's files: a sweep would delete in records/ and overwrite reports. Refused even
    # with --fresh.
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "mine.csv").write_text("precious\n")
    for resume in (True, False):
        with pytest.raises(OutputConflictError, match="not a sweep's output directory") as info:
            check_output_dir(tmp_path, pending, resume=resume)
        assert "\n" not in str(info.value)
    # A sweep's output: its finished runs of the same key are kept, its failed runs are not
    # results (a rerun retries them).
    out = tmp_path / "sweep"
    _outcome(out, 0, 1, "key-1")
    _outcome(out, 0, 2, "other", error="RuntimeError: boom")
    check_output_dir(out, pending, resume=True)
    # Finished runs the study does not have (another point, or another key: the study
    # changed) would be deleted: refused, unless the sweep starts afresh (--fresh).
    _outcome(out, 3, 1, "key-1")
    _outcome(out, 0, 2, "old-key")
    with pytest.raises(OutputConflictError) as info:
        check_output_dir(out, pending, resume=True)
    assert str(info.value) == (
        f"{out}: holds 2 finished runs this study does not have (point 0 seed 2, point 3 seed "
        "1: from another study, or from this one before it changed); run with --fresh to "
        "replace them, or choose another --out"
    )
    check_output_dir(out, pending, resume=False)

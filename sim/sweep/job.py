"""The sweep job: one Spark task per (point, seed), records written as Parquet by point.

``sc.parallelize(tasks, numSlices=len(tasks))`` puts each task in its own partition; a
``map`` runs the simulation there (:func:`execute_task`) and writes each of its tables to
``OUT/records/<table>/point_id=<id>/seed-<seed>.parquet`` with ``seed`` and one column per
grid knob in front (see :mod:`sim.sweep.tables`), then its outcome to ``OUT/tasks/`` (see
:mod:`sim.sweep.task_files`). One Spark job runs the whole sweep, and the records are ordinary
Hive-style partitioned Parquet that Spark SQL reads with a ``point_id`` column.

Nothing is lost to one bad run:

* a simulation that raises, or runs past the study's time limit (:mod:`sim.sweep.time_limit`),
  is recorded as a failed run with its point, seed and error; its task still succeeds, so
  every other run finishes;
* a Python worker that dies (killed, out of memory) fails its Spark task, which Spark retries
  (``local[N, 4]`` in local mode, :mod:`sim.sweep.session`); a task that fails every attempt
  aborts the job, and the driver records that run as failed and starts a new job for the runs
  not done yet;
* every finished run's outcome is on disk, so a sweep interrupted in any way (Ctrl-C, a
  killed JVM) resumes when run again into the same directory: runs already finished with the
  same inputs are kept and only the others run (:func:`run_sweep`).

The driver then deletes the records of failed runs and writes ``OUT/records/run_summary``
(the summaries of the runs that finished, one file per point, so columns missing from some
runs become nulls), ``OUT/runs.csv`` (one row per run: rows per table, wall time, error) and,
last, ``OUT/sweep.json`` (the manifest the analysis and the report read, failed runs
included; its presence means the sweep ended).

The output directory must be a file-system path that every executor and the driver can
write to: local disk in local mode, a shared mount (e.g. NFS) on a cluster.
"""

from __future__ import annotations

import functools
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.csv
from py4j.protocol import Py4JError, Py4JJavaError
from pyspark import SparkContext
from pyspark.sql import SparkSession

from sim.output.provenance import SCENARIO_NAME, environment
from sim.scenario.writing import scenario_toml
from sim.sweep.errors import RunnerError, SweepError
from sim.sweep.grid import Point, expand_points, expand_tasks
from sim.sweep.manifest import MANIFEST_NAME, FailedRun, Manifest, TableInfo
from sim.sweep.progress import run_with_progress
from sim.sweep.runner import RunPoint, check_tables
from sim.sweep.simulate import point_scenario, scenario_table
from sim.sweep.study import Study
from sim.sweep.tables import (
    knob_type,
    run_file,
    summary_rows_table,
    with_point_columns,
    write_parquet,
)
from sim.sweep.task_files import (
    PendingTask,
    TaskResult,
    check_output_dir,
    clear_unfinished,
    read_task_file,
    task_key,
    write_task_file,
)
from sim.sweep.time_limit import TaskTimeLimit, time_limit

RECORDS_DIR = "records"
SUMMARY_TABLE = "run_summary"
PointColumns = Mapping[int, Sequence[tuple[pa.Field, Any]]]
"""point_id -> the (field, value) of each knob column of that point."""

_ABORTED_TASK = re.compile(r"Task (\d+) in stage \S+ failed (\d+) times")
_LOST_TASK = re.compile(
    r"most recent failure: Lost task \S+ in stage \S+ \(TID \d+\) \([^)]*\): "
    r"(?:[\w.$]+(?:Exception|Error): )?([^\n]*)"
)


def _one_line(error: BaseException) -> str:
    """``Type: message`` on one line."""
    return " ".join(f"{type(error).__name__}: {error}".split())


def execute_task(
    run_point: RunPoint,
    scenario: Mapping[str, Any],
    duration_s: float | None,
    out_dir: str,
    point_columns: PointColumns,
    time_limit_s: float | None,
    pending: PendingTask,
) -> TaskResult:
    """Run one task's simulation (inside a Spark task), write its record tables, then its
    outcome file (:mod:`sim.sweep.task_files`); return the outcome.

    Any exception of the run -- the run function raising, returning something other than a
    dict of Arrow tables with ``messages``, ``requests`` and a one-row ``run_summary``, a
    table with a column the sweep adds itself, the ``time_limit_s`` running out -- is
    recorded as the run's error instead of failing the task.
    """
    task = pending.task
    started = time.perf_counter()
    where = f"point {task.point_id} seed {task.seed}"
    records = Path(out_dir) / RECORDS_DIR
    try:
        with time_limit(time_limit_s):
            run = run_point(scenario, dict(task.overrides), task.seed, duration_s)
            tables = check_tables(run, where)
            wall_s = time.perf_counter() - started
            summary = tables.pop(SUMMARY_TABLE).to_pylist()
            if len(summary) != 1:
                raise RunnerError(f"{where}: {SUMMARY_TABLE!r} has {len(summary)} rows, not 1")
            columns = [
                (pa.field("seed", pa.int64(), False), task.seed),
                *point_columns[task.point_id],
            ]
            schemas = {}
            for name, table in tables.items():
                stored = with_point_columns(name, table, columns)
                write_parquet(stored, run_file(records, name, task.point_id, task.seed))
                schemas[name] = stored.schema.serialize().to_pybytes()
        result = TaskResult(
            task_id=task.task_id,
            point_id=task.point_id,
            seed=task.seed,
            rows={name: table.num_rows for name, table in tables.items()},
            schemas=schemas,
            summary=summary[0],
            wall_s=wall_s,
        )
    except (Exception, TaskTimeLimit) as error:
        result = TaskResult(
            task_id=task.task_id, point_id=task.point_id, seed=task.seed, rows={},
            schemas={}, summary={}, wall_s=time.perf_counter() - started,
            error=_one_line(error),
        )  # fmt: skip
    write_task_file(Path(out_dir), pending.key, result)
    return result


@attrs.frozen
class SweepOutput:
    """Where a sweep's files are, its manifest (failed runs included), the wall time the
    simulations this sweep ran took inside their tasks, summed (``simulation_s``), and how many
    runs it kept from an earlier attempt instead of running them (``kept``)."""

    out_dir: Path
    manifest: Manifest
    simulation_s: float
    kept: int = 0


def run_sweep(
    spark: SparkSession,
    study: Study,
    out_dir: Path,
    run_point: RunPoint,
    *,
    runner_name: str,
    progress: bool = True,
    time_limit_s: float | None = None,
    resume: bool = True,
) -> SweepOutput:
    """Run every (point, seed) of ``study`` as a Spark task and write the records to ``out_dir``.

    ``runner_name`` is recorded in the manifest and is part of each run's key. With
    ``resume``, runs already finished in ``out_dir`` with the same key are kept and not run
    again; without it every run starts afresh. ``time_limit_s`` (default: the study's) bounds
    each run's wall time. A run that fails is in the manifest's ``failed``, not in the records.

    Raises :class:`~sim.sweep.errors.OutputConflictError` before anything runs if ``out_dir``
    holds what the sweep would delete (see :func:`check_sweep_output`), :class:`RunnerError` if
    a table's schema differs between runs, and :class:`SweepError` if the Spark JVM dies. A
    task failing outside its run (pyspark's ``PythonException``, e.g. its outcome file cannot
    be written) or any other Spark failure propagates. Either way the runs finished so far are
    kept for the next attempt.
    """
    started = time.perf_counter()
    limit = study.time_limit_s if time_limit_s is None else time_limit_s
    points = expand_points(study)
    point_columns = _point_columns(study, points)
    table = scenario_table(study.scenario_path)
    pending = _pending(study, runner_name, table, point_columns)
    check_output_dir(out_dir, pending, resume=resume)
    records = out_dir / RECORDS_DIR
    (out_dir / MANIFEST_NAME).unlink(missing_ok=True)
    if not resume:
        shutil.rmtree(records, ignore_errors=True)
    kept = {p.task.task_id: r for p in pending if (r := _finished(out_dir, p, resume)) is not None}
    clear_unfinished(out_dir, records, {(r.point_id, r.seed) for r in kept.values()})
    execute = functools.partial(
        execute_task, run_point, table, study.duration_s, str(out_dir.resolve()),
        point_columns, limit,
    )  # fmt: skip
    crashed = _run_tasks(
        spark, [p for p in pending if p.task.task_id not in kept], execute, out_dir,
        description=f"sweep {study.name}", progress=progress,
    )  # fmt: skip
    results = [_outcome(out_dir, p, crashed) for p in pending]
    failed = [r for r in results if not r.ok]
    ok = {(r.point_id, r.seed) for r in results if r.ok}
    clear_unfinished(out_dir, records, ok, outcomes=False)
    finished = [r for r in results if r.ok]
    tables = _check_schemas(finished)
    if finished:
        tables[SUMMARY_TABLE] = _write_summaries(records, finished, point_columns)
    _write_runs(out_dir / "runs.csv", results, sorted(tables))
    sc = spark.sparkContext
    manifest = Manifest.for_study(
        study,
        points=points,
        tables=tables,
        failed=tuple(FailedRun(r.point_id, r.seed, r.error or "") for r in failed),
        time_limit_s=limit,
        runner=runner_name,
        master=str(sc.master),
        spark_version=spark.version,
        wall_s=time.perf_counter() - started,
        environment=environment(),
    )
    resolved = point_scenario(table, study.fixed, study.duration_s)
    (out_dir / SCENARIO_NAME).write_text(scenario_toml(resolved), encoding="utf-8")
    manifest.write(out_dir)
    return SweepOutput(
        out_dir=out_dir,
        manifest=manifest,
        simulation_s=sum(r.wall_s for r in results if r.task_id not in kept),
        kept=len(kept),
    )


def check_sweep_output(
    study: Study, out_dir: Path, *, runner_name: str, resume: bool = True
) -> None:
    """Refuse ``out_dir`` before Spark starts if the sweep of ``study`` would delete what it
    holds: files that are not a sweep's, or (with ``resume``) finished runs the study does not
    have, with the same inputs (:func:`~sim.sweep.task_files.check_output_dir`). Raises
    :class:`~sim.sweep.errors.OutputConflictError`."""
    point_columns = _point_columns(study, expand_points(study))
    table = scenario_table(study.scenario_path)
    pending = _pending(study, runner_name, table, point_columns)
    check_output_dir(out_dir, pending, resume=resume)


def _pending(
    study: Study,
    runner_name: str,
    table: Mapping[str, Any],
    point_columns: Mapping[int, Sequence[tuple[pa.Field, Any]]],
) -> list[PendingTask]:
    """Every run of ``study`` with its key."""
    return [
        PendingTask(t, task_key(runner_name, table, study.duration_s, point_columns[t.point_id], t))
        for t in expand_tasks(study)
    ]


def _finished(out_dir: Path, pending: PendingTask, resume: bool) -> TaskResult | None:
    """The outcome of a run that finished earlier with the same key, if resuming."""
    if not resume:
        return None
    result = read_task_file(out_dir, pending)
    return result if result is not None and result.ok else None


def _run_tasks(
    spark: SparkSession,
    pending: list[PendingTask],
    execute: functools.partial[TaskResult],
    out_dir: Path,
    *,
    description: str,
    progress: bool,
) -> dict[int, str]:
    """Run ``pending`` as Spark jobs until each has run or crashed; return the errors of the
    tasks whose Python worker died on every attempt, by task id.

    When a task fails every attempt Spark aborts the job; that task is recorded as crashed
    and a new job runs the tasks that have not written their outcome yet.
    """
    sc = spark.sparkContext
    crashed: dict[int, str] = {}
    while pending:
        job = functools.partial(_job, sc, pending, execute)
        try:
            run_with_progress(
                sc,
                job,
                total=len(pending),
                description=description,
                enabled=progress,
            )
            return crashed
        except Py4JJavaError as error:
            match = _ABORTED_TASK.search(str(error))
            if match is None:
                raise
            index, attempts = int(match[1]), int(match[2])
            task = pending[index]
            crashed[task.task.task_id] = _crash_message(str(error), attempts)
            pending = [
                p for i, p in enumerate(pending)
                if i != index and read_task_file(out_dir, p) is None
            ]  # fmt: skip
        except (Py4JError, ConnectionError):  # the JVM is gone: calls fail or are refused
            done = sum(1 for p in pending if read_task_file(out_dir, p) is not None)
            raise SweepError(
                f"the Spark JVM stopped during the sweep (killed, or out of memory?); the runs "
                f"that finished are kept in {out_dir} ({done} of the {len(pending)} this "
                "attempt started): run the same command again to run the rest"
            ) from None
    return crashed


def _job(
    sc: SparkContext, pending: list[PendingTask], execute: functools.partial[TaskResult]
) -> int:
    """One Spark job running ``pending``, one task each; returns how many ran."""
    count: int = sc.parallelize(pending, numSlices=len(pending)).map(execute).count()
    return count


def _crash_message(text: str, attempts: int) -> str:
    """What a task whose every attempt failed died of, from Spark's job-abort message: its
    last attempt's cause, first sentence, without the Java exception class."""
    match = _LOST_TASK.search(text)
    cause = match[1].split(". ")[0] if match else "see Spark's log"
    return f"its Spark task failed {attempts} times: {cause}"


def _outcome(out_dir: Path, pending: PendingTask, crashed: Mapping[int, str]) -> TaskResult:
    """The outcome of ``pending``'s run after the jobs: its outcome file, else its crash."""
    result = read_task_file(out_dir, pending)
    if result is not None:
        return result
    task = pending.task
    error = crashed.get(task.task_id, "the run did not finish (its outcome file is missing)")
    return TaskResult(
        task_id=task.task_id, point_id=task.point_id, seed=task.seed, rows={}, schemas={},
        summary={}, wall_s=0.0, error=error,
    )  # fmt: skip


def _point_columns(study: Study, points: Sequence[Point]) -> dict[int, list[tuple[pa.Field, Any]]]:
    fields = {k.name: pa.field(k.column, knob_type(k.values), False) for k in study.grid}
    return {p.point_id: [(fields[name], value) for name, value in p.knobs] for p in points}


def _check_schemas(results: Sequence[TaskResult]) -> dict[str, TableInfo]:
    """One schema per table across runs; the TableInfo of each (``point_id`` column first)."""
    first: dict[str, tuple[TaskResult, pa.Schema]] = {}
    for result in results:
        for name, data in result.schemas.items():
            schema = pa.ipc.read_schema(pa.py_buffer(data))
            if name not in first:
                first[name] = (result, schema)
                continue
            other, expected = first[name]
            if schema != expected:
                raise RunnerError(
                    f"table {name!r}: point {result.point_id} seed {result.seed} has columns "
                    f"{schema.to_string(show_schema_metadata=False).splitlines()} but point "
                    f"{other.point_id} seed {other.seed} has "
                    f"{expected.to_string(show_schema_metadata=False).splitlines()}; a run "
                    "function must give a table the same schema in every run"
                )
    return {
        name: TableInfo(
            name=name,
            path=f"{RECORDS_DIR}/{name}",
            rows=sum(r.rows.get(name, 0) for r in results),
            columns=("point_id", *schema.names),
        )
        for name, (_, schema) in first.items()
    }


def _write_summaries(
    records: Path, results: Sequence[TaskResult], point_columns: PointColumns
) -> TableInfo:
    """Write the runs' summary rows, one file per point; return the table's info."""
    table = summary_rows_table([r.summary for r in results])
    columns: tuple[str, ...] = ()
    for point_id in sorted({r.point_id for r in results}):
        indices = [i for i, r in enumerate(results) if r.point_id == point_id]
        seeds = pa.array([results[i].seed for i in indices], pa.int64())
        point = [(pa.field("seed", pa.int64(), False), seeds), *point_columns[point_id]]
        stored = with_point_columns(SUMMARY_TABLE, table.take(indices), point)
        write_parquet(stored, run_file(records, SUMMARY_TABLE, point_id))
        columns = ("point_id", *stored.schema.names)
    return TableInfo(
        name=SUMMARY_TABLE, path=f"{RECORDS_DIR}/{SUMMARY_TABLE}", rows=table.num_rows,
        columns=columns,
    )  # fmt: skip


def _write_runs(path: Path, results: Sequence[TaskResult], names: Sequence[str]) -> None:
    """``runs.csv``: one row per run, finished or failed (``error`` empty when it finished)."""
    columns: dict[str, list[Any]] = {
        "task_id": [r.task_id for r in results],
        "point_id": [r.point_id for r in results],
        "seed": [r.seed for r in results],
        "wall_s": [round(r.wall_s, 4) for r in results],
        "error": [r.error or "" for r in results],
    }
    for name in names:
        if name != SUMMARY_TABLE:
            columns[f"{name}_rows"] = [r.rows.get(name, 0) for r in results]
    pyarrow.csv.write_csv(pa.table(columns), str(path))

"""The sweep job: one Spark task per (point, seed), records written as Parquet by point.

``sc.parallelize(tasks, numSlices=len(tasks))`` puts each task in its own partition; a
``map`` runs the simulation there (:func:`execute_task`) and writes each of its tables to
``OUT/records/<table>/point_id=<id>/seed-<seed>.parquet`` with ``seed`` and one column per
grid knob in front (see :mod:`sim.sweep.tables`); only metadata (row counts, schemas, the
run's one-row summary, wall time) goes back to the driver, where ``collect`` moves the
progress bar. One Spark job runs the whole sweep, and the records are ordinary Hive-style
partitioned Parquet that Spark SQL reads with a ``point_id`` column.

The driver then writes ``OUT/records/run_summary`` (the runs' summaries, one file per point,
so columns missing from some runs become nulls), ``OUT/runs.csv`` (one row per run: rows per
table, wall time of the simulation) and, last, ``OUT/sweep.json`` (the manifest the analysis
and the report read; its presence means the sweep finished).

The output directory must be a file-system path that every executor and the driver can
write to: local disk in local mode, a shared mount (e.g. NFS) on a cluster. A rerun into the
same directory replaces the previous records.
"""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.csv
from pyspark.sql import SparkSession

from sim.sweep.errors import RunnerError
from sim.sweep.grid import Point, Task, expand_points, expand_tasks
from sim.sweep.manifest import MANIFEST_NAME, Manifest, TableInfo
from sim.sweep.progress import run_with_progress
from sim.sweep.runner import RunPoint, check_tables
from sim.sweep.simulate import scenario_table
from sim.sweep.study import Study
from sim.sweep.tables import (
    knob_type,
    run_file,
    summary_rows_table,
    with_point_columns,
    write_parquet,
)

RECORDS_DIR = "records"
SUMMARY_TABLE = "run_summary"
PointColumns = Mapping[int, Sequence[tuple[pa.Field, Any]]]
"""point_id -> the (field, value) of each knob column of that point."""


@attrs.frozen
class TaskResult:
    """What a Spark task sends back: metadata only (its tables are already on disk)."""

    task_id: int
    point_id: int
    seed: int
    rows: Mapping[str, int]
    schemas: Mapping[str, bytes]
    summary: Mapping[str, Any]
    wall_s: float


def execute_task(
    run_point: RunPoint,
    scenario: Mapping[str, Any],
    duration_s: float | None,
    records_dir: str,
    point_columns: PointColumns,
    task: Task,
) -> TaskResult:
    """Run one task's simulation (inside a Spark task) and write its record tables.

    Raises :class:`RunnerError` if the run function returns something other than a dict of
    Arrow tables with ``messages``, ``requests`` and a one-row ``run_summary``, or a table
    with a column the sweep adds itself.
    """
    started = time.perf_counter()
    where = f"point {task.point_id} seed {task.seed}"
    tables = check_tables(run_point(scenario, dict(task.overrides), task.seed, duration_s), where)
    wall_s = time.perf_counter() - started
    summary = tables.pop(SUMMARY_TABLE).to_pylist()
    if len(summary) != 1:
        raise RunnerError(f"{where}: {SUMMARY_TABLE!r} has {len(summary)} rows, not 1")
    columns = [(pa.field("seed", pa.int64(), False), task.seed), *point_columns[task.point_id]]
    schemas = {}
    for name, table in tables.items():
        stored = with_point_columns(name, table, columns)
        write_parquet(stored, run_file(Path(records_dir), name, task.point_id, task.seed))
        schemas[name] = stored.schema.serialize().to_pybytes()
    return TaskResult(
        task_id=task.task_id,
        point_id=task.point_id,
        seed=task.seed,
        rows={name: table.num_rows for name, table in tables.items()},
        schemas=schemas,
        summary=summary[0],
        wall_s=wall_s,
    )


@attrs.frozen
class SweepOutput:
    """Where a finished sweep's files are, its manifest, and the wall time its simulations
    took inside their tasks, summed (``simulation_s``)."""

    out_dir: Path
    manifest: Manifest
    simulation_s: float


def run_sweep(
    spark: SparkSession,
    study: Study,
    out_dir: Path,
    run_point: RunPoint,
    *,
    runner_name: str,
    progress: bool = True,
) -> SweepOutput:
    """Run every (point, seed) of ``study`` as a Spark task and write the records to ``out_dir``.

    ``runner_name`` is recorded in the manifest. Raises :class:`RunnerError` if a table's
    schema differs between runs; a simulation that raises fails its Spark task and, after
    Spark's retries, the job (pyspark raises the error).
    """
    started = time.perf_counter()
    tasks = expand_tasks(study)
    points = expand_points(study)
    records = out_dir / RECORDS_DIR
    (out_dir / MANIFEST_NAME).unlink(missing_ok=True)
    shutil.rmtree(records, ignore_errors=True)
    records.mkdir(parents=True)
    point_columns = _point_columns(study, points)
    execute = functools.partial(
        execute_task,
        run_point,
        scenario_table(study.scenario_path),
        study.duration_s,
        str(records.resolve()),
        point_columns,
    )
    sc = spark.sparkContext
    results: list[TaskResult] = run_with_progress(
        sc,
        lambda: sc.parallelize(tasks, numSlices=len(tasks)).map(execute).collect(),
        total=len(tasks),
        description=f"sweep {study.name}",
        enabled=progress,
    )
    results.sort(key=lambda r: r.task_id)
    tables = _check_schemas(results)
    tables[SUMMARY_TABLE] = _write_summaries(records, results, point_columns)
    names = sorted(tables)
    _write_runs(out_dir / "runs.csv", results, names)
    manifest = Manifest.for_study(
        study,
        points=points,
        tables=tables,
        runner=runner_name,
        master=str(sc.master),
        spark_version=spark.version,
        wall_s=time.perf_counter() - started,
    )
    shutil.copyfile(study.scenario_path, out_dir / "scenario.toml")
    manifest.write(out_dir)
    return SweepOutput(
        out_dir=out_dir, manifest=manifest, simulation_s=sum(r.wall_s for r in results)
    )


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
    columns: dict[str, list[Any]] = {
        "task_id": [r.task_id for r in results],
        "point_id": [r.point_id for r in results],
        "seed": [r.seed for r in results],
        "wall_s": [round(r.wall_s, 4) for r in results],
    }
    for name in names:
        if name != SUMMARY_TABLE:
            columns[f"{name}_rows"] = [r.rows.get(name, 0) for r in results]
    pyarrow.csv.write_csv(pa.table(columns), str(path))

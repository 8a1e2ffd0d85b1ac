"""Record tables on disk: point columns in front, one Parquet file per run and table.

A run's table is stored as ``records/<table>/point_id=<id>/seed-<seed>.parquet`` (Hive-style
partitioning, which Spark and pyarrow read back with a ``point_id`` column). Every row gets
``seed`` and one column per grid knob in front of the simulator's columns. Files are written
with the simulator's fixed Parquet options and renamed into place, and their names depend only
on (point, seed): a task that Spark runs again rewrites identical bytes under the same name.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sim.output.result import PARQUET_OPTIONS
from sim.sweep.errors import RunnerError
from sim.sweep.study import KnobValue


def knob_type(values: Sequence[KnobValue]) -> pa.DataType:
    """The Arrow type of a knob column (the study guarantees one Python type per knob)."""
    first = values[0]
    if isinstance(first, bool):
        return pa.bool_()
    if isinstance(first, int):
        return pa.int64()
    if isinstance(first, float):
        return pa.float64()
    return pa.string()


def with_point_columns(
    name: str, table: pa.Table, point_columns: Sequence[tuple[pa.Field, Any]]
) -> pa.Table:
    """``table`` (called ``name``) with the (field, value) columns in front, e.g. ``seed`` and
    the knobs: a scalar value is repeated on every row, a ``pa.Array`` is used as it is.

    Raises :class:`RunnerError` if ``table`` already has a column of one of those names.
    """
    clash = sorted({field.name for field, _ in point_columns} & set(table.column_names))
    if clash:
        raise RunnerError(
            f"table {name!r} has a column {clash[0]!r}, which the sweep adds itself; rename the "
            "simulator's column or the grid knob"
        )
    rows = table.num_rows
    columns = [
        value if isinstance(value, pa.Array) else pa.repeat(pa.scalar(value, field.type), rows)
        for field, value in point_columns
    ]
    fields = [field for field, _ in point_columns]
    return pa.Table.from_arrays(
        [*columns, *table.columns], schema=pa.schema([*fields, *table.schema])
    )


def run_file(records_dir: Path, name: str, point_id: int, seed: int | None = None) -> Path:
    """Where table ``name`` of run (point, seed) is stored; ``seed=None``: one file per point."""
    leaf = "all-seeds.parquet" if seed is None else f"seed-{seed}.parquet"
    return records_dir / name / f"point_id={point_id}" / leaf


def write_parquet(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` atomically (a hidden temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(table, scratch, **PARQUET_OPTIONS)
    os.replace(scratch, path)


def summary_rows_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Summary rows of several runs as one table: keys missing from a run are null, a column
    that is null in every run is stored as float64 and a list column empty in every run (no
    run has a warning) as a list of strings: Spark cannot read a null type.

    Raises :class:`RunnerError` if the runs give one key values of incompatible types.
    """
    keys = list(dict.fromkeys(key for row in rows for key in row))
    try:
        table = pa.Table.from_pylist([{key: row.get(key) for key in keys} for row in rows])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise RunnerError(f"run summaries: a key has values of different types: {exc}") from None
    return table.cast(pa.schema([f.with_type(_readable(f.type)) for f in table.schema]))


def _readable(kind: pa.DataType) -> pa.DataType:
    """``kind`` with a null type replaced: float64 alone, string as a list's values."""
    if pa.types.is_null(kind):
        return pa.float64()
    if pa.types.is_list(kind) and pa.types.is_null(kind.value_type):
        return pa.list_(pa.string())
    return kind

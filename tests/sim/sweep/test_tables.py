"""Record tables on disk: point columns in front, atomic per-run Parquet files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sim.output import MESSAGES_SCHEMA
from sim.sweep.errors import RunnerError
from sim.sweep.tables import (
    knob_type,
    run_file,
    summary_rows_table,
    with_point_columns,
    write_parquet,
)

SEED = pa.field("seed", pa.int64(), False)
WORKERS = pa.field("burrow_num_workers", pa.int64(), False)


def test_knob_types() -> None:
    assert knob_type((True, False)) == pa.bool_()
    assert knob_type((1, 2)) == pa.int64()
    assert knob_type((0.5,)) == pa.float64()
    assert knob_type(("all",)) == pa.string()


def test_point_columns_go_in_front_as_constants_or_arrays() -> None:
    run = pa.table({"x": pa.array([1, 2], pa.int32())})
    table = with_point_columns("t", run, [(SEED, pa.array([5, 6], pa.int64())), (WORKERS, 4)])
    assert table.schema == pa.schema([SEED, WORKERS, ("x", pa.int32())])
    assert table.to_pylist() == [
        {"seed": 5, "burrow_num_workers": 4, "x": 1},
        {"seed": 6, "burrow_num_workers": 4, "x": 2},
    ]
    empty = with_point_columns("messages", MESSAGES_SCHEMA.empty_table(), [(SEED, 1)])
    assert empty.num_rows == 0 and empty.schema.names[0] == "seed"


def test_a_column_the_sweep_adds_cannot_come_from_the_run() -> None:
    with pytest.raises(RunnerError, match="table 't' has a column 'seed'"):
        with_point_columns("t", pa.table({"seed": [1]}), [(SEED, 1)])


def test_files_are_written_atomically_under_names_fixed_by_point_and_seed(tmp_path: Path) -> None:
    path = run_file(tmp_path, "messages", 3, 7)
    assert path == tmp_path / "messages" / "point_id=3" / "seed-7.parquet"
    assert run_file(tmp_path, "run_summary", 3).name == "all-seeds.parquet"
    table = pa.table({"a": [1, None, 3], "b": ["x", "y", None]})
    write_parquet(table, path)
    first = path.read_bytes()
    write_parquet(table, path)  # a task that runs again rewrites the same bytes
    assert path.read_bytes() == first
    assert pq.read_table(path).equals(table)
    assert [p.name for p in path.parent.iterdir()] == ["seed-7.parquet"]


def test_summary_rows_of_several_runs_become_one_table() -> None:
    table = summary_rows_table([{"a": 1, "b": None}, {"a": 2, "c": "x", "b": None}])
    assert table.schema == pa.schema([("a", pa.int64()), ("b", pa.float64()), ("c", pa.string())])
    assert table.to_pylist() == [{"a": 1, "b": None, "c": None}, {"a": 2, "b": None, "c": "x"}]
    with pytest.raises(RunnerError, match="different types"):
        summary_rows_table([{"a": 1}, {"a": "x"}])


def test_warning_lists_are_lists_of_strings_even_when_every_run_has_none() -> None:
    none = summary_rows_table([{"warnings": []}, {"warnings": []}])
    assert none.schema == pa.schema([("warnings", pa.list_(pa.string()))])
    some = summary_rows_table([{"warnings": []}, {"warnings": ["consumer fell behind"]}])
    assert some.schema == none.schema
    assert some.column("warnings").to_pylist() == [[], ["consumer fell behind"]]

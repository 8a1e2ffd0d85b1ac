"""The sweep job's task and driver steps, without Spark: files, summaries, schema checks."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# These tests start no Spark, but sim.sweep.job imports pyspark when it is imported.
pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

from sim.output import MESSAGES_SCHEMA, REQUESTS_SCHEMA
from sim.sweep.errors import RunnerError
from sim.sweep.grid import Task
from sim.sweep.job import TaskResult, _check_schemas, execute_task

WORKERS = pa.field("burrow_num_workers", pa.int64(), False)
TASK = Task(task_id=5, point_id=2, seed=9, overrides=(("burrow.num_workers", 4),))


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


def test_a_task_writes_its_tables_and_returns_only_metadata(tmp_path: Path) -> None:
    result = execute_task(run_point, {"x": 1}, 2.0, str(tmp_path), {2: [(WORKERS, 4)]}, TASK)
    assert (result.task_id, result.point_id, result.seed) == (5, 2, 9)
    assert dict(result.summary) == {"run_seed": 9}
    assert dict(result.rows) == {"messages": 1, "requests": 0}
    stored = pq.read_table(tmp_path / "messages" / "point_id=2" / "seed-9.parquet")
    assert stored.to_pylist() == [{"seed": 9, "burrow_num_workers": 4, "message_id": 9}]
    assert not (tmp_path / "run_summary").exists()  # the driver writes the summaries


def test_a_summary_must_have_one_row(tmp_path: Path) -> None:
    def two_rows(*args: Any) -> dict[str, pa.Table]:
        return tables_for(2, summary_rows=2)

    with pytest.raises(RunnerError, match="point 2 seed 9: 'run_summary' has 2 rows, not 1"):
        execute_task(two_rows, {}, None, str(tmp_path), {2: []}, TASK)


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

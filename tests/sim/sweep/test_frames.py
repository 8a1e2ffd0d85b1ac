"""``sim.load_sweep``: a finished sweep's outputs as DataFrames, read without Spark (the sweep
itself is the session's ``finished_sweep``, run on Spark)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

import sim
from sim.sweep.errors import SweepError
from sim.sweep.manifest import Manifest
from tests.sim.sweep.conftest import FinishedSweep


def test_load_sweep_gives_the_summary_per_seed_and_runs_as_frames(
    finished_sweep: FinishedSweep,
) -> None:
    out = finished_sweep.out_dir
    sweep = sim.load_sweep(out)
    assert sweep.knobs == {
        "burrow.num_workers": "burrow_num_workers",
        "burrow.commit_interval_ms": "burrow_commit_interval_ms",
    }
    summary = sweep.summary
    assert list(summary.columns[:4]) == [
        "point_id", "burrow_num_workers", "burrow_commit_interval_ms", "seeds"
    ]  # fmt: skip
    assert len(summary) == 4 and (summary["seeds"] == 2).all()
    dtypes = summary.dtypes.astype(str)
    assert dtypes["point_id"] == "Int32" and dtypes["burrow_num_workers"] == "Int64"
    assert dtypes["send_to_commit_p99_ms"] == "float64"
    assert dtypes["never_committed"] == "float64"  # a mean over seeds
    # The same numbers as the Parquet file, row for row.
    expected = pq.read_table(out / "summary.parquet").to_pylist()
    assert summary["send_to_commit_p99_ms"].tolist() == [
        row["send_to_commit_p99_ms"] for row in expected
    ]
    per_seed = sweep.per_seed
    assert len(per_seed) == 8 and per_seed["never_committed"].dtype == "Int64"
    assert per_seed[["point_id", "seed"]].drop_duplicates().shape[0] == 8
    assert len(sweep.runs) == 8 and set(sweep.runs["seed"]) == {1, 2}


def test_records_come_ordered_by_point_and_seed_with_the_knobs_in_front(
    finished_sweep: FinishedSweep,
) -> None:
    sweep = sim.load_sweep(finished_sweep.out_dir)
    assert {"messages", "requests", "run_summary"} <= set(sweep.tables)
    messages = sweep.records("messages")
    manifest = Manifest.read(finished_sweep.out_dir)
    assert len(messages) == manifest.tables["messages"].rows
    assert list(messages.columns[:4]) == [
        "point_id", "seed", "burrow_num_workers", "burrow_commit_interval_ms"
    ]  # fmt: skip
    keys = list(zip(messages["point_id"], messages["seed"], strict=True))
    assert keys == sorted(keys)
    assert messages["committed_us"].dtype == "Int64" and messages["topic"].dtype == "category"
    for point_id, knobs in manifest.points.items():
        rows = messages[messages["point_id"] == point_id]
        assert set(rows["burrow_num_workers"]) == {knobs["burrow.num_workers"]}
    with pytest.raises(SweepError, match="no record table 'nope'"):
        sweep.records("nope")


def test_load_sweep_refuses_a_directory_without_a_finished_sweep(tmp_path: Path) -> None:
    with pytest.raises(SweepError):
        sim.load_sweep(tmp_path)

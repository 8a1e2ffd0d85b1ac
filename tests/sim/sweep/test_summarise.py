"""The per-point summary the driver computes from the per-seed table (no Spark session)."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

from sim.core.statistics import mean_confidence_interval
from sim.sweep.analysis import summarise
from sim.sweep.statistics import metrics


def test_each_point_gets_its_knobs_its_seeds_and_a_mean_and_interval_per_statistic() -> None:
    # Point 2 ran three seeds (one without a commit latency), point 0 one seed; point 1 has
    # no finished run, so it has no row.
    values: dict[int, list[float | None]] = {2: [10.0, None, 16.0], 0: [4.0]}
    rows = [(p, seed, v) for p, vs in values.items() for seed, v in enumerate(vs, start=1)]
    per_seed = pa.table({
        "point_id": pa.array([p for p, _, _ in rows], pa.int32()),
        "seed": pa.array([s for _, s, _ in rows], pa.int64()),
        **{m: pa.array([float(s) for _, s, _ in rows]) for m in metrics()},
    })  # fmt: skip
    per_seed = per_seed.set_column(
        per_seed.schema.get_field_index("commit_p99_ms"), "commit_p99_ms",
        pa.array([v for _, _, v in rows], pa.float64()),
    )  # fmt: skip
    points = pa.table({
        "point_id": pa.array([0, 1, 2], pa.int32()),
        "burrow_num_workers": pa.array([4, 8, 16], pa.int64()),
    })  # fmt: skip
    summary = summarise(per_seed, points)
    assert summary.column_names[:3] == ["point_id", "burrow_num_workers", "seeds"]
    assert summary.schema.field("point_id").type == pa.int32()
    assert summary.column("point_id").to_pylist() == [0, 2]
    assert summary.column("burrow_num_workers").to_pylist() == [4, 16]
    assert summary.column("seeds").to_pylist() == [1, 3]
    assert summary.column("commit_p99_ms").to_pylist() == [4.0, 13.0]
    interval = mean_confidence_interval([10.0, 16.0])
    [one_seed, two_values] = summary.column("commit_p99_ms_ci95").to_pylist()
    assert one_seed is None and math.isclose(two_values, interval.half_width)
    seeds_ci = summary.column("throughput_msg_s_ci95").to_pylist()
    assert seeds_ci[0] is None and math.isclose(
        seeds_ci[1], mean_confidence_interval([1.0, 2.0, 3.0]).half_width
    )

"""Latency statistics in milliseconds: nearest-rank percentiles of microsecond columns.

Percentiles are nearest-rank (the smallest observed value with at least p% of the
observations at or below it), so every reported value was observed; they are computed with
exact fractions, so ranks have no rounding error. Used by the run summary
(:mod:`sim.output.summary`) and its consume-proxy section (:mod:`sim.output.proxy_summary`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["PERCENTILES", "column_values", "latency_stats"]

PERCENTILES: tuple[tuple[str, int, int], ...] = (
    ("p50", 50, 100),
    ("p90", 90, 100),
    ("p99", 99, 100),
    ("p99.9", 999, 1000),
)
"""(name, numerator, denominator): exact fractions, so ranks have no rounding error."""


def latency_stats(values_us: np.ndarray[Any, Any]) -> dict[str, float | int | None]:
    """count, mean, nearest-rank percentiles and max of microsecond values, in ms."""
    count = int(values_us.size)
    stats: dict[str, float | int | None] = {"count": count}
    if count == 0:
        stats.update({"mean_ms": None, **{f"{p[0]}_ms": None for p in PERCENTILES}, "max_ms": None})
        return stats
    stats["mean_ms"] = round(float(values_us.mean()) / 1000, 3)
    ordered = np.sort(values_us)
    for name, numerator, denominator in PERCENTILES:
        rank = -(-count * numerator // denominator)  # ceil(count * p), exactly
        stats[f"{name}_ms"] = int(ordered[max(rank, 1) - 1]) / 1000
    stats["max_ms"] = int(ordered[-1]) / 1000
    return stats


def column_values(table: pa.Table, name: str, mask: pa.ChunkedArray | None) -> np.ndarray[Any, Any]:
    """The non-null values of integer column ``name`` of ``table`` (of the rows ``mask``
    selects, if given) as int64."""
    column = table.column(name)
    if mask is not None:
        column = column.filter(mask)
    return np.asarray(column.drop_null().to_numpy(zero_copy_only=False), dtype=np.int64)

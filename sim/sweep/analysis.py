"""The analysis: per-seed statistics in Spark SQL, then per-point means with 95% CIs.

Per run (point, seed), with the run's warmup and duration from its ``run_summary`` row;
latencies, duplicates and commit failures count messages and requests *sent* at or after the
warmup, as the simulator's own summary does:

* ``<latency>_<pNN>_ms`` for produce (successful sends only), end-to-end, commit
  (processing to commit) and send-to-commit latency, at p50, p90, p99 and p99.9: **exact
  nearest-rank percentiles** (``percentile_disc``: the smallest observed value with at least
  that fraction of the observations at or below it), the definition
  :mod:`sim.output.summary` uses, so a run's numbers match its summary; one
  ``percentile_disc`` per latency computes its four percentiles together;
* ``throughput_msg_s``: messages whose processing finished inside ``[warmup, duration]``,
  per second of that window;
* ``duplicates``: messages delivered more than once; ``commit_failures``: OffsetCommit
  responses with an error;
* ``sent_after_warmup`` and ``never_acked`` (no successful acknowledgement),
  ``never_delivered``, ``never_processed``, ``never_committed``: what the summary's
  ``unfinished`` section counts, the messages sent after the warmup that never got there by
  the end of the run (a latency only covers the messages that did);
* ``lost_acked_acks_all``, ``lost_acked_acks_1``, ``sent_absent_acks_0``,
  ``duplicated_in_log``, ``retained_out``: the summary's ``loss`` counts, over the whole run
  (messages acknowledged -- for acks=0 written -- but absent from the final leader logs and
  not deleted by retention; in the logs more than once; deleted by retention);
* ``warnings``: how many warnings the run's summary gave (see ``report.md`` for the text);
* with a consume proxy (the runs have a ``proxy`` table), over its records sent at or after
  the warmup: ``proxy_redelivery_rate`` and ``proxy_duplicate_rate`` (extra deliveries per
  record delivered, extra completions per record completed), ``proxy_redeliveries``,
  ``proxy_duplicates``, ``proxy_expired_leases``, ``proxy_cancels``, ``proxy_archived``,
  ``proxy_never_acknowledged``, ``proxy_never_committed``, and nearest-rank percentiles of
  ``proxy_send_to_ack``, ``proxy_ack_to_commit`` and ``proxy_send_to_commit`` latency: the
  run summary's ``proxy`` section (:mod:`sim.output.proxy_summary`).

The names are :mod:`sim.sweep.statistics`'.

Per point, every statistic is summarised across its seeds as the mean of the per-seed values
plus or minus the half-width of a Student-t 95% confidence interval for that mean,
``t(0.975, n - 1) * s / sqrt(n)`` over the ``n`` seeds that have a value (``_ci95`` columns;
null with fewer than two seeds): :func:`~sim.core.statistics.mean_confidence_interval`, as
``sim run --seeds`` computes it. So ``commit_p99_ms`` +- ``commit_p99_ms_ci95`` is a CI of the
expected per-run p99, not of a pooled percentile. Seeds are independent replications.

Spark does the one pass over the records (a single SQL query and job); the per-seed table it
returns has one row per run, so the driver sorts it and summarises it per point itself: a
second Spark query over a few rows cost more in planning, code generation and a shuffle than
the arithmetic (see docs/benchmarks.md, "A sweep's fixed cost").

Outputs: ``OUT/per_seed.{parquet,csv}`` and ``OUT/summary.{parquet,csv}``, single files
written by the driver (they hold one row per run and per point).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from sim.core.statistics import mean_confidence_interval
from sim.output.result import PROXY_TABLE
from sim.sweep.errors import SweepError
from sim.sweep.manifest import Manifest
from sim.sweep.statistics import (
    LATENCIES,
    LOSS,
    PROXY_COUNTS,
    PROXY_LATENCIES,
    QUANTILES,
    UNFINISHED,
    metrics,
)
from sim.sweep.tables import knob_type

REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "messages": (
        "sent_us", "ack_error", "acked_us", "delivered_us", "processed_us", "committed_us",
        "duplicate", "acks", "log_copies", "retained_out", *(c for _, c, _ in LATENCIES),
    ),
    "requests": ("api", "error", "sent_us"),
    "run_summary": ("run_warmup_us", "run_duration_us", "warnings"),
}  # fmt: skip
"""The columns the analysis reads, per records table."""
PROXY_COLUMNS = (
    "sent_us", "deliveries", "completions", "expired", "cancels", "archived", "acknowledged_us",
    "committed_us", *(c for _, c in PROXY_LATENCIES),
)  # fmt: skip
"""The columns of the ``proxy`` table the analysis reads, when the runs have one."""
COMMIT_API = "OffsetCommit"
CONFIDENCE = 0.95


def _percentiles(name: str, expression: str) -> str:
    """One ``percentile_disc`` computing the four :data:`QUANTILES` of ``expression`` (null
    for the rows left out), as ``<name>_percentiles``."""
    fractions = ", ".join(str(fraction) for _, fraction in QUANTILES)
    return (
        f"percentile_disc(array({fractions})) WITHIN GROUP (ORDER BY {expression}) "
        f"AS {name}_percentiles"
    )


def _quantiles(alias: str, name: str) -> list[str]:
    """The four quantile columns (ms) of ``<alias>.<name>_percentiles``."""
    return [
        f"{alias}.{name}_percentiles[{i}] / 1000.0 AS {name}_{q}_ms"
        for i, (q, _) in enumerate(QUANTILES)
    ]


def _proxy_sql() -> tuple[str, str]:
    """(the CTE of the consume proxy's statistics, the columns it adds to the per-seed
    table): over the ``proxy`` records sent at or after the warmup; the counts of a run
    without such a record are 0, its rates and latencies null."""
    aggregates = [
        *(_percentiles(name, f"p.{column}") for name, column in PROXY_LATENCIES),
        *(f"{expression} AS {name}" for name, expression in PROXY_COUNTS),
    ]
    selected = ",\n".join(aggregates)
    cte = f"""
    proxy_stats AS (
      SELECT p.point_id, p.seed,
        {selected}
      FROM proxy p JOIN windows w ON p.point_id = w.point_id AND p.seed = w.seed
      WHERE p.sent_us >= w.warmup_us
      GROUP BY p.point_id, p.seed
    ),"""
    columns = [
        f"x.{name}" if name.endswith("_rate") else f"coalesce(x.{name}, 0) AS {name}"
        for name, _ in PROXY_COUNTS
    ] + [column for name, _ in PROXY_LATENCIES for column in _quantiles("x", name)]
    return cte, "".join(f",\n      {column}" for column in columns)


def _per_seed_sql(*, proxy: bool = False) -> str:
    """The per-seed query; with ``proxy``, the consume proxy's statistics after the others."""
    percentiles = ",\n".join(
        _percentiles(
            name, f"CASE WHEN m.sent_us >= w.warmup_us AND {condition} THEN m.{column} END"
        )
        for name, column, condition in LATENCIES
    )
    latencies = ",\n".join(column for name, _, _ in LATENCIES for column in _quantiles("s", name))
    unfinished = ",\n".join(
        f"count_if(m.sent_us >= w.warmup_us AND ({condition})) AS {name}"
        for name, condition in UNFINISHED
    )
    loss = ",\n".join(f"count_if({condition}) AS {name}" for name, condition in LOSS)
    counts = "".join(
        f"coalesce(s.{name}, 0) AS {name},\n"
        for name in ("sent_after_warmup", *dict(UNFINISHED), *dict(LOSS))
    )
    proxy_cte, proxy_columns = _proxy_sql() if proxy else ("", "")
    proxy_join = (
        "LEFT JOIN proxy_stats x ON w.point_id = x.point_id AND w.seed = x.seed" if proxy else ""
    )
    return f"""
    WITH message_stats AS (
      SELECT m.point_id, m.seed,
        {percentiles},
        count_if(m.processed_us >= w.warmup_us AND m.processed_us <= w.duration_us)
          / ((w.duration_us - w.warmup_us) / 1e6) AS throughput_msg_s,
        count_if(m.duplicate AND m.sent_us >= w.warmup_us) AS duplicates,
        count_if(m.sent_us >= w.warmup_us) AS sent_after_warmup,
        {unfinished},
        {loss}
      FROM messages m JOIN windows w ON m.point_id = w.point_id AND m.seed = w.seed
      GROUP BY m.point_id, m.seed, w.warmup_us, w.duration_us
    ),{proxy_cte}
    request_stats AS (
      SELECT r.point_id, r.seed,
        count_if(r.api = '{COMMIT_API}' AND r.error != 0) AS commit_failures
      FROM requests r JOIN windows w ON r.point_id = w.point_id AND r.seed = w.seed
      WHERE r.sent_us >= w.warmup_us
      GROUP BY r.point_id, r.seed
    )
    SELECT w.point_id, w.seed,
      {latencies},
      coalesce(s.throughput_msg_s, 0.0) AS throughput_msg_s,
      coalesce(s.duplicates, 0) AS duplicates,
      coalesce(q.commit_failures, 0) AS commit_failures,
      {counts}
      w.warnings{proxy_columns}
    FROM windows w
    LEFT JOIN message_stats s ON w.point_id = s.point_id AND w.seed = s.seed
    LEFT JOIN request_stats q ON w.point_id = q.point_id AND w.seed = q.seed
    {proxy_join}
    """


def summarise(per_seed: pa.Table, points: pa.Table) -> pa.Table:
    """Per point of ``per_seed`` (one row per run), ordered by ``point_id``: the point's row of
    ``points`` (its knob columns), ``seeds`` (its runs) and, per statistic, the mean over the
    runs that have a value and the half-width of its 95% interval (see the module docstring):
    every statistic of :func:`~sim.sweep.statistics.metrics` that ``per_seed`` has (the
    consume proxy's only when the runs had one).
    """
    rows = per_seed.to_pydict()
    runs: dict[int, list[int]] = {}
    for row, point_id in enumerate(rows["point_id"]):
        runs.setdefault(point_id, []).append(row)
    ids = sorted(runs)
    position = {point_id: row for row, point_id in enumerate(points["point_id"].to_pylist())}
    knobs = points.take([position[point_id] for point_id in ids])
    columns: dict[str, pa.Array] = {
        **{name: knobs[name].combine_chunks() for name in points.column_names},
        "seeds": pa.array([len(runs[point_id]) for point_id in ids], pa.int64()),
    }
    for metric in (m for m in metrics(proxy=True) if m in rows):
        means, half_widths = [], []
        for point_id in ids:
            values = [float(v) for row in runs[point_id] if (v := rows[metric][row]) is not None]
            means.append(statistics.fmean(values) if values else None)
            half_widths.append(
                mean_confidence_interval(values, CONFIDENCE).half_width
                if len(values) >= 2
                else None
            )
        columns[metric] = pa.array(means, pa.float64())
        columns[f"{metric}_ci95"] = pa.array(half_widths, pa.float64())
    return pa.table(columns)


def points_table(manifest: Manifest) -> pa.Table:
    """One row per point: ``point_id`` and the value of every grid knob (by column)."""
    columns: dict[str, pa.Array] = {
        "point_id": pa.array(sorted(manifest.points), pa.int32()),
    }
    for knob in manifest.knobs:
        values = [manifest.points[p][knob.name] for p in sorted(manifest.points)]
        columns[knob.column] = pa.array(values, knob_type(knob.values))
    return pa.table(columns)


def analyse(spark: SparkSession, out_dir: Path) -> tuple[pa.Table, pa.Table]:
    """Run the analysis on a finished sweep in ``out_dir``; return (per_seed, summary).

    Both are also written to ``out_dir`` (see the module docstring). Raises
    :class:`SweepError` if ``out_dir`` holds no finished sweep or its records lack a column
    of :data:`REQUIRED_COLUMNS` (or, with a ``proxy`` table, of :data:`PROXY_COLUMNS`).
    """
    manifest = Manifest.read(out_dir)
    proxy = PROXY_TABLE in manifest.tables
    needs = {**REQUIRED_COLUMNS, **({PROXY_TABLE: PROXY_COLUMNS} if proxy else {})}
    for name, needed in needs.items():
        info = manifest.tables.get(name)
        missing = [c for c in needed if info is None or c not in info.columns]
        if missing:
            raise SweepError(
                f"{out_dir}: the analysis needs column {missing[0]!r} of table {name!r}, which "
                "this sweep's run function did not produce"
            )
    for name in needs:
        path = out_dir / manifest.tables[name].path
        spark.read.parquet(str(path)).createOrReplaceTempView(name)
    spark.sql(
        "SELECT point_id, seed, run_warmup_us AS warmup_us, run_duration_us AS duration_us, "
        "CAST(size(warnings) AS BIGINT) AS warnings FROM run_summary"
    ).createOrReplaceTempView("windows")
    # One pass over the records in Spark; the per-seed table is one row per run.
    per_seed = spark.sql(_per_seed_sql(proxy=proxy)).toArrow()
    per_seed = per_seed.sort_by([("point_id", "ascending"), ("seed", "ascending")])
    summary_table = summarise(per_seed, points_table(manifest))
    for stem, table in (("per_seed", per_seed), ("summary", summary_table)):
        pq.write_table(table, out_dir / f"{stem}.parquet")
        pyarrow.csv.write_csv(table, str(out_dir / f"{stem}.csv"))
    return per_seed, summary_table

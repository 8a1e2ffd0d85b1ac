"""The sweep report: ``OUT/report.md`` with tables and PNG plots (``OUT/plots/*.png``).

Besides the statistics per point, the report lists the warnings of every run (read from the
``run_summary`` records: fell behind, empty statistics, faults that change nothing; see
``docs/simulator.md``), so a point whose latencies look fine because its consumer could not
keep up says so.

Plots put the study's ``[report] x`` knob on the horizontal axis and draw one line per value
of its ``series`` knob, with error bars of the 95% CI across seeds; when the grid has more
knobs, each combination of their values gets its own panel (at most :data:`MAX_PANELS`). An
axis whose values span a factor of ten or more is logarithmic.
Drawn on matplotlib's Agg canvas without pyplot, so no display or global state is needed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sim.sweep.manifest import KnobInfo, Manifest
from sim.sweep.study import KnobValue

MAX_PANELS = 12
PLOTS: tuple[tuple[str, str], ...] = (
    ("send_to_commit_p99_ms", "p99 send-to-commit latency (ms)"),
    ("commit_p99_ms", "p99 processing-to-commit latency (ms)"),
    ("commit_p50_ms", "p50 processing-to-commit latency (ms)"),
    ("end_to_end_p99_ms", "p99 end-to-end latency (ms)"),
    ("produce_p99_ms", "p99 produce latency (ms)"),
    ("throughput_msg_s", "throughput (messages/s processed)"),
    ("never_committed", "messages sent after the warmup never committed"),
)
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("send_to_commit_p50_ms", "send-to-commit p50 ms"),
    ("send_to_commit_p99_ms", "send-to-commit p99 ms"),
    ("commit_p50_ms", "commit p50 ms"),
    ("commit_p99_ms", "commit p99 ms"),
    ("commit_p99_9_ms", "commit p99.9 ms"),
    ("end_to_end_p99_ms", "e2e p99 ms"),
    ("produce_p99_ms", "produce p99 ms"),
    ("throughput_msg_s", "msg/s"),
    ("never_committed", "never committed"),
    ("duplicates", "duplicates"),
    ("commit_failures", "commit failures"),
    ("warnings", "warnings"),
)
_COUNTS = ("throughput_msg_s", "never_committed", "duplicates", "commit_failures", "warnings")
_PNG_OPTIONS: dict[str, Any] = {"format": "png", "dpi": 100, "metadata": {"Software": None}}


def write_report(out_dir: Path, summary: pa.Table) -> Path:
    """Write ``out_dir/report.md`` and its plots for the sweep whose analysis is ``summary``
    (an empty table when no run finished); the report lists the runs that failed.

    Returns the report's path. Raises :class:`~sim.sweep.errors.SweepError` if ``out_dir``
    holds no finished sweep.
    """
    manifest = Manifest.read(out_dir)
    rows = summary.to_pylist()
    plots = _write_plots(out_dir / "plots", manifest, rows)
    path = out_dir / "report.md"
    text = _markdown(manifest, rows, plots, _run_warnings(out_dir, manifest))
    path.write_text(text, encoding="utf-8")
    return path


def _run_warnings(out_dir: Path, manifest: Manifest) -> list[tuple[int, int, str]]:
    """(point, seed, warning) of every run, in point and seed order, from the ``run_summary``
    records (none if they have no ``warnings`` column)."""
    info = manifest.tables.get("run_summary")
    if info is None or "warnings" not in info.columns:
        return []
    found: list[tuple[int, int, str]] = []
    for point_id in sorted(manifest.points):
        folder = out_dir / info.path / f"point_id={point_id}"
        runs = pq.read_table(folder, columns=["seed", "warnings"]).to_pylist()
        for run in sorted(runs, key=lambda r: int(r["seed"])):
            found.extend((point_id, int(run["seed"]), text) for text in run["warnings"] or [])
    return found


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _with_ci(row: Mapping[str, Any], metric: str) -> str:
    digits = 1 if metric in _COUNTS else 3
    mean, ci = row.get(metric), row.get(f"{metric}_ci95")
    if mean is None:
        return "-"
    return _fmt(mean, digits) + ("" if ci is None else f" ± {_fmt(ci, digits)}")


def _table(head: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return lines


def _markdown(
    manifest: Manifest,
    rows: Sequence[Mapping[str, Any]],
    plots: Sequence[Path],
    warnings: Sequence[tuple[int, int, str]],
) -> str:
    n_runs = len(manifest.points) * len(manifest.seeds)
    duration = "the scenario's own" if manifest.duration_s is None else f"{manifest.duration_s} s"
    limit = "none" if manifest.time_limit_s is None else f"{manifest.time_limit_s:g} s"
    failed = (
        f"; **{len(manifest.failed)} failed** (listed under Failed runs)" if manifest.failed else ""
    )
    lines = [
        f"# Sweep report: {manifest.study}",
        "",
        *([manifest.description, ""] if manifest.description else []),
        f"- base scenario: `{manifest.scenario}`; simulated duration per run: {duration}",
        f"- {len(manifest.points)} points x {len(manifest.seeds)} seeds "
        f"({', '.join(map(str, manifest.seeds))}) = {n_runs} runs, one Spark task each"
        f"{failed}; wall-time limit per run: {limit}",
        f"- run function: `{manifest.runner}`; Spark {manifest.spark_version} on "
        f"`{manifest.master}`; sweep wall time {manifest.wall_s:.1f} s",
    ]
    if manifest.fixed:
        lines.append(
            "- fixed overrides: " + ", ".join(f"`{k} = {v}`" for k, v in manifest.fixed.items())
        )
    lines += ["", "## Grid", ""]
    lines += _table(
        ["knob", "column", "values"],
        [[f"`{k.name}`", f"`{k.column}`", ", ".join(map(str, k.values))] for k in manifest.knobs],
    )
    lines += ["", "## Results per point", ""]
    lines += [
        "Mean over seeds ± half-width of the 95% Student-t confidence interval of that mean "
        "(what the interval covers: the expected value of the per-run statistic). Latency "
        "percentiles are exact nearest-rank percentiles of each run's messages sent after its "
        "warmup; send-to-commit runs from sent to committed, commit from processed to "
        "committed, and both only cover the messages that got committed: *never committed* "
        "counts those sent after the warmup that did not by the end of the run. Never "
        "committed, duplicates, commit failures and warnings are counts per run.",
        "",
    ]
    knob_heads = [k.column for k in manifest.knobs]
    lines += _table(
        ["point", *knob_heads, "seeds", *(label for _, label in TABLE_COLUMNS)],
        [
            [
                str(row["point_id"]),
                *(_fmt(row[c]) for c in knob_heads),
                str(row["seeds"]),
                *(_with_ci(row, metric) for metric, _ in TABLE_COLUMNS),
            ]
            for row in rows
        ],
    )
    lines += ["", "## Warnings", "", *_warning_lines(manifest, warnings)]
    if manifest.failed:
        lines += ["", "## Failed runs", ""]
        lines += [
            "These runs raised or ran out of time; they are left out of every table above. "
            "Running the sweep again into the same directory runs them again (and only them).",
            "",
        ]
        lines += _table(
            ["point", *knob_heads, "seed", "error"],
            [
                [
                    str(run.point_id),
                    *(_fmt(manifest.points[run.point_id][k.name]) for k in manifest.knobs),
                    str(run.seed),
                    run.error.replace("|", "\\|"),
                ]
                for run in manifest.failed
            ],
        )
    if plots:
        lines += ["", "## Plots", ""]
        lines += [f"![{p.stem}](plots/{p.name})" for p in plots]
    lines += [
        "",
        "## Files",
        "",
        "- `summary.csv`, `summary.parquet`: every statistic per point (p50, p90, p99, p99.9 of "
        "produce, end-to-end, commit and send-to-commit latency; throughput; duplicates; "
        "commit failures; messages never acknowledged, delivered, processed, committed; "
        "warnings), each with its `_ci95` half-width",
        "- `per_seed.csv`, `per_seed.parquet`: the same statistics per run",
        "- `records/<table>/point_id=<id>/`: the runs' records as Parquet "
        f"({', '.join(f'{name}: {info.rows} rows' for name, info in manifest.tables.items())})",
        "- `runs.csv`: wall time (and error, if any) of every simulation; `sweep.json`: the "
        "sweep's manifest; `tasks/`: each run's outcome, which a rerun resumes from",
        "",
    ]
    return "\n".join(lines)


def _warning_lines(manifest: Manifest, warnings: Sequence[tuple[int, int, str]]) -> list[str]:
    if not warnings:
        return ["No run gave a warning."]
    runs = len({(point, seed) for point, seed, _ in warnings})
    total = len(manifest.points) * len(manifest.seeds)
    lines = [
        f"{runs} of {total} runs gave warnings (criteria: `docs/simulator.md`, Warnings); "
        "their latencies do not tell the whole story:",
        "",
    ]
    for point, seed, text in warnings:
        knobs = ", ".join(f"{name}={value}" for name, value in manifest.points[point].items())
        lines.append(f"- point {point} ({knobs}), seed {seed}: {text}")
    return lines


def _axis_knobs(manifest: Manifest) -> tuple[KnobInfo, KnobInfo | None, list[KnobInfo]] | None:
    if manifest.report_x is None:
        return None
    x = manifest.knob(manifest.report_x)
    series = manifest.knob(manifest.report_series) if manifest.report_series else None
    panels = [k for k in manifest.knobs if k.name not in (x.name, getattr(series, "name", None))]
    return x, series, [k for k in panels if len(k.values) > 1]


def _write_plots(folder: Path, manifest: Manifest, rows: Sequence[Mapping[str, Any]]) -> list[Path]:
    axes_knobs = _axis_knobs(manifest)
    if axes_knobs is None or not rows:
        return []
    x, series, panel_knobs = axes_knobs
    combos = list(itertools.product(*(k.values for k in panel_knobs)))[:MAX_PANELS]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for metric, label in PLOTS:
        path = folder / f"{metric}.png"
        _plot(path, metric, label, rows, x, series, panel_knobs, combos)
        paths.append(path)
    return paths


def _spans_decade(values: Sequence[float]) -> bool:
    """True if the values are positive and the largest is at least ten times the smallest."""
    return bool(values) and min(values) > 0 and max(values) >= 10 * min(values)


def _plot(
    path: Path,
    metric: str,
    label: str,
    rows: Sequence[Mapping[str, Any]],
    x: KnobInfo,
    series: KnobInfo | None,
    panel_knobs: Sequence[KnobInfo],
    combos: Sequence[tuple[KnobValue, ...]],
) -> None:
    ncols = min(3, len(combos))
    nrows = math.ceil(len(combos) / ncols)
    figure = Figure(figsize=(6.5 * ncols, 4.5 * nrows), layout="constrained")
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in x.values)
    positions = {v: (v if numeric else i) for i, v in enumerate(x.values)}
    log_x = numeric and _spans_decade([float(v) for v in x.values])
    log_y = _spans_decade([float(r[metric]) for r in rows if r[metric] is not None])
    for index, combo in enumerate(combos):
        axes = figure.add_subplot(nrows, ncols, index + 1)
        fixed = dict(zip((k.column for k in panel_knobs), combo, strict=True))
        panel = [r for r in rows if all(r[c] == v for c, v in fixed.items())]
        for value in series.values if series else [None]:
            line = [r for r in panel if series is None or r[series.column] == value]
            line = sorted(
                (r for r in line if r[metric] is not None), key=lambda r: positions[r[x.column]]
            )
            axes.errorbar(
                [positions[r[x.column]] for r in line],
                [r[metric] for r in line],
                yerr=[r[f"{metric}_ci95"] or 0.0 for r in line],
                marker="o",
                capsize=3,
                label=None if series is None else f"{series.name.rsplit('.', 1)[-1]}={value}",
            )
        if log_x:
            axes.set_xscale("log")
        if log_y:
            axes.set_yscale("log")
        axes.set_xticks(list(positions.values()), [str(v) for v in x.values])
        axes.minorticks_off()
        axes.set_xlabel(x.name)
        axes.set_ylabel(label)
        if fixed:
            axes.set_title(", ".join(f"{c}={v}" for c, v in fixed.items()), fontsize=9)
        if series is not None:
            axes.legend(fontsize=8)
        axes.grid(True, alpha=0.3)
    figure.suptitle(f"{label}\nmean over seeds, error bars: 95% CI", fontsize=11)
    FigureCanvasAgg(figure)
    figure.savefig(path, **_PNG_OPTIONS)

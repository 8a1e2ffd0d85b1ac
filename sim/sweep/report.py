"""The sweep report: ``OUT/report.md`` with PNG plots in ``OUT/plots/``, and the same report as
one self-contained file, ``OUT/report.html`` (plots inlined as base64 PNG, tables as HTML).

The report is built once as a list of blocks (headings, paragraphs, bullet lists, tables,
images), then rendered twice: as Markdown and as HTML. Text may use two inline marks,
```code``` and ``**bold**``, which both renderers understand.

Besides the statistics per point, the report lists the warnings of every run (read from the
``run_summary`` records: fell behind, empty statistics, faults that change nothing; see
``docs/simulator.md``), so a point whose latencies look fine because its consumer could not
keep up says so, and what the sweep's fixed cost was (:class:`SweepTimings`: Spark's start-up
and shutdown, the job beyond its simulations, the analysis).

Plots: one per statistic the study's ``[report] metrics`` names (default
:data:`~sim.sweep.study.DEFAULT_REPORT_METRICS`), with the ``[report] x`` knob on the
horizontal axis and one line per value of its ``series`` knob, with error bars of the 95% CI
across seeds; when the grid has more knobs, each combination of their values gets its own
panel (at most :data:`MAX_PANELS`). An x axis whose values span a factor of ten or more is
logarithmic. So that series that coincide stay visible, each has its own marker and line style
and is shifted sideways by a small fraction of the axis (:data:`DODGE`). The y axis starts at
0 (a linear axis) or spans at least a factor of :data:`MIN_LOG_SPAN` (a logarithmic one, used
when the values span a factor of ten), so noise between seeds is not drawn as a canyon.
Latency plots draw the study's ``[report] references`` as horizontal lines, and the line
latency = x when ``x`` is a commit interval (a message waits up to one interval for its
commit) or the consume proxy's lease (a record never acknowledged holds back its partition's
commit for a lease). Drawn on matplotlib's Agg canvas without pyplot: no display or global
state needed.

A sweep whose runs have a consume proxy gets a second table per point, of the proxy's
statistics (:data:`PROXY_TABLE_COLUMNS`).
"""

from __future__ import annotations

import base64
import html
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.parquet as pq
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sim.sweep.manifest import KnobInfo, Manifest
from sim.sweep.statistics import COUNTS, label
from sim.sweep.study import KnobValue

MAX_PANELS = 12
DODGE = 0.012
"""Sideways shift between neighbouring series, as a fraction of the x axis's extent."""
MIN_LOG_SPAN = 10.0
"""The least ratio of top to bottom of a logarithmic y axis."""
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
    ("lost_acked_acks_all", "lost acks=all"),
    ("lost_acked_acks_1", "lost acks=1"),
    ("sent_absent_acks_0", "absent acks=0"),
    ("commit_failures", "commit failures"),
    ("warnings", "warnings"),
)
PROXY_TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("proxy_redelivery_rate", "redelivery rate"),
    ("proxy_duplicate_rate", "duplicate rate"),
    ("proxy_expired_leases", "expired leases"),
    ("proxy_cancels", "cancels"),
    ("proxy_send_to_ack_p99_ms", "send-to-ack p99 ms"),
    ("proxy_ack_to_commit_p50_ms", "ack-to-commit p50 ms"),
    ("proxy_ack_to_commit_p99_ms", "ack-to-commit p99 ms"),
    ("proxy_send_to_commit_p99_ms", "send-to-commit p99 ms"),
    ("proxy_never_acknowledged", "never acknowledged"),
    ("proxy_never_committed", "never committed"),
)
"""The consume proxy's columns of the report's second table (sweeps with a proxy)."""
COMMIT_INTERVAL_SUFFIX = "commit_interval_ms"
"""An ``x`` knob whose name ends so is a commit interval in ms (see the module docstring)."""
LEASE_SUFFIX = "lease_duration_ms"
"""An ``x`` knob whose name ends so is the consume proxy's lease (its ack timeout) in ms: a
record that is never acknowledged holds back its partition's commit for a whole lease."""
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LINESTYLES = ("-", "--", "-.", ":")
_PNG_OPTIONS: dict[str, Any] = {"format": "png", "dpi": 100, "metadata": {"Software": None}}


@attrs.frozen
class SweepTimings:
    """Wall times of a sweep's fixed costs, in seconds, for the report (None: not measured).

    ``session_start_s`` starts Spark (the JVM launch included); ``job_s`` is the sweep job,
    of which the simulations took ``simulation_s`` summed over the tasks on ``slots`` parallel
    task slots; ``analysis_s`` the analysis; ``session_stop_s`` stops Spark. ``kept_runs``
    runs finished in an earlier attempt were kept, not run (their time is in no figure).
    """

    session_start_s: float | None
    job_s: float
    simulation_s: float
    slots: int
    analysis_s: float | None
    session_stop_s: float | None
    kept_runs: int = 0

    @property
    def job_overhead_s(self) -> float:
        """The job's time beyond its simulations spread over the slots (never negative)."""
        return max(0.0, self.job_s - self.simulation_s / max(1, self.slots))

    @property
    def fixed_s(self) -> float:
        """Everything but the simulations: start, job overhead, analysis, stop."""
        parts = (self.session_start_s, self.analysis_s, self.session_stop_s)
        return self.job_overhead_s + sum(p for p in parts if p is not None)


@attrs.frozen
class _Heading:
    level: int
    text: str


@attrs.frozen
class _Paragraph:
    text: str


@attrs.frozen
class _Bullets:
    items: tuple[str, ...]


@attrs.frozen
class _Table:
    head: tuple[str, ...]
    body: tuple[tuple[str, ...], ...]


@attrs.frozen
class _Images:
    paths: tuple[Path, ...]


_Block = _Heading | _Paragraph | _Bullets | _Table | _Images


def write_report(out_dir: Path, summary: pa.Table, timings: SweepTimings | None = None) -> Path:
    """Write ``out_dir/report.md``, ``out_dir/report.html`` and the plots for the sweep whose
    analysis is ``summary`` (an empty table when no run finished); the report lists the runs
    that failed and, if given, the sweep's ``timings``.

    Returns the Markdown report's path. Raises :class:`~sim.sweep.errors.SweepError` if
    ``out_dir`` holds no finished sweep.
    """
    manifest = Manifest.read(out_dir)
    rows = summary.to_pylist()
    plots = _write_plots(out_dir / "plots", manifest, rows)
    blocks = _blocks(manifest, rows, plots, _run_warnings(out_dir, manifest), timings)
    path = out_dir / "report.md"
    path.write_text(_markdown(blocks, out_dir), encoding="utf-8")
    (out_dir / "report.html").write_text(_html(blocks, manifest.study), encoding="utf-8")
    return path


def _run_warnings(out_dir: Path, manifest: Manifest) -> list[tuple[int, int, str]]:
    """(point, seed, warning) of every finished run, in point and seed order, from the
    ``run_summary`` records (none if they have no ``warnings`` column; a point whose every
    run failed has no records)."""
    info = manifest.tables.get("run_summary")
    if info is None or "warnings" not in info.columns:
        return []
    found: list[tuple[int, int, str]] = []
    for point_id in sorted(manifest.points):
        folder = out_dir / info.path / f"point_id={point_id}"
        if not folder.is_dir():
            continue
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
    if metric.endswith("_rate"):
        digits = 4
    elif metric in COUNTS or (metric.startswith("proxy_") and not metric.endswith("_ms")):
        digits = 1
    else:
        digits = 3
    mean, ci = row.get(metric), row.get(f"{metric}_ci95")
    if mean is None:
        return "-"
    return _fmt(mean, digits) + ("" if ci is None else f" ± {_fmt(ci, digits)}")


def _blocks(
    manifest: Manifest,
    rows: Sequence[Mapping[str, Any]],
    plots: Sequence[Path],
    warnings: Sequence[tuple[int, int, str]],
    timings: SweepTimings | None,
) -> list[_Block]:
    n_runs = len(manifest.points) * len(manifest.seeds)
    duration = "the scenario's own" if manifest.duration_s is None else f"{manifest.duration_s} s"
    limit = "none" if manifest.time_limit_s is None else f"{manifest.time_limit_s:g} s"
    failed = (
        f"; **{len(manifest.failed)} failed** (listed under Failed runs)" if manifest.failed else ""
    )
    facts = [
        f"base scenario: `{manifest.scenario}`; simulated duration per run: {duration}",
        f"{len(manifest.points)} points x {len(manifest.seeds)} seeds "
        f"({', '.join(map(str, manifest.seeds))}) = {n_runs} runs, one Spark task each"
        f"{failed}; wall-time limit per run: {limit}",
        f"run function: `{manifest.runner}`; Spark {manifest.spark_version} on "
        f"`{manifest.master}`; sweep wall time {manifest.wall_s:.1f} s",
    ]
    if manifest.fixed:
        facts.append(
            "fixed overrides: " + ", ".join(f"`{k} = {v}`" for k, v in manifest.fixed.items())
        )
    if timings is not None:
        facts.append(_timings_line(timings))
    blocks: list[_Block] = [_Heading(1, f"Sweep report: {manifest.study}")]
    if manifest.description:
        blocks.append(_Paragraph(manifest.description))
    blocks += [_Bullets(tuple(facts)), _Heading(2, "Grid")]
    blocks.append(
        _table(
            ["knob", "column", "values"],
            [
                [f"`{k.name}`", f"`{k.column}`", ", ".join(map(str, k.values))]
                for k in manifest.knobs
            ],
        )
    )
    blocks += [
        _Heading(2, "Results per point"),
        _Paragraph(
            "Mean over seeds ± half-width of the 95% Student-t confidence interval of that mean "
            "(what the interval covers: the expected value of the per-run statistic). Latency "
            "percentiles are exact nearest-rank percentiles of each run's messages sent after "
            "its warmup; send-to-commit runs from sent to committed, commit from processed to "
            "committed, and both only cover the messages that got committed: *never committed* "
            "counts those sent after the warmup that did not by the end of the run. *Lost* "
            "counts the messages of the whole run acknowledged (for acks=0: written to the "
            "connection, *absent*) but missing from the final leader logs, not deleted by "
            "retention. Never committed, duplicates, lost, commit failures and warnings are "
            "counts per run."
        ),
    ]
    knob_heads = [k.column for k in manifest.knobs]
    blocks.append(
        _table(
            ["point", *knob_heads, "seeds", *(head for _, head in TABLE_COLUMNS)],
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
    )
    if rows and PROXY_TABLE_COLUMNS[0][0] in rows[0]:
        blocks += [
            _Heading(2, "Consume proxy per point"),
            _Paragraph(
                "Over the records of the proxy's topic sent after the warmup: the redelivery "
                "rate is the deliveries beyond each record's first per record delivered; the "
                "duplicate rate the completions beyond the first (the record processed to "
                "completion by another reader again) per record completed; send-to-ack runs "
                "from sent to the proxy accepting the acknowledgement, ack-to-commit from "
                "there to the answer of the OffsetCommit that passed the record."
            ),
            _table(
                ["point", *knob_heads, *(head for _, head in PROXY_TABLE_COLUMNS)],
                [
                    [
                        str(row["point_id"]),
                        *(_fmt(row[c]) for c in knob_heads),
                        *(_with_ci(row, metric) for metric, _ in PROXY_TABLE_COLUMNS),
                    ]
                    for row in rows
                ],
            ),
        ]
    blocks += [_Heading(2, "Warnings"), *_warning_blocks(manifest, warnings)]
    if manifest.failed:
        blocks += [
            _Heading(2, "Failed runs"),
            _Paragraph(
                "These runs raised or ran out of time; they are left out of every table above. "
                "Running the sweep again into the same directory runs them again (and only them)."
            ),
            _table(
                ["point", *knob_heads, "seed", "error"],
                [
                    [
                        str(run.point_id),
                        *(_fmt(manifest.points[run.point_id][k.name]) for k in manifest.knobs),
                        str(run.seed),
                        run.error,
                    ]
                    for run in manifest.failed
                ],
            ),
        ]
    if plots:
        blocks += [_Heading(2, "Plots"), _Images(tuple(plots))]
    tables = ", ".join(f"{name}: {info.rows} rows" for name, info in manifest.tables.items())
    blocks += [
        _Heading(2, "Files"),
        _Bullets(
            (
                "`report.md` and `plots/*.png`; `report.html`: this report in one file",
                "`summary.csv`, `summary.parquet`: every statistic per point (p50, p90, p99, "
                "p99.9 of produce, end-to-end, commit and send-to-commit latency; throughput; "
                "duplicates; commit failures; messages never acknowledged, delivered, processed, "
                "committed; messages acknowledged but lost per acks level, duplicated in and "
                "deleted by retention from the final leader logs; warnings), each with its "
                "`_ci95` half-width",
                "`per_seed.csv`, `per_seed.parquet`: the same statistics per run (with a "
                "consume proxy, its statistics too: `proxy_*`)",
                f"`records/<table>/point_id=<id>/`: the runs' records as Parquet ({tables})",
                "`runs.csv`: wall time (and error, if any) of every simulation; `sweep.json`: "
                "the sweep's manifest; `tasks/`: each run's outcome, which a rerun resumes from",
            )
        ),
    ]
    return blocks


def _timings_line(timings: SweepTimings) -> str:
    def seconds(value: float | None) -> str:
        return (
            "not measured (a session shared with the caller)" if value is None else f"{value:.1f} s"
        )

    return (
        f"fixed cost {timings.fixed_s:.1f} s: Spark start-up {seconds(timings.session_start_s)}, "
        f"job beyond its simulations {timings.job_overhead_s:.1f} s (job {timings.job_s:.1f} s, "
        f"simulations {timings.simulation_s:.1f} s summed over {timings.slots} task slots), "
        f"analysis {seconds(timings.analysis_s)}, Spark shutdown {seconds(timings.session_stop_s)}"
        + (
            f"; {timings.kept_runs} runs kept from an earlier attempt, not run again"
            if timings.kept_runs
            else ""
        )
    )


def _table(head: Sequence[str], body: Sequence[Sequence[str]]) -> _Table:
    return _Table(tuple(head), tuple(tuple(cells) for cells in body))


def _warning_blocks(manifest: Manifest, warnings: Sequence[tuple[int, int, str]]) -> list[_Block]:
    if not warnings:
        return [_Paragraph("No run gave a warning.")]
    runs = len({(point, seed) for point, seed, _ in warnings})
    total = len(manifest.points) * len(manifest.seeds)
    items = []
    for point, seed, text in warnings:
        knobs = ", ".join(f"{name}={value}" for name, value in manifest.points[point].items())
        items.append(f"point {point} ({knobs}), seed {seed}: {text}")
    return [
        _Paragraph(
            f"{runs} of {total} runs gave warnings (criteria: `docs/simulator.md`, Warnings); "
            "their latencies do not tell the whole story:"
        ),
        _Bullets(tuple(items)),
    ]


def _markdown(blocks: Sequence[_Block], out_dir: Path) -> str:
    lines: list[str] = []
    for block in blocks:
        if lines:
            lines.append("")
        if isinstance(block, _Heading):
            lines.append("#" * block.level + " " + block.text)
        elif isinstance(block, _Paragraph):
            lines.append(block.text)
        elif isinstance(block, _Bullets):
            lines += [f"- {item}" for item in block.items]
        elif isinstance(block, _Table):
            lines.append("| " + " | ".join(block.head) + " |")
            lines.append("|" + "---|" * len(block.head))
            lines += [
                "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
                for cells in block.body
            ]
        else:
            lines += [f"![{p.stem}]({p.relative_to(out_dir).as_posix()})" for p in block.paths]
    return "\n".join(lines) + "\n"


_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\*([^*]+)\*")


def _inline(text: str) -> str:
    """``text`` as HTML: escaped, with `code`, **bold** and *emphasis* marked up."""
    parts, last = [], 0
    for match in _INLINE.finditer(text):
        parts.append(html.escape(text[last : match.start()]))
        code, bold, emphasis = match.groups()
        if code is not None:
            parts.append(f"<code>{html.escape(code)}</code>")
        elif bold is not None:
            parts.append(f"<b>{html.escape(bold)}</b>")
        else:
            parts.append(f"<em>{html.escape(emphasis)}</em>")
        last = match.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)


_STYLE = (
    "body{font-family:sans-serif;max-width:75em;margin:1em auto;padding:0 1em}"
    "table{border-collapse:collapse;font-size:.85em}"
    "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}"
    "th{background:#eee}img{max-width:100%;display:block;margin:1em 0}"
)


def _html(blocks: Sequence[_Block], title: str) -> str:
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Sweep report: {html.escape(title)}</title><style>{_STYLE}</style></head><body>",
    ]
    for block in blocks:
        if isinstance(block, _Heading):
            out.append(f"<h{block.level}>{_inline(block.text)}</h{block.level}>")
        elif isinstance(block, _Paragraph):
            out.append(f"<p>{_inline(block.text)}</p>")
        elif isinstance(block, _Bullets):
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block.items) + "</ul>")
        elif isinstance(block, _Table):
            head = "".join(f"<th>{_inline(cell)}</th>" for cell in block.head)
            body = "".join(
                "<tr>" + "".join(f"<td>{_inline(cell)}</td>" for cell in cells) + "</tr>"
                for cells in block.body
            )
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        else:
            for path in block.paths:
                data = base64.b64encode(path.read_bytes()).decode("ascii")
                out.append(
                    f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'
                )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


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
    for metric in manifest.report_metrics:
        path = folder / f"{metric}.png"
        references = dict(manifest.report_references) if metric.endswith("_ms") else {}
        _plot(path, metric, rows, x, series, panel_knobs, combos, references)
        paths.append(path)
    return paths


def _spans_decade(values: Sequence[float]) -> bool:
    """True if the values are positive and the largest is at least ten times the smallest."""
    return bool(values) and min(values) > 0 and max(values) >= 10 * min(values)


def _dodged(positions: Sequence[float], k: int, n: int, *, log: bool) -> list[float]:
    """``positions`` of series ``k`` of ``n`` shifted sideways by :data:`DODGE` of the axis per
    series (centred on the true positions; multiplicatively on a log axis)."""
    if not positions:
        return []
    offset = (k - (n - 1) / 2) * DODGE
    if log:
        decades = math.log10(max(positions) / min(positions)) or 1.0
        return [p * 10 ** (offset * decades) for p in positions]
    span = (max(positions) - min(positions)) or 1.0
    return [p + offset * span for p in positions]


def _y_limits(axes: Axes, values: Sequence[float], *, log: bool) -> None:
    """Start a linear axis at 0; widen a log axis to at least :data:`MIN_LOG_SPAN`."""
    if not values:
        return
    if not log:
        if min(values) >= 0:
            axes.set_ylim(bottom=0)
        return
    low, high = axes.get_ylim()
    if high / low < MIN_LOG_SPAN:
        middle = math.sqrt(low * high)
        half = math.sqrt(MIN_LOG_SPAN)
        axes.set_ylim(middle / half, middle * half)


def _plot(
    path: Path,
    metric: str,
    rows: Sequence[Mapping[str, Any]],
    x: KnobInfo,
    series: KnobInfo | None,
    panel_knobs: Sequence[KnobInfo],
    combos: Sequence[tuple[KnobValue, ...]],
    references: Mapping[str, float],
) -> None:
    ylabel = label(metric)
    ncols = min(3, len(combos))
    nrows = math.ceil(len(combos) / ncols)
    figure = Figure(figsize=(6.5 * ncols, 4.5 * nrows), layout="constrained")
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in x.values)
    positions = {v: (float(v) if numeric else float(i)) for i, v in enumerate(x.values)}
    log_x = numeric and _spans_decade([float(v) for v in x.values])
    values = [float(r[metric]) for r in rows if r[metric] is not None]
    log_y = _spans_decade(values)
    diagonals = ((COMMIT_INTERVAL_SUFFIX, "commit interval"), (LEASE_SUFFIX, "lease"))
    diagonal_label = next((text for end, text in diagonals if x.name.endswith(end)), None)
    diagonal = metric.endswith("_ms") and numeric and diagonal_label is not None
    series_values: list[KnobValue | None] = list(series.values) if series else [None]
    for index, combo in enumerate(combos):
        axes = figure.add_subplot(nrows, ncols, index + 1)
        fixed = dict(zip((k.column for k in panel_knobs), combo, strict=True))
        panel = [r for r in rows if all(r[c] == v for c, v in fixed.items())]
        for k, value in enumerate(series_values):
            line = [r for r in panel if series is None or r[series.column] == value]
            line = sorted(
                (r for r in line if r[metric] is not None), key=lambda r: positions[r[x.column]]
            )
            xs = _dodged([positions[r[x.column]] for r in line], k, len(series_values), log=log_x)
            axes.errorbar(
                xs,
                [r[metric] for r in line],
                yerr=[r[f"{metric}_ci95"] or 0.0 for r in line],
                marker=_MARKERS[k % len(_MARKERS)],
                linestyle=_LINESTYLES[k % len(_LINESTYLES)],
                markerfacecolor="none" if k % 2 else None,
                capsize=3,
                label=None if series is None else f"{series.name.rsplit('.', 1)[-1]}={value}",
            )
        for name, ms in references.items():
            axes.axhline(
                ms, color="grey", linestyle=(0, (6, 3)), linewidth=1, label=f"{name} ({ms:g} ms)"
            )
        if diagonal:
            xs = list(positions.values())
            axes.plot(xs, xs, color="grey", linestyle=":", linewidth=1, label=diagonal_label)
        if log_x:
            axes.set_xscale("log")
        if log_y:
            axes.set_yscale("log")
        axes.set_xticks(list(positions.values()), [str(v) for v in x.values])
        axes.minorticks_off()
        _y_limits(axes, values, log=log_y)
        axes.set_xlabel(x.name)
        axes.set_ylabel(ylabel)
        if fixed:
            axes.set_title(", ".join(f"{c}={v}" for c, v in fixed.items()), fontsize=9)
        if series is not None or references or diagonal:
            axes.legend(fontsize=8)
        axes.grid(True, alpha=0.3)
    figure.suptitle(f"{ylabel}\nmean over seeds, error bars: 95% CI", fontsize=11)
    FigureCanvasAgg(figure)
    figure.savefig(path, **_PNG_OPTIONS)

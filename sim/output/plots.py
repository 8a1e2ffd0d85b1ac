"""PNG plots of a run (matplotlib's Agg canvas, no pyplot state, no metadata: byte-stable).

* ``latency_percentiles.png``: one line per latency (produce, end-to-end, processing-to-commit,
  send-to-commit; messages sent after the warmup) against the percentile, HdrHistogram style:
  the horizontal axis is ``log10(1 / (1 - q))``, so 50%, 90%, 99%, 99.9% and 99.99% are evenly
  spaced and the tail gets as much room as the body. Each line is :data:`CURVE_POINTS`
  nearest-rank percentiles (:func:`percentile_curve`, the definition the summary uses) at
  quantiles evenly spaced on that axis up to ``1 - 1/n`` for ``n`` messages, plus the maximum:
  the plot costs the same for a thousand messages as for a million. Each latency has its own
  line style, so lines that coincide stay visible. The latency axis is logarithmic when the
  values span a factor of ten. The title gives the scenario's description, seed and warmup.
* ``commit_lag.png``: send-to-commit and processing-to-commit latency over time: median and
  maximum per second of commit time (:func:`commit_lag_figure`).
* ``timeseries.png``: the sampled metrics (:mod:`sim.output.recorder`'s time series), one
  panel per metric and one colour per source, aggregated per second of virtual time: a solid
  line for the mean of the second's samples, a thin one for their maximum. Consumer-group lag
  and producer backlog come first. A count since the start of the run (the produce and
  commit errors, :data:`CUMULATIVE_METRICS`) is drawn as its increase per second instead. A
  metric whose samples are all zero (or unknown) gets no panel; the figure names the metrics
  it left out. Written only when there are samples.

Fault windows (:class:`FaultWindow`, e.g. :class:`sim.output.result.FaultWindow`, from the
scenario's ``[[faults]]``) are shaded on every time axis; a fault without a duration is
shaded to the end of the run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sim.output.health import GROUP_LAG, PRODUCER_BACKLOG
from sim.output.summary import LATENCIES

__all__ = [
    "COMMIT_LATENCIES",
    "CUMULATIVE_METRICS",
    "CURVE_POINTS",
    "PERCENTILE_TICKS",
    "FaultWindow",
    "commit_lag_figure",
    "increase_per_second",
    "latency_percentiles_figure",
    "percentile_curve",
    "timeseries_figure",
    "write_plots",
]

CURVE_POINTS = 300
"""Quantiles per line of the percentile plot (plus the maximum)."""
PERCENTILE_TICKS: tuple[tuple[str, float], ...] = (
    ("50%", 0.5),
    ("90%", 0.9),
    ("99%", 0.99),
    ("99.9%", 0.999),
    ("99.99%", 0.9999),
    ("99.999%", 0.99999),
)
"""Labelled quantiles of the percentile axis (those the data resolves are shown)."""
FIRST_METRICS = (
    GROUP_LAG,
    PRODUCER_BACKLOG,
    "producer_buffered",
    "pool_queue_depth",
    "pool_in_flight",
    "produce_errors",
    "commit_errors",
)
"""Time-series panels drawn first, in this order; the other metrics follow by name."""
CUMULATIVE_METRICS = frozenset({"produce_errors", "commit_errors"})
"""Time-series metrics that count since the run's start: drawn as their increase per second
(the errors in that second), not as the running total."""


class FaultWindow(Protocol):
    """When a fault acted: ``[start_us, end_us)``, ``end_us`` None to the end of the run."""

    @property
    def label(self) -> str: ...
    @property
    def start_us(self) -> int: ...
    @property
    def end_us(self) -> int | None: ...


_PNG_OPTIONS: dict[str, Any] = {"format": "png", "dpi": 100, "metadata": {"Software": None}}
_LINESTYLES = ("-", "--", "-.", ":")  # one per latency: lines that coincide stay visible
_FAULT_COLOR = "tab:red"
_PANEL_HEIGHT, _TITLE_HEIGHT, _AXIS_HEIGHT = 2.0, 1.1, 0.5  # inches
_SECOND_US = 1_000_000


def _save(figure: Figure, path: Path) -> None:
    FigureCanvasAgg(figure)
    figure.savefig(path, **_PNG_OPTIONS)


def _values(table: pa.Table, column: str, mask: Any) -> np.ndarray[Any, Any]:
    array = table.column(column).filter(mask).drop_null()
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.int64)


def percentile_axis(quantiles: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The horizontal position of quantiles ``q`` in [0, 1): ``log10(1 / (1 - q))``."""
    return np.asarray(-np.log10(1.0 - quantiles))


def percentile_curve(
    values: np.ndarray[Any, Any], points: int = CURVE_POINTS
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(quantiles, values at them) of ``values`` (not empty), for the percentile plot.

    The quantiles are ``points`` values evenly spaced on :func:`percentile_axis` from 0 to
    ``1 - 1/n`` (the last one the ``n`` values resolve), then 1 (the maximum). Each value is
    the nearest-rank percentile: the ``ceil(n q)``-th smallest (the smallest when ``q = 0``).
    """
    ordered = np.sort(values)
    count = ordered.size
    top = math.log10(count) if count > 1 else 0.0
    quantiles = np.append(1.0 - 10.0 ** -np.linspace(0.0, top, points), 1.0)
    ranks = np.clip(np.ceil(np.round(quantiles * count, 9)).astype(np.int64), 1, count)
    return quantiles, ordered[ranks - 1]


def _spans_decade(low: float, high: float) -> bool:
    return low > 0 and high >= 10 * low


def latency_percentiles(messages: pa.Table, run: Mapping[str, Any], path: Path) -> None:
    _save(latency_percentiles_figure(messages, run), path)


def latency_percentiles_figure(messages: pa.Table, run: Mapping[str, Any]) -> Figure:
    """The figure of ``latency_percentiles.png`` (see the module docstring); a latency no
    message has (nothing committed yet) is named in the legend with ``n=0``."""
    figure = Figure(figsize=(8, 5))
    axes = figure.add_subplot()
    warmup_us = int(run["warmup_us"])
    after_warmup = pc.greater_equal(messages.column("sent_us"), warmup_us)
    acked_ok = pc.and_(after_warmup, pc.equal(messages.column("ack_error"), 0))
    low, high, reach = math.inf, 0.0, 0.0
    for (name, column), style in zip(LATENCIES, _LINESTYLES, strict=True):
        values = _values(messages, column, acked_ok if name == "produce" else after_warmup)
        if values.size == 0:  # named in the legend, so an empty statistic is not just absent
            axes.plot([], [], linestyle=style, label=f"{name.replace('_', '-')} (n=0)")
            continue
        quantiles, latencies = percentile_curve(values)
        x = percentile_axis(quantiles[:-1])
        x = np.append(x, x[-1])  # the maximum, drawn at the last resolved quantile
        y = latencies / 1000
        axes.plot(x, y, linestyle=style, label=f"{name.replace('_', '-')} (n={values.size})")
        positive = y[y > 0]
        if positive.size:
            low, high = min(low, float(positive.min())), max(high, float(positive.max()))
        reach = max(reach, float(x[-1]))
    ticks = [(label, q) for label, q in PERCENTILE_TICKS if percentile_axis(np.array(q)) <= reach]
    axes.set_xticks([float(percentile_axis(np.array(q))) for _, q in ticks], [t for t, _ in ticks])
    if _spans_decade(low, high):
        axes.set_yscale("log")
    if axes.lines:
        axes.legend(loc="upper left", fontsize=8)
    axes.set_xlabel("percentile")
    axes.set_ylabel("latency (ms)")
    axes.set_title(_run_title(run, "latency by percentile"), fontsize=9)
    axes.grid(True, which="both", alpha=0.3)
    return figure


def _run_title(run: Mapping[str, Any], what: str) -> str:
    description = run.get("description") or "(no description)"
    return (
        f"{description}\n{what}; seed {run['seed']}, warmup {run['warmup_us'] / 1e6:g} s "
        "(messages sent after it)"
    )


def _shade_faults(axes: Axes, faults: Sequence[FaultWindow], end_us: int, *, label: bool) -> None:
    for fault in faults:
        stop = end_us if fault.end_us is None else fault.end_us
        axes.axvspan(
            fault.start_us / 1e6,
            stop / 1e6,
            color=_FAULT_COLOR,
            alpha=0.12,
            label=f"fault: {fault.label}" if label else None,
            zorder=0,
        )


def commit_lag(
    messages: pa.Table, run: Mapping[str, Any], faults: Sequence[FaultWindow], path: Path
) -> None:
    _save(commit_lag_figure(messages, run, faults), path)


COMMIT_LATENCIES = (
    ("send to commit", "send_to_commit_latency_us", "-"),
    ("processing to commit", "commit_latency_us", "--"),
)
"""The latencies of ``commit_lag.png``: (label, messages column, line style)."""


def commit_lag_figure(
    messages: pa.Table, run: Mapping[str, Any], faults: Sequence[FaultWindow]
) -> Figure:
    """The figure of ``commit_lag.png``: per second of commit time, the median (thick) and
    maximum (thin) of each of :data:`COMMIT_LATENCIES`. Send to commit comes first: it grows
    when the consumer falls behind, where processing to commit does not. A run that
    committed nothing says so on the empty axes."""
    figure = Figure(figsize=(10, 4))
    figure.subplots_adjust(left=0.08, right=0.74, top=0.85, bottom=0.13)
    axes = figure.add_subplot()
    duration_us = int(run["duration_us"])
    _shade_faults(axes, faults, duration_us, label=True)
    for label, column, style in COMMIT_LATENCIES:
        known = pc.is_valid(messages.column(column))
        lags = _values(messages, column, known)
        if not lags.size:
            continue
        seconds = _values(messages, "committed_us", known) // _SECOND_US
        order = np.lexsort((lags, seconds))
        by_second, sorted_lags = seconds[order], lags[order]
        bins, starts, counts = np.unique(by_second, return_index=True, return_counts=True)
        t = np.minimum(bins + 0.5, duration_us / 1e6)  # mid-second, as in timeseries.png
        (line,) = axes.plot(t, sorted_lags[starts + (counts - 1) // 2] / 1000,
                            linestyle=style, linewidth=1.5, label=f"{label}: median")  # fmt: skip
        axes.plot(t, sorted_lags[starts + counts - 1] / 1000, linestyle=style,
                  linewidth=0.6, color=line.get_color(), label=f"{label}: max")  # fmt: skip
    if not axes.lines:
        axes.text(0.5, 0.5, "no message was committed in this run (see the summary's warnings)",
                  transform=axes.transAxes, ha="center", va="center")  # fmt: skip
    if axes.lines or axes.patches:
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    axes.set_xlim(0, duration_us / 1e6)
    axes.set_ylim(bottom=0)
    axes.set_xlabel("commit time (s)")
    axes.set_ylabel("latency (ms)")
    axes.set_title(_run_title(run, "commit latency per second of commit time"), fontsize=9)
    axes.grid(True, alpha=0.3)
    return figure


def per_second(samples: pa.Table) -> pa.Table:
    """The samples aggregated per (metric, source, second of virtual time): columns
    ``metric``, ``source``, ``second``, ``mean`` and ``max`` of the known (not NaN) values,
    sorted by metric, source and second."""
    known = samples.filter(pc.invert(pc.is_nan(samples.column("value"))))
    seconds = pc.divide(known.column("time_us"), _SECOND_US)
    grouped = (
        known.select(["metric", "source", "value"])
        .append_column("second", seconds)
        .group_by(["metric", "source", "second"], use_threads=False)
        .aggregate([("value", "mean"), ("value", "max")])
    )
    grouped = pa.table(
        {
            "metric": grouped.column("metric"),
            "source": grouped.column("source"),
            "second": grouped.column("second"),
            "mean": grouped.column("value_mean"),
            "max": grouped.column("value_max"),
        }
    )
    return grouped.sort_by(
        [("metric", "ascending"), ("source", "ascending"), ("second", "ascending")]
    )


def increase_per_second(totals: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The increase of a running total per second, from its per-second maxima (its last value
    in each second, the total never decreasing): the first second's total, then each second's
    difference from the one before."""
    return np.diff(totals, prepend=0.0)


def _metric_order(metrics: Sequence[str]) -> list[str]:
    first = [m for m in FIRST_METRICS if m in metrics]
    return first + sorted(m for m in metrics if m not in FIRST_METRICS)


def timeseries(
    samples: pa.Table, run: Mapping[str, Any], faults: Sequence[FaultWindow], path: Path
) -> list[str]:
    """Draw the time-series figure; return the metrics it has panels for, top to bottom."""
    figure, drawn = timeseries_figure(samples, run, faults)
    _save(figure, path)
    return drawn


def timeseries_figure(
    samples: pa.Table, run: Mapping[str, Any], faults: Sequence[FaultWindow]
) -> tuple[Figure, list[str]]:
    """The figure of ``timeseries.png`` (see the module docstring) and the metrics it has
    panels for, top to bottom."""
    seconds = per_second(samples)
    metrics = _metric_order(sorted(set(seconds.column("metric").to_pylist())))
    peaks = {
        row["metric"]: row["max_max"]
        for row in seconds.group_by("metric", use_threads=False)
        .aggregate([("max", "max")])
        .to_pylist()
    }
    drawn = [m for m in metrics if peaks[m] != 0]
    empty = [m for m in _metric_order(sorted(set(samples.column("metric").to_pylist())))
             if m not in drawn]  # fmt: skip
    height = _PANEL_HEIGHT * max(len(drawn), 1) + _TITLE_HEIGHT + _AXIS_HEIGHT
    figure = Figure(figsize=(9, height))
    # Fixed margins (inches): a layout engine would cost more than drawing the panels.
    figure.subplots_adjust(
        left=0.09, right=0.8, top=1 - _TITLE_HEIGHT / height, bottom=_AXIS_HEIGHT / height,
        hspace=0.25,
    )  # fmt: skip
    end_us = int(run["duration_us"])
    for i, metric in enumerate(drawn):
        axes = figure.add_subplot(max(len(drawn), 1), 1, i + 1)
        _shade_faults(axes, faults, end_us, label=i == 0)
        rows = seconds.filter(pc.equal(seconds.column("metric"), metric))
        sources = rows.column("source").to_numpy(zero_copy_only=False)
        names, starts = np.unique(sources, return_index=True)
        bounds = [*starts[1:], len(sources)]
        t = np.minimum(rows.column("second").to_numpy() + 0.5, end_us / 1e6)  # mid-second
        mean, top = rows.column("mean").to_numpy(), rows.column("max").to_numpy()
        cumulative = metric in CUMULATIVE_METRICS
        for name, start, stop in zip(names, starts, bounds, strict=True):
            if cumulative:  # a running total: its increase per second, one line
                axes.plot(t[start:stop], increase_per_second(top[start:stop]), label=str(name),
                          linewidth=1.2)  # fmt: skip
                continue
            (line,) = axes.plot(t[start:stop], mean[start:stop], label=str(name), linewidth=1.2)
            axes.plot(t[start:stop], top[start:stop], color=line.get_color(), linewidth=0.5)
        axes.set_ylabel(f"{metric}\nper second" if cumulative else metric, fontsize=8)
        # Room above the highest value: a line at the top would merge with the frame.
        peak = max(float(np.max(line.get_ydata())) for line in axes.lines)
        axes.set_ylim(0, peak * 1.1 if peak > 0 else 1.0)
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6)
        axes.grid(True, alpha=0.3)
    if drawn:
        figure.axes[-1].set_xlabel("time (s)")
    caption = (
        "per second of virtual time: thick line mean, thin line max of the samples "
        "(errors: how many in that second)"
    )
    if empty:
        caption += "\nall zero or unknown, not drawn: " + ", ".join(empty)
    figure.suptitle(_run_title(run, "time series") + "\n" + caption, fontsize=8)
    return figure, drawn


def write_plots(
    directory: Path,
    messages: pa.Table,
    samples: pa.Table,
    run: Mapping[str, Any],
    faults: Sequence[FaultWindow] = (),
) -> list[Path]:
    """Write the plots of a run into ``directory``; return their paths.

    ``run`` is the summary's ``run`` section (description, seed, warmup_us, duration_us);
    ``faults`` are shaded on the time axes.
    """
    written = [directory / "latency_percentiles.png", directory / "commit_lag.png"]
    latency_percentiles(messages, run, written[0])
    commit_lag(messages, run, faults, written[1])
    if samples.num_rows:
        written.append(directory / "timeseries.png")
        timeseries(samples, run, faults, written[2])
    return written

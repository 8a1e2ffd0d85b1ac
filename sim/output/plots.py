"""PNG plots of a run (matplotlib's Agg canvas, no pyplot state, no metadata: byte-stable).

* ``latency_cdf.png``: CDFs of produce, end-to-end, commit (processing to commit) and
  send-to-commit latency (messages sent after the warmup), log-scaled latency axis.
* ``commit_lag.png``: commit latency over time: median and maximum per second of commit time.
* ``timeseries.png``: every sampled metric over time, one panel per metric, one line per
  source (purgatory sizes, replica lag, consumer-group lag, producer backlog...). Only
  written when there are samples.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sim.output.summary import LATENCIES

__all__ = ["write_plots"]

_PNG_OPTIONS: dict[str, Any] = {"format": "png", "dpi": 100, "metadata": {"Software": None}}


def _save(figure: Figure, path: Path) -> None:
    FigureCanvasAgg(figure)
    figure.savefig(path, **_PNG_OPTIONS)


def _values(table: pa.Table, column: str, mask: Any) -> np.ndarray[Any, Any]:
    array = table.column(column).filter(mask).drop_null()
    return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.int64)


def latency_cdf(messages: pa.Table, warmup_us: int, path: Path) -> None:
    figure = Figure(figsize=(7, 4.5))
    axes = figure.add_subplot()
    after_warmup = pc.greater_equal(messages.column("sent_us"), warmup_us)
    plotted = False
    for name, column in LATENCIES:
        values = np.sort(_values(messages, column, after_warmup))
        values = values[values > 0]  # a log axis cannot show 0
        if values.size == 0:
            continue
        fraction = np.arange(1, values.size + 1) / values.size
        axes.step(values / 1000, fraction, where="post", label=name.replace("_", "-"))
        plotted = True
    if plotted:
        axes.set_xscale("log")
        axes.legend(loc="lower right")
    axes.set_xlabel("latency (ms)")
    axes.set_ylabel("fraction of messages")
    axes.set_title("Latency CDFs")
    axes.grid(True, which="both", alpha=0.3)
    _save(figure, path)


def commit_lag(messages: pa.Table, path: Path) -> None:
    figure = Figure(figsize=(7, 4))
    axes = figure.add_subplot()
    has_commit = pc.is_valid(messages.column("commit_latency_us"))
    times = _values(messages, "committed_us", has_commit)
    lags = _values(messages, "commit_latency_us", has_commit)
    if times.size:
        seconds = times // 1_000_000
        order = np.lexsort((lags, seconds))
        seconds, lags = seconds[order], lags[order]
        bins, starts = np.unique(seconds, return_index=True)
        groups = np.split(lags, starts[1:])
        axes.plot(bins, [g[len(g) // 2] / 1000 for g in groups], label="median")
        axes.plot(bins, [g[-1] / 1000 for g in groups], label="max")
        axes.legend(loc="upper right")
    axes.set_xlabel("commit time (s)")
    axes.set_ylabel("commit latency (ms)")
    axes.set_title("Commit lag over time (per second)")
    axes.grid(True, alpha=0.3)
    _save(figure, path)


def timeseries(samples: pa.Table, path: Path) -> None:
    metrics = sorted(set(samples.column("metric").to_pylist()))
    figure = Figure(figsize=(7, 2.2 * len(metrics) + 0.5))
    for i, metric in enumerate(metrics):
        axes = figure.add_subplot(len(metrics), 1, i + 1)
        rows = samples.filter(pc.equal(samples.column("metric"), metric))
        for source in sorted(set(rows.column("source").to_pylist())):
            series = rows.filter(pc.equal(rows.column("source"), source))
            t = np.asarray(series.column("time_us").to_numpy()) / 1e6
            axes.plot(t, series.column("value").to_numpy(), label=source)
        axes.set_ylabel(metric, fontsize=8)
        axes.legend(loc="upper right", fontsize=7)
        axes.grid(True, alpha=0.3)
    figure.axes[-1].set_xlabel("time (s)")
    figure.tight_layout()
    _save(figure, path)


def write_plots(
    directory: Path, messages: pa.Table, samples: pa.Table, *, warmup_us: int
) -> list[Path]:
    """Write the plots into ``directory``; return their paths."""
    written = [directory / "latency_cdf.png", directory / "commit_lag.png"]
    latency_cdf(messages, warmup_us, written[0])
    commit_lag(messages, written[1])
    if samples.num_rows:
        written.append(directory / "timeseries.png")
        timeseries(samples, written[2])
    return written

"""The result of one run and its directory on disk.

A run directory holds::

    messages.parquet    one row per message (see recorder.MESSAGES_SCHEMA)
    requests.parquet    one row per request (REQUESTS_SCHEMA)
    timeseries.parquet  sampled metrics in long format (TIMESERIES_SCHEMA)
    proxy.parquet       with a consume proxy: one row per record of its topic (PROXY_SCHEMA)
    summary.json        counts and latency percentiles (see summary.py)
    *.png               plots (see plots.py)

The same seed gives byte-identical files: no timestamps or host names are written, the
Parquet writer options are fixed, and the PNGs carry no metadata.

For notebooks, the tables are also DataFrames (:meth:`RunResult.messages_df` and its
siblings, :mod:`sim.output.frames`); :func:`sim.runner.load_run` reads a run directory back.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa
import pyarrow.parquet as pq

from sim.output.summary import format_summary

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PARQUET_OPTIONS", "PROXY_TABLE", "FaultWindow", "RunResult"]

PROXY_TABLE = "proxy"
"""The name of the consume proxy's table (``proxy.parquet``, a sweep's ``records/proxy``)."""
PLOTS = ("latency_percentiles.png", "commit_lag.png", "timeseries.png")
"""The plots a run directory may hold, as :func:`sim.output.plots.write_plots` names them (not
imported from there: matplotlib loads slowly, and a run written without plots needs none)."""

_log = logging.getLogger(__name__)

PARQUET_OPTIONS: dict[str, Any] = {
    "version": "2.6",
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_version": "1.0",
    "store_schema": True,
    "row_group_size": 65_536,
}
"""Fixed writer options, so files depend only on the data (and the pyarrow version). Row
groups of 65,536 rows bound the writer's buffers (the default, 1,048,576 rows, buffers a long
run's whole table, encoded, on top of it)."""


@attrs.frozen
class FaultWindow:
    """When a fault of the run acted, for the plots: ``[start_us, end_us)``, ``end_us`` None
    for a fault that lasts to the end of the run; ``label`` says which fault."""

    label: str
    start_us: int
    end_us: int | None


@attrs.frozen
class RunResult:
    """Tables and summary of one run (what a Spark task gets back per (point, seed)).

    ``wall_seconds`` is how long the run took on the host; it is never written to the run
    directory (it would break byte-identical output). ``faults`` are the scenario's faults,
    shaded in the plots. ``proxy`` is the consume proxy's table
    (:mod:`sim.output.proxy_recorder`), None in a run without one.
    """

    messages: pa.Table
    requests: pa.Table
    timeseries: pa.Table
    summary: dict[str, Any]
    wall_seconds: float = attrs.field(default=0.0, eq=False)
    faults: tuple[FaultWindow, ...] = ()
    proxy: pa.Table | None = None

    def write(self, directory: str | Path, *, plots: bool = True) -> list[Path]:
        """Write the run directory (created if needed); return the files written.

        A file of an earlier run in ``directory`` that this run does not write (its plots,
        with ``plots=False`` or without time series; its ``proxy.parquet``) is removed, so the
        directory never shows two runs."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, table in (
            ("messages", self.messages),
            ("requests", self.requests),
            ("timeseries", self.timeseries),
            *([(PROXY_TABLE, self.proxy)] if self.proxy is not None else []),
        ):
            path = out / f"{name}.parquet"
            pq.write_table(table, path, **PARQUET_OPTIONS)
            written.append(path)
        summary_path = out / "summary.json"
        summary_path.write_text(json.dumps(self.summary, indent=2) + "\n", encoding="utf-8")
        written.append(summary_path)
        if plots:
            from sim.output.plots import write_plots  # matplotlib loads slowly; only when used

            started = time.process_time()
            run = self.summary["run"]
            written.extend(write_plots(out, self.messages, self.timeseries, run, self.faults))
            _log.info("plots written in %.2f s of CPU time", time.process_time() - started)
        for stale in (out / f"{PROXY_TABLE}.parquet", *(out / name for name in PLOTS)):
            if stale not in written:
                stale.unlink(missing_ok=True)
        _log.info("wrote %d files to %s", len(written), out)
        return written

    def format_table(self) -> str:
        """The summary as a terminal table."""
        return format_summary(self.summary)

    # pandas is imported on first use: it takes a while to load and the CLI needs none of it.

    def messages_df(self) -> pd.DataFrame:
        """``messages`` as a DataFrame (dtypes: :mod:`sim.output.frames`)."""
        from sim.output.frames import to_frame

        return to_frame(self.messages)

    def requests_df(self) -> pd.DataFrame:
        """``requests`` as a DataFrame (dtypes: :mod:`sim.output.frames`)."""
        from sim.output.frames import to_frame

        return to_frame(self.requests)

    def timeseries_df(self) -> pd.DataFrame:
        """``timeseries`` (long format) as a DataFrame (dtypes: :mod:`sim.output.frames`);
        ``.pivot_table(index="time_us", columns=["source", "metric"], values="value")`` makes
        it wide."""
        from sim.output.frames import to_frame

        return to_frame(self.timeseries)

    def proxy_df(self) -> pd.DataFrame | None:
        """``proxy`` as a DataFrame (dtypes: :mod:`sim.output.frames`), None without it."""
        from sim.output.frames import to_frame

        return None if self.proxy is None else to_frame(self.proxy)

    def latency_df(self) -> pd.DataFrame:
        """The summary's latency statistics, one row per latency (``produce``, ``end_to_end``,
        ``commit``, ``send_to_commit``): ``count`` and the ``*_ms`` columns."""
        from sim.output.frames import latency_frame

        return latency_frame(self.summary["latency"])

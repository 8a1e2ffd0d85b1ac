"""Run output: the metrics recorder, the run result, its Parquet/JSON/PNG files and summary
(with the warnings of :mod:`sim.output.health`)."""

from sim.output.recorder import (
    MESSAGES_SCHEMA,
    REQUESTS_SCHEMA,
    TIMESERIES_SCHEMA,
    MetricsRecorder,
)
from sim.output.result import RunResult
from sim.output.summary import format_summary, summarize

__all__ = [
    "MESSAGES_SCHEMA",
    "REQUESTS_SCHEMA",
    "TIMESERIES_SCHEMA",
    "MetricsRecorder",
    "RunResult",
    "format_summary",
    "summarize",
]

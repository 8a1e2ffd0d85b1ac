"""Warnings about a run whose numbers would otherwise mislead: what the summary must say aloud.

Two kinds are found in the run's data (the world adds its own, about faults, through
:meth:`~sim.output.MetricsRecorder.warn`):

* **Empty latency statistics, and why** (:func:`empty_latency_warnings`): a latency is empty
  when no message sent after the warmup reached its end event; the warning names the first
  stage (acknowledged, delivered, processed, committed) none of them reached and what usually
  causes that, e.g. a run too short for any commit.
* **Fell behind** (:func:`fell_behind_warnings`): a consumer whose group lag (``group_lag``,
  summed over its partitions) or a producer whose backlog (``producer_backlog``) grew over
  the run. The criterion compares the mean of the series over a first and a last *window* of
  ``[warmup, duration]``: the series *grew* when the last window's mean exceeds
  :data:`GROWTH_RATIO` times the first's plus :data:`GROWTH_FLOOR` messages. Periodic commits
  draw a saw-tooth on a lag (it climbs between commits and drops at each), and a mean over a
  window that is not a whole number of teeth depends on where the window cuts them: a healthy
  20 s run with 5 s commits would look as if it fell behind. So the windows are whole teeth:
  each starts and ends at a drop of the series (a commit), the first from the first drop
  after the warmup to the first drop a quarter of the run later (at least one tooth), the last
  from the last drop a quarter before the final drop to the final drop. A series with fewer
  than three drops after the warmup has no two whole teeth; its windows are the first and the
  last quarter. The ratio makes the rule scale-free, and the floor keeps a series near zero (a
  lag of 2, then 9) from counting. A system that keeps up has a stationary backlog, so its
  windows agree; one that does not adds to it at a constant rate, so the last window is far
  above the first. Samples that are NaN (lag unknown) are left out. A consumer whose lag grew
  without ever falling after the warmup made no commit: its warning says so (it stopped, or
  commits less often than the run lasts) instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "GROUP_LAG",
    "GROWTH_FLOOR",
    "GROWTH_RATIO",
    "PRODUCER_BACKLOG",
    "empty_latency_warnings",
    "fell_behind_warnings",
]

GROUP_LAG = "group_lag"
"""The time-series metric of a consumer's lag on one partition (source
``<client id>:<topic>-<partition>``)."""
PRODUCER_BACKLOG = "producer_backlog"
"""The time-series metric of a producer's unfinished messages (source: its client id)."""
GROWTH_RATIO = 1.5
GROWTH_FLOOR = 100.0

_STAGES: tuple[tuple[str, str, str], ...] = (
    # (unfinished count, what none of them was, what usually causes it)
    ("never_acked", "acknowledged", "every send failed or is still in the producer"),
    ("never_delivered", "delivered", "is a consumer reading the topic?"),
    ("never_processed", "processed", "the consumers finished processing none of them"),
    (
        "never_committed",
        "committed",
        "the duration must exceed the warmup plus the consumers' commit interval "
        "(burrow.commit_interval_ms, auto_commit_interval_ms)",
    ),
)
_LAST_STAGE = {"produce": 0, "end_to_end": 1, "commit": 3, "send_to_commit": 3}
"""Latency name -> index in _STAGES of the event the latency ends at."""


def empty_latency_warnings(
    latency: Mapping[str, Mapping[str, Any]], unfinished: Mapping[str, int]
) -> list[str]:
    """One warning per reason for the empty statistics of ``latency`` (the summary's section),
    explained with ``unfinished`` (see the module docstring)."""
    reasons: dict[str, list[str]] = {}
    for name, stats in latency.items():
        if not stats["count"]:
            reasons.setdefault(_reason(name, unfinished), []).append(name)
    return [
        f"{_enumerate(names)} latency {'is' if len(names) == 1 else 'are'} empty: {reason}"
        for reason, names in reasons.items()
    ]


def _enumerate(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _reason(name: str, unfinished: Mapping[str, int]) -> str:
    sent = unfinished["sent_after_warmup"]
    if sent == 0:
        return "no message was sent after the warmup"
    for count, stage, hint in _STAGES[: _LAST_STAGE[name] + 1]:
        if unfinished[count] == sent:
            return f"none of the {sent} messages sent after the warmup was {stage}: {hint}"
    return "no message sent after the warmup has both of its events"


def _window_means(
    times_us: np.ndarray[Any, Any], values: np.ndarray[Any, Any], warmup_us: int, duration_us: int
) -> tuple[float, float] | None:
    """Means of ``values`` over the first and the last window of ``[warmup_us, duration_us]``
    (whole teeth, else quarters: see the module docstring; NaN samples left out); None if a
    window has no sample."""
    quarter = (duration_us - warmup_us) / 4
    keep = ~np.isnan(values) & (times_us >= warmup_us) & (times_us <= duration_us)
    times, kept = times_us[keep], values[keep]
    drops = np.flatnonzero(np.diff(kept) < 0) + 1
    if drops.size >= 3:
        drop_times = times[drops]
        first_end = max(1, int(np.searchsorted(drop_times, drop_times[0] + quarter)))
        first_end = min(first_end, drops.size - 1)
        last_start = int(np.searchsorted(drop_times, drop_times[-1] - quarter, "right")) - 1
        last_start = max(min(last_start, drops.size - 2), first_end - 1)
        first = kept[drops[0] : drops[first_end]]
        last = kept[drops[last_start] : drops[-1]]
    else:
        first = kept[times < warmup_us + quarter]
        last = kept[times >= duration_us - quarter]
    if first.size == 0 or last.size == 0:
        return None
    return float(first.mean()), float(last.mean())


def _grew(means: tuple[float, float]) -> bool:
    return means[1] > GROWTH_RATIO * means[0] + GROWTH_FLOOR


def _sums_by_client(samples: pa.Table, metric: str) -> dict[str, tuple[Any, Any]]:
    """Per client (the source up to its first ':'), the metric summed over its sources at each
    sampling time: (times, sums), a sum being NaN if one of its terms is."""
    rows = samples.filter(pc.equal(samples.column("metric"), metric))
    totals: dict[str, dict[int, float]] = {}
    for t, source, value in zip(
        rows.column("time_us").to_pylist(),
        rows.column("source").to_pylist(),
        rows.column("value").to_pylist(),
        strict=True,
    ):
        by_time = totals.setdefault(source.split(":", 1)[0], {})
        by_time[t] = by_time.get(t, 0.0) + value
    return {
        client: (np.fromiter(by_time, np.int64), np.fromiter(by_time.values(), np.float64))
        for client, by_time in totals.items()
    }


def fell_behind_warnings(samples: pa.Table, warmup_us: int, duration_us: int) -> list[str]:
    """Warnings for the consumers whose group lag and the producers whose backlog grew over
    the run (see the module docstring for the criterion)."""
    warnings = []
    for metric, who, what in (
        (GROUP_LAG, "consumer", "group lag (log end offset - committed offset, all partitions)"),
        (PRODUCER_BACKLOG, "producer", "backlog (messages not yet acknowledged)"),
    ):
        for client, (times, values) in sorted(_sums_by_client(samples, metric).items()):
            means = _window_means(times, values, warmup_us, duration_us)
            if means is None or not _grew(means):
                continue
            first, last = (math.floor(m + 0.5) for m in means)
            growth = (
                f"its {what} averaged {first} messages early after the warmup and {last} at "
                f"the end (> {GROWTH_RATIO:g} x first + {GROWTH_FLOOR:g})"
            )
            if metric == GROUP_LAG and not _ever_fell(times, values, warmup_us):
                warnings.append(
                    f"{who} {client} committed nothing after the warmup: {growth}; it stopped, "
                    "or it commits less often than the run can show"
                )
            else:
                warnings.append(
                    f"{who} {client} fell behind: {growth}: it is not keeping up, and its "
                    "latencies only cover the messages that got through"
                )
    return warnings


def _ever_fell(times: np.ndarray[Any, Any], values: np.ndarray[Any, Any], warmup_us: int) -> bool:
    """Whether the known values from ``warmup_us`` on ever decrease (a commit lowers a lag)."""
    known = values[~np.isnan(values) & (times >= warmup_us)]
    return bool(np.any(np.diff(known) < 0))

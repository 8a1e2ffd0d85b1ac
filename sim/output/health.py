"""Warnings about a run whose numbers would otherwise mislead: what the summary must say aloud.

Three kinds are found in the run's data (the world adds its own, about faults, through
:meth:`~sim.output.MetricsRecorder.warn`):

* **Acknowledged messages lost** (:func:`loss_warnings`): messages acknowledged with acks=all
  or acks=1 that the final leader logs lack, not deleted by retention (the summary's
  ``loss`` section counts them; a table line alone is easy to miss, and a sweep's report
  lists warnings per run). Absent acks=0 messages are not warned about: acks=0 promises
  nothing, and the messages still on the wire when the run ends are among them.

* **Empty latency statistics, and why** (:func:`empty_latency_warnings`): a latency is empty
  when no message sent after the warmup reached its end event; the warning names the first
  stage (acknowledged, delivered, processed, committed) none of them reached and what usually
  causes that, e.g. a run too short for any commit.
* **Fell behind** (:func:`fell_behind_warnings`): a consumer whose group lag (``group_lag``,
  summed over its partitions) or a producer whose backlog (``producer_backlog``) grew over
  the run. The criterion compares the mean of the series over a first and a last *window* of
  ``[warmup, duration]``, the first starting at the warmup and the last ending at the run's
  end: the series *grew* when it rose between them at more than :data:`GROWTH_SHARE` of the
  rate at which messages arrived (were sent to the consumer's partitions, or by the
  producer, after the warmup), and by more than :data:`GROWTH_FLOOR` messages. A consumer
  that keeps up has a stationary lag, so its windows agree; one that takes in a fraction
  ``1 - 1/rho`` less than arrives adds that fraction of the arrivals to its lag, whatever
  the lag was when the warmup ended (a level that had piled up during the warmup hides the
  growth from a rule relative to it). The share makes the rule scale-free, and the floor
  keeps a series near zero (a lag of 2, then 9) from counting. Periodic commits draw a
  saw-tooth on a lag (it climbs between commits and drops at each), and a mean over a window
  that is not a whole number of teeth depends on where the window cuts them: with quarters
  for windows, a healthy 20 s run with 5 s commits would look as if it fell behind. The mean
  of a periodic series over any window that lasts a whole number of its periods is its mean,
  wherever the window starts, so each window lasts a whole number of *tooth periods*, the
  number nearest to a quarter of the measured time (at least one). The period is the mean
  spacing of the drops (decreases) of the series after the warmup; a series with fewer than
  two drops, or whose period is too long for two windows of one period to fit in the run,
  uses quarters. The windows stay at the ends of the run whatever the drops are: when the
  consumer falls behind, its lag drops only where a commit happens to land between two
  samples, and windows cut at those drops would sit side by side mid-run and miss the growth.
  Samples that are NaN (lag unknown) are left out. A consumer whose lag grew without ever
  falling after the warmup made no commit: its warning says so (it stopped, or commits less
  often than the run lasts) instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "GROUP_LAG",
    "GROWTH_FLOOR",
    "GROWTH_SHARE",
    "PRODUCER_BACKLOG",
    "arrival_rates",
    "empty_latency_warnings",
    "fell_behind_warnings",
    "loss_warnings",
]

GROUP_LAG = "group_lag"
"""The time-series metric of a consumer's lag on one partition (source
``<client id>:<topic>-<partition>``)."""
PRODUCER_BACKLOG = "producer_backlog"
"""The time-series metric of a producer's unfinished messages (source: its client id)."""
GROWTH_SHARE = 0.05
"""A lag or backlog growing faster than this share of the arrival rate fell behind."""
GROWTH_FLOOR = 100.0
"""... and only if it grew by more than this many messages between the two windows."""

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


def loss_warnings(loss: Mapping[str, Mapping[str, int]] | None) -> list[str]:
    """One warning per acks level (all, 1) of the summary's ``loss`` section whose
    acknowledged messages the final leader logs lack; none without a section."""
    warnings = []
    for name, label in (("acks_all", "acks=all"), ("acks_1", "acks=1")):
        counts = (loss or {}).get(name)
        if counts and counts["lost_acked"]:
            warnings.append(
                f"{counts['lost_acked']} of the {counts['acked']} messages acknowledged with "
                f"{label} are missing from the final leader logs (lost, not deleted by "
                "retention): messages.parquet has log_copies = 0 for them"
            )
    return warnings


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


def arrival_rates(messages: pa.Table, warmup_us: int, duration_us: int) -> dict[str, float]:
    """Messages per second sent in ``[warmup_us, duration_us]``, per producer (its client id)
    and per partition (``<topic>-<partition>``): the rates :func:`fell_behind_warnings`
    compares the growth of a backlog or a lag with. Counted with bit masks per producer and
    per topic, over slices of :data:`_SLICE_ROWS` rows, so that a long run's table is not
    copied."""
    counts: dict[str, int] = {}
    for start in range(0, messages.num_rows, _SLICE_ROWS):
        rows = messages.slice(start, _SLICE_ROWS)  # no copy
        sent = rows.column("sent_us")
        in_window = pc.and_(pc.greater_equal(sent, warmup_us), pc.less_equal(sent, duration_us))
        producers = rows.column("producer")
        for producer in pc.unique(producers).drop_null().to_pylist():
            count = pc.sum(pc.and_(in_window, pc.equal(producers, producer))).as_py() or 0
            counts[producer] = counts.get(producer, 0) + count
        topics, partitions = rows.column("topic"), pc.fill_null(rows.column("partition"), -1)
        for topic in pc.unique(topics).drop_null().to_pylist():
            numbers = partitions.filter(pc.and_(in_window, pc.equal(topics, topic))).to_numpy()
            for number, count in enumerate(np.bincount(numbers[numbers >= 0])):
                key = f"{topic}-{number}"
                counts[key] = counts.get(key, 0) + int(count)
    seconds = max(duration_us - warmup_us, 1) / 1e6
    return {key: count / seconds for key, count in counts.items() if count}


_SLICE_ROWS = 1 << 20


@attrs.frozen
class _Windows:
    """The means of a series over its first and last windows, and the windows' mean times."""

    first: float
    last: float
    first_us: float
    last_us: float

    def growth_per_second(self) -> float:
        return (self.last - self.first) / ((self.last_us - self.first_us) / 1e6)


def _windows(
    times_us: np.ndarray[Any, Any], values: np.ndarray[Any, Any], warmup_us: int, duration_us: int
) -> _Windows | None:
    """The first and the last window of ``[warmup_us, duration_us]`` (a whole number of tooth
    periods, else quarters: see the module docstring; NaN samples left out); None if a window
    has no sample."""
    measured = duration_us - warmup_us
    keep = ~np.isnan(values) & (times_us >= warmup_us) & (times_us <= duration_us)
    times, kept = times_us[keep], values[keep]
    width = measured / 4
    drop_times = times[np.flatnonzero(np.diff(kept) < 0) + 1]
    if drop_times.size >= 2:
        period = float(drop_times[-1] - drop_times[0]) / (drop_times.size - 1)
        whole = max(1, round(width / period)) * period
        if whole <= measured / 2:
            width = whole
    first = times < warmup_us + width
    last = times > duration_us - width
    if not first.any() or not last.any():
        return None
    return _Windows(
        float(kept[first].mean()), float(kept[last].mean()),
        float(times[first].mean()), float(times[last].mean()),
    )  # fmt: skip


def _sums_by_client(samples: pa.Table, metric: str) -> dict[str, tuple[Any, Any, set[str]]]:
    """Per client (the source up to its first ':'), the metric summed over its sources at each
    sampling time: (times, sums, what its sources name after the ':' -- the partitions of a
    lag), a sum being NaN if one of its terms is."""
    rows = samples.filter(pc.equal(samples.column("metric"), metric))
    totals: dict[str, dict[int, float]] = {}
    parts: dict[str, set[str]] = {}
    for t, source, value in zip(
        rows.column("time_us").to_pylist(),
        rows.column("source").to_pylist(),
        rows.column("value").to_pylist(),
        strict=True,
    ):
        client, _, part = source.partition(":")
        by_time = totals.setdefault(client, {})
        by_time[t] = by_time.get(t, 0.0) + value
        parts.setdefault(client, set()).add(part)
    return {
        client: (
            np.fromiter(by_time, np.int64), np.fromiter(by_time.values(), np.float64),
            parts[client],
        )
        for client, by_time in totals.items()
    }  # fmt: skip


def fell_behind_warnings(
    samples: pa.Table, warmup_us: int, duration_us: int, arrivals: Mapping[str, float]
) -> list[str]:
    """Warnings for the consumers whose group lag and the producers whose backlog grew over
    the run, given the ``arrivals`` of :func:`arrival_rates` (see the module docstring for the
    criterion)."""
    warnings = []
    for metric, who, what, into in (
        (GROUP_LAG, "consumer", "group lag (log end offset - committed offset, all partitions)",
         "sent to its partitions"),
        (PRODUCER_BACKLOG, "producer", "backlog (messages not yet acknowledged)", "it sent"),
    ):  # fmt: skip
        for client, (times, values, parts) in sorted(_sums_by_client(samples, metric).items()):
            windows = _windows(times, values, warmup_us, duration_us)
            if windows is None:
                continue
            keys = {client} if metric == PRODUCER_BACKLOG else parts
            rate = sum(arrivals.get(key, 0.0) for key in keys)
            growth = windows.growth_per_second()
            if windows.last - windows.first <= GROWTH_FLOOR or growth <= GROWTH_SHARE * rate:
                continue
            first, last = (math.floor(m + 0.5) for m in (windows.first, windows.last))
            share = f", {growth / rate:.0%} of the {rate:,.0f} a second {into}" if rate else ""
            grew = (
                f"its {what} averaged {first} messages early after the warmup and {last} at "
                f"the end: it grew by {growth:,.0f} a second{share} (> {GROWTH_SHARE:.0%})"
            )
            if metric == GROUP_LAG and not _ever_fell(times, values, warmup_us):
                warnings.append(
                    f"{who} {client} committed nothing after the warmup: {grew}; it stopped, "
                    "or it commits less often than the run can show"
                )
            else:
                warnings.append(
                    f"{who} {client} fell behind: {grew}: it is not keeping up, and its "
                    "latencies only cover the messages that got through"
                )
    return warnings


def _ever_fell(times: np.ndarray[Any, Any], values: np.ndarray[Any, Any], warmup_us: int) -> bool:
    """Whether the known values from ``warmup_us`` on ever decrease (a commit lowers a lag)."""
    known = values[~np.isnan(values) & (times >= warmup_us)]
    return bool(np.any(np.diff(known) < 0))

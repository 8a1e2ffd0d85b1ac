"""Targets, JSON lines and readable tables for the benchmark results."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import attrs

from purgatory.bench.purgatory_workload import PurgatoryResult, WorkloadConfig
from purgatory.bench.timer import TimerResult

__all__ = [
    "Target",
    "purgatory_json_lines",
    "purgatory_table",
    "purgatory_targets",
    "timer_json_lines",
    "timer_table",
    "timer_targets",
]

_TIMER_SMALL, _TIMER_LARGE = 10_000, 1_000_000
# The two configurations of the issue the purgatory targets are set for.
_THROUGHPUT_CONFIG = {"keys": 3, "key_space_size": 100, "timeout": 200, "pct50": 20, "pct75": 60}
_KAFKA_RUN_CONFIG = {
    "keys": 100,
    "key_space_size": 1000,
    "num": 1_000_000,
    "rate": 10_000,
    "pct50": 20,
    "pct75": 50,
    "timeout": 100,
}


@attrs.define(frozen=True)
class Target:
    """A performance target: ``value`` must be at most (or at least) ``limit``."""

    name: str
    value: float
    limit: float
    at_most: bool

    @property
    def met(self) -> bool:
        return self.value <= self.limit if self.at_most else self.value >= self.limit

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": round(self.value, 4),
            "limit": self.limit,
            "at_most": self.at_most,
            "met": self.met,
        }

    def describe(self) -> str:
        relation = "<=" if self.at_most else ">="
        verdict = "met" if self.met else "NOT MET"
        return f"{self.name}: {self.value:,.3f} (target {relation} {self.limit:,g}) {verdict}"


# -- timer ------------------------------------------------------------------------------------


def _timer_index(results: Sequence[TimerResult]) -> dict[tuple[str, int], TimerResult]:
    return {(result.structure, result.live): result for result in results}


def _vs_heapq(result: TimerResult, index: dict[tuple[str, int], TimerResult]) -> float | None:
    heap = index.get(("heapq", result.live))
    return None if heap is None else result.ns_per_timer / heap.ns_per_timer


def timer_targets(results: Sequence[TimerResult]) -> list[Target]:
    """The issue's timer targets that the measured sizes allow to evaluate."""
    index = _timer_index(results)
    targets = []
    wheel_large = index.get(("wheel", _TIMER_LARGE))
    wheel_small = index.get(("wheel", _TIMER_SMALL))
    if wheel_large is not None and ("heapq", _TIMER_LARGE) in index:
        ratio = _vs_heapq(wheel_large, index)
        assert ratio is not None
        targets.append(Target("wheel/heapq ns per timer at 1e6 live", ratio, 0.5, at_most=True))
    if wheel_large is not None and wheel_small is not None:
        growth = wheel_large.ns_per_timer / wheel_small.ns_per_timer
        targets.append(Target("wheel ns per timer, 1e6 / 1e4 live", growth, 1.5, at_most=True))
    for result in results:
        if result.structure == "wheel" and result.bytes_per_timer is not None:
            targets.append(
                Target(
                    f"wheel bytes per live timer at {result.live:,}",
                    result.bytes_per_timer,
                    250,
                    at_most=True,
                )
            )
    return targets


def timer_json_lines(results: Sequence[TimerResult], targets: Sequence[Target]) -> list[str]:
    """One JSON object per result, then one with the targets."""
    index = _timer_index(results)
    lines = []
    for result in results:
        ratio = _vs_heapq(result, index)
        record = {
            "bench": "timer",
            "structure": result.structure,
            "live": result.live,
            "ns_per_timer": round(result.ns_per_timer, 1),
            "bytes_per_timer": (
                None if result.bytes_per_timer is None else round(result.bytes_per_timer, 1)
            ),
            "ns_min": round(result.ns_min, 1),
            "gc_ns_per_timer": round(result.gc_ns_per_timer, 1),
            "ns_vs_heapq": None if ratio is None else round(ratio, 3),
            "live_measured": result.live_measured,
            "timers_timed": result.timers_timed,
            "fired": result.fired,
            "mean_timeout": result.mean_timeout,
            "clock": "process_time",
            "memory": "tracemalloc",
        }
        lines.append(json.dumps(record))
    lines.append(_targets_line("timer", targets))
    return lines


def timer_table(results: Sequence[TimerResult], targets: Sequence[Target]) -> str:
    index = _timer_index(results)
    rows = [
        ("live", "structure", "ns/timer", "best", "in GC", "vs heapq", "bytes/timer", "live@mem")
    ]
    for result in results:
        ratio = _vs_heapq(result, index)
        rows.append(
            (
                f"{result.live:,}",
                result.structure,
                f"{result.ns_per_timer:,.0f}",
                f"{result.ns_min:,.0f}",
                f"{result.gc_ns_per_timer:,.0f}",
                "-" if ratio is None else f"{ratio:.2f}x",
                "-" if result.bytes_per_timer is None else f"{result.bytes_per_timer:,.0f}",
                f"{result.live_measured:,}" if result.live_measured else "-",
            )
        )
    note = (
        "ns/timer: median window of process CPU time per timer lifecycle (schedule + cancel "
        "or fire, clock advancing and garbage collector included; 'in GC' is the collector's "
        "part); bytes/timer: tracemalloc, at steady state."
    )
    return _table(rows) + "\n" + note + "\n" + _targets_text(targets)


# -- purgatory --------------------------------------------------------------------------------


def _matches(config: WorkloadConfig, wanted: Mapping[str, float]) -> bool:
    return all(getattr(config, name) == value for name, value in wanted.items())


def _by_impl(results: Sequence[PurgatoryResult]) -> dict[str, PurgatoryResult]:
    return {result.impl: result for result in results}


def purgatory_targets(config: WorkloadConfig, results: Sequence[PurgatoryResult]) -> list[Target]:
    """The issue's purgatory targets; throughput and CPU limits only for their configs."""
    by_impl = _by_impl(results)
    real, naive = by_impl["purgatory"], by_impl["naive"]
    targets = []
    if _matches(config, _THROUGHPUT_CONFIG):
        targets.append(
            Target("purgatory requests per CPU-second", real.requests_per_cpu_s, 150_000, False)
        )
    if _matches(config, _KAFKA_RUN_CONFIG):
        targets.append(Target("purgatory CPU seconds", real.cpu_s, 30, at_most=True))
    assert real.watched_bound is not None
    targets.append(
        Target("purgatory peak watched / bound", real.peak_watched / real.watched_bound, 1, True)
    )
    targets.append(
        Target(
            "purgatory / naive requests per CPU-second",
            real.requests_per_cpu_s / naive.requests_per_cpu_s,
            2,
            at_most=False,
        )
    )
    return targets


def purgatory_json_lines(
    results: Sequence[PurgatoryResult], targets: Sequence[Target]
) -> list[str]:
    lines = []
    for result in results:
        record = {
            "bench": "purgatory",
            "impl": result.impl,
            "requests": result.requests,
            "cpu_s": round(result.cpu_s, 6),
            "gc_s": round(result.gc_s, 6),
            "requests_per_cpu_s": round(result.requests_per_cpu_s, 1),
            "completed": result.completed,
            "expired": result.expired,
            "peak_watched": result.peak_watched,
            "peak_live": result.peak_live,
            "watched_bound": result.watched_bound,
            "peak_memory_bytes": result.peak_memory_bytes,
            "cpu_s_runs": [round(cpu, 6) for cpu in result.cpu_s_runs],
            "clock": "process_time",
            "memory": "tracemalloc peak",
        }
        lines.append(json.dumps(record))
    lines.append(_targets_line("purgatory", targets))
    return lines


def purgatory_table(results: Sequence[PurgatoryResult], targets: Sequence[Target]) -> str:
    rows = [
        (
            "impl",
            "requests",
            "CPU s",
            "in GC",
            "req/CPU-s",
            "completed",
            "expired",
            "peak live",
            "peak watched",
            "bound",
            "peak MiB",
        )
    ]
    for result in results:
        rows.append(
            (
                result.impl,
                f"{result.requests:,}",
                f"{result.cpu_s:.2f}",
                f"{result.gc_s:.2f}",
                f"{result.requests_per_cpu_s:,.0f}",
                f"{result.completed:,}",
                f"{result.expired:,}",
                f"{result.peak_live:,}",
                f"{result.peak_watched:,}",
                "-" if result.watched_bound is None else f"{result.watched_bound:,}",
                (
                    "-"
                    if result.peak_memory_bytes is None
                    else f"{result.peak_memory_bytes / 2**20:,.1f}"
                ),
            )
        )
    note = (
        "CPU s: process CPU time of the replay (median of the repeats; 'in GC' is the garbage "
        "collector's part); peak MiB: tracemalloc "
        "peak of a separate replay; bound: keys x (peak live + purge interval + most "
        "completions in one ms)."
    )
    return _table(rows) + "\n" + note + "\n" + _targets_text(targets)


# -- shared -----------------------------------------------------------------------------------


def _targets_line(bench: str, targets: Sequence[Target]) -> str:
    return json.dumps({"bench": bench, "targets": [target.as_dict() for target in targets]})


def _targets_text(targets: Sequence[Target]) -> str:
    return "\n".join(f"  {target.describe()}" for target in targets)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    )

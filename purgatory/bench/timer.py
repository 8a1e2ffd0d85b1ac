"""Timer benchmark: the timing wheel against a lazy-cancellation heap and a SortedList.

Every structure replays the identical :class:`~purgatory.bench.timer_stream.TimerStream` (same
seed) in the same process, one structure after the other, so the garbage collector only ever
walks the structure being measured. After an untimed warm-up that lasts one maximum timeout
(so the population of outstanding timers, and the heap's cancelled leftovers, are in steady
state), ``repeat`` measurement windows follow. A window's cost is the process CPU time
(``time.process_time_ns``) it took, divided by the timers scheduled in it (in steady state as
many are cancelled or fire); it includes the driver loop, the clock advancing and the cyclic
garbage collector, whose share is reported too (CPython's default collector settings: with a
million live timers the full collections it runs cost more than the structure's own code).
The reported figure is the median window.

Memory is measured in a separate replay per structure, with tracemalloc, at the end of the
warm-up: every block still allocated by then, except the stream's own, divided by the number
of live timers. That includes the deadline ints, the handles and the caller's list slot that
keeps each cancellable handle (8 bytes), as any user of a timer pays them.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Protocol

import attrs

from purgatory.bench import timer_stream
from purgatory.bench.baselines import HeapqTimer, SortedListTimer
from purgatory.bench.errors import BenchArgumentError
from purgatory.bench.gc_time import GcTime
from purgatory.bench.timer_stream import FIRES, Chunk, TimerStream, TimerStreamConfig
from purgatory.timing_wheel import TimingWheel

__all__ = ["STRUCTURES", "TimerHandle", "TimerResult", "TimerStructure", "run_timer_bench"]


class TimerHandle(Protocol):
    """What ``schedule`` returns: cancelling it returns whether the timer was pending."""

    def cancel(self) -> bool: ...


class TimerStructure(Protocol):
    """What the driver needs: schedule a callback, advance the clock."""

    def schedule(self, deadline: int, callback: Callable[[], object]) -> TimerHandle: ...

    def advance(self, now: int) -> int: ...


STRUCTURES: dict[str, Callable[[], TimerStructure]] = {
    "wheel": TimingWheel,
    "heapq": HeapqTimer,
    "sortedlist": SortedListTimer,
}

_MIN_WINDOW_TIMERS = 200_000  # below this a window is too short to time reliably
_CHUNK_STEPS = 500


def _fire() -> None:
    """The callback of every timer."""


@attrs.define(frozen=True)
class TimerResult:
    """One structure at one size. ``ns_per_timer`` is the median window, ``ns_min`` the best,
    ``gc_ns_per_timer`` the median of the part spent in the cyclic garbage collector."""

    structure: str
    live: int  # the requested steady-state number of live timers
    live_measured: int  # live timers at the end of the warm-up, where memory is measured
    ns_per_timer: float
    ns_min: float
    gc_ns_per_timer: float
    bytes_per_timer: float | None  # None when memory was not measured
    timers_timed: int  # timers scheduled in each window
    fired: int  # timers fired during the whole run (identical for every structure)
    mean_timeout: int


@attrs.define
class _Plan:
    """Step ranges of one size: warm-up first, then the measurement windows."""

    config: TimerStreamConfig
    warmup_steps: int
    window_steps: int
    windows: int

    @property
    def total_steps(self) -> int:
        return self.warmup_steps + self.windows * self.window_steps


def _plan(config: TimerStreamConfig, windows: int, window_timers: int | None) -> _Plan:
    # Warm up for one maximum timeout, rounded up to whole chunks.
    warmup = int(config.max_timeout / config.ticks_per_step) + 1
    warmup = -(-warmup // _CHUNK_STEPS) * _CHUNK_STEPS
    if window_timers is None:
        window_timers = max(config.live, _MIN_WINDOW_TIMERS)
    window = -(-window_timers // config.per_tick)
    window = -(-window // _CHUNK_STEPS) * _CHUNK_STEPS
    return _Plan(config, warmup, window, windows)


class _Driver:
    """Replays steps on one structure, remembering which handles to cancel at which step."""

    def __init__(self, structure: TimerStructure, total_steps: int) -> None:
        self.structure = structure
        # Step i's handles to cancel; one extra list for cancellations after the last step.
        self.cancel_at: list[list[TimerHandle] | None] = [[] for _ in range(total_steps + 1)]
        self.scheduled = 0
        self.cancelled = 0
        self.fired = 0

    def run(self, chunk: Chunk) -> None:
        schedule = self.structure.schedule
        advance = self.structure.advance
        cancel_at = self.cancel_at
        delays = iter(chunk.delays)
        cancel_steps = iter(chunk.cancel_steps)
        step = chunk.first_step
        fired = cancelled = 0
        for now, count in zip(chunk.times, chunk.counts, strict=True):
            fired += advance(now)
            due = cancel_at[step]
            assert due is not None, "steps must run in order, each once"
            cancel_at[step] = None  # nothing is filed under a past step
            for handle in due:
                handle.cancel()
            cancelled += len(due)
            for delay, cancel_step in zip(
                islice(delays, count), islice(cancel_steps, count), strict=True
            ):
                handle = schedule(now + delay, _fire)
                if cancel_step != FIRES:
                    cancel_at[cancel_step].append(handle)  # type: ignore[union-attr]
            step += 1
        self.fired += fired
        self.cancelled += cancelled
        self.scheduled += len(chunk.delays)

    @property
    def live(self) -> int:
        return self.scheduled - self.cancelled - self.fired


def _timed_pass(plan: _Plan, name: str) -> tuple[list[int], list[int], int, int]:
    """Replay the stream on a new structure. Returns the CPU ns of each window, the part of it
    spent in the garbage collector, the timers fired and the number the stream expects."""
    stream = TimerStream(plan.config, plan.total_steps)
    gc.collect()
    driver = _Driver(STRUCTURES[name](), plan.total_steps)
    window_ns = [0] * plan.windows
    window_gc_ns = [0] * plan.windows
    clock = time.process_time_ns
    with GcTime() as collector:
        for chunk in stream.chunks(_CHUNK_STEPS):
            gc_before = collector.ns
            start = clock()
            driver.run(chunk)
            elapsed = clock() - start
            window = (chunk.first_step - plan.warmup_steps) // plan.window_steps
            if window >= 0:
                window_ns[window] += elapsed
                window_gc_ns[window] += collector.ns - gc_before
    return window_ns, window_gc_ns, driver.fired, stream.expected_fired(plan.total_steps - 1)


def _memory_pass(plan: _Plan, name: str) -> tuple[float, int]:
    """Bytes per live timer for one structure at the end of the warm-up, and the live count."""
    stream = TimerStream(plan.config, plan.warmup_steps)
    chunks: Iterator[Chunk] = stream.chunks(_CHUNK_STEPS)
    gc.collect()
    driver = _Driver(STRUCTURES[name](), plan.warmup_steps)  # an empty structure: no cost
    tracemalloc.start()
    try:
        for chunk in chunks:
            driver.run(chunk)
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    kept = snapshot.filter_traces([tracemalloc.Filter(False, timer_stream.__file__)])
    held = sum(stat.size for stat in kept.statistics("filename"))
    live = driver.live
    del driver
    return held / max(live, 1), live


def run_timer_bench(
    live_sizes: Sequence[int],
    *,
    names: Sequence[str] = tuple(STRUCTURES),
    per_tick: int = 100,
    repeat_windows: int = 3,
    window_timers: int | None = None,
    seed: int = 1,
    memory: bool = True,
) -> list[TimerResult]:
    """Run the timer benchmark for every size in ``live_sizes``; one result per structure.

    Each window schedules about ``window_timers`` timers (default: the larger of the size and
    200,000), rounded up to whole chunks of 500 steps. Raises BenchArgumentError for a bad
    argument and AssertionError if a structure fires a different number of timers than the
    stream implies.
    """
    unknown = [name for name in names if name not in STRUCTURES]
    if unknown or not names:
        raise BenchArgumentError(
            f"unknown structures {unknown!r}; choose from {', '.join(STRUCTURES)}"
        )
    if repeat_windows < 1:
        raise BenchArgumentError(f"repeat must be >= 1, got {repeat_windows!r}")
    if window_timers is not None and window_timers < 1:
        raise BenchArgumentError(f"window_timers must be >= 1, got {window_timers!r}")
    results = []
    for live in live_sizes:
        config = TimerStreamConfig(live=live, per_tick=per_tick, seed=seed)
        plan = _plan(config, repeat_windows, window_timers)
        timers = plan.window_steps * per_tick
        for name in names:
            window_ns, window_gc_ns, fired, expected = _timed_pass(plan, name)
            if fired != expected:
                raise AssertionError(f"{name} fired {fired} timers, the stream expects {expected}")
            bytes_per_timer: float | None = None
            live_measured = 0
            if memory:
                bytes_per_timer, live_measured = _memory_pass(plan, name)
            per_window = [ns / timers for ns in window_ns]
            gc_per_window = [ns / timers for ns in window_gc_ns]
            results.append(
                TimerResult(
                    structure=name,
                    live=live,
                    live_measured=live_measured,
                    ns_per_timer=statistics.median(per_window),
                    ns_min=min(per_window),
                    gc_ns_per_timer=statistics.median(gc_per_window),
                    bytes_per_timer=bytes_per_timer,
                    timers_timed=timers,
                    fired=fired,
                    mean_timeout=config.mean_timeout,
                )
            )
    return results

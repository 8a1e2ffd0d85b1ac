"""Benchmarks: the engine against a bare heapq loop, and whole-scenario throughput.

Engine overhead: the same callbacks (``processes`` concurrent self-rescheduling processes,
delays from a fixed table) run on :class:`sim.engine.Simulator`, on a bare heapq loop (a
``(time, seq, callback)`` heap and nothing else: no Event objects, no cancellation, no
checks) and on :class:`purgatory.TimingWheel` driven the same way, interleaved round by round
in one process. Each variant's best round counts (the least disturbed by other load). Rates
are events per wall second; the ratios compare process CPU time per event (engine / heapq),
which time spent waiting for a busy machine's CPU does not inflate.
"""

from __future__ import annotations

import gc
import itertools
import random
import time
from collections.abc import Callable
from heapq import heappop, heappush

from purgatory import TimingWheel
from sim.engine import Simulator

__all__ = ["HeapqLoop", "WheelLoop", "engine_overhead", "scenario_throughput"]


CallLater = Callable[[int, Callable[[], object]], object]
Variant = Callable[[], tuple[CallLater, Callable[[], None]]]
"""Makes a fresh loop; returns its ``call_later`` and a function that runs it to the end."""

_FAR_FUTURE = 1 << 62


class HeapqLoop:
    """The baseline: the least a heapq event loop with FIFO ties can do."""

    def __init__(self) -> None:
        self.now = 0
        self._heap: list[tuple[int, int, Callable[[], object]]] = []
        self._counter = itertools.count()

    def call_later(self, delay: int, callback: Callable[[], object]) -> None:
        heappush(self._heap, (self.now + delay, next(self._counter), callback))

    def run(self) -> None:
        heap = self._heap
        while heap:
            self.now, _, callback = heappop(heap)
            callback()


class WheelLoop:
    """The same loop with :class:`purgatory.TimingWheel` (tick 1 us) as the scheduler."""

    def __init__(self) -> None:
        self.now = 0
        self._wheel = TimingWheel(1)

    def call_later(self, delay: int, callback: Callable[[], object]) -> None:
        self._wheel.schedule(self.now + delay, callback)

    def run(self) -> None:
        wheel = self._wheel
        while (deadline := wheel.next_deadline()) is not None:
            self.now = deadline
            wheel.advance(deadline)


def _load(call_later: CallLater, events: int, processes: int, delays: list[int]) -> None:
    """Schedule ``processes`` processes that reschedule themselves until ``events`` ran."""
    done = 0
    mask = len(delays) - 1

    def make(first: int) -> Callable[[], None]:
        def step() -> None:
            nonlocal done
            if done >= events:
                return
            call_later(delays[(done + first) & mask], step)
            done += 1

        return step

    for i in range(processes):
        call_later(delays[i & mask], make(i))


def _time_run(
    variant: Variant, events: int, processes: int, delays: list[int]
) -> tuple[float, float]:
    """(wall seconds, CPU seconds) per event of one run of ``variant``."""
    call_later, run = variant()
    _load(call_later, events, processes, delays)
    gc.collect()
    gc.disable()
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        gc.enable()
    count = events + processes
    return wall / count, cpu / count


def _heapq() -> tuple[CallLater, Callable[[], None]]:
    loop = HeapqLoop()
    return loop.call_later, loop.run


def _engine() -> tuple[CallLater, Callable[[], None]]:
    sim = Simulator(0)
    return sim.call_later, lambda: sim.run_until(_FAR_FUTURE)  # as the runner drives it


def _wheel() -> tuple[CallLater, Callable[[], None]]:
    loop = WheelLoop()
    return loop.call_later, loop.run


def engine_overhead(
    *, events: int = 50_000, processes: int = 1000, rounds: int = 15, wheel: bool = True
) -> dict[str, float]:
    """Measure the engine against the bare heapq loop (and the timing wheel).

    Returns events per wall second of each variant and ``engine_overhead_ratio`` (engine
    CPU time per event / heapq CPU time per event; the target is <= 1.5), plus
    ``wheel_overhead_ratio`` when ``wheel``.
    """
    rng = random.Random(42)
    delays = [rng.randrange(1, 2000) for _ in range(4096)]
    variants: dict[str, Variant] = {"heapq": _heapq, "engine": _engine}
    if wheel:
        variants["wheel"] = _wheel
    wall = dict.fromkeys(variants, float("inf"))
    cpu = dict.fromkeys(variants, float("inf"))
    for _ in range(rounds):
        for name, factory in variants.items():
            wall_time, cpu_time = _time_run(factory, events, processes, delays)
            wall[name] = min(wall[name], wall_time)
            cpu[name] = min(cpu[name], cpu_time)
    result = {
        "events_per_wall_s": round(1 / wall["engine"]),
        "heapq_events_per_wall_s": round(1 / wall["heapq"]),
        "engine_overhead_ratio": round(cpu["engine"] / cpu["heapq"], 3),
    }
    if wheel:
        result["wheel_events_per_wall_s"] = round(1 / wall["wheel"])
        result["wheel_overhead_ratio"] = round(cpu["wheel"] / cpu["heapq"], 3)
    return result


def scenario_throughput(source: str | None = None) -> dict[str, float]:
    """Messages and events per wall second of one run of a scenario (default: ``default``).

    Raises whatever the run raises (ClusterNotWiredError until the cluster is wired in).
    """
    from sim.runner import run_scenario
    from sim.scenario import load_scenario

    result = run_scenario(load_scenario(source))
    seconds = result.wall_seconds
    return {
        "messages_per_wall_s": round(result.messages.num_rows / seconds),
        "events_per_wall_s": round(result.summary["run"]["events_processed"] / seconds),
    }

"""Benchmarks: the engine against a bare heapq loop, and whole-scenario throughput.

Scenario throughput: the default scenario (the real brokers, clients and network) run for
2, 4 and 8 simulated seconds; messages and events per wall second and per CPU second, CPU
per message, and how linear the cost is in the simulated duration.

Scale: the bundled ``confluent-2020`` scenario (10 brokers, 100 partitions, 200,000 msg/s) run
for :data:`SCALE_DURATION_US`; simulated messages per wall and per CPU second. The cost model
behind these figures is ``python -m sim.bench.cost_model``.

The compiled build (docs/benchmarks.md): ``python -m sim bench`` reports which packages run
compiled and, when any does, runs itself again on pure Python in a subprocess
(:mod:`purgatory.compiled`) and reports that run's figures beside its own.

Engine overhead: the same callbacks (``processes`` concurrent self-rescheduling processes,
delays from a fixed table) run on :class:`sim.core.engine.Simulator`, on a bare heapq loop (a
``(time, seq, callback)`` heap and nothing else: no Event objects, no cancellation, no
checks) and on :class:`purgatory.TimingWheel` driven the same way, interleaved round by round
in one process. Each variant's best round counts (the least disturbed by other load). Rates
are events per wall second; the ratios compare process CPU time per event (engine / heapq),
which time spent waiting for a busy machine's CPU does not inflate.
"""

from __future__ import annotations

import gc
import itertools
import json
import random
import subprocess
import time
from collections.abc import Callable, Sequence
from heapq import heappop, heappush
from typing import TYPE_CHECKING

from purgatory import TimingWheel
from purgatory.compiled import pure_python_command
from sim.core.engine import Simulator

if TYPE_CHECKING:
    from sim.scenario import Scenario

__all__ = [
    "BENCH_DURATIONS_S",
    "PACKAGES",
    "SCALE_DURATION_US",
    "SCALE_SCENARIO",
    "HeapqLoop",
    "WheelLoop",
    "engine_overhead",
    "pure_python_figures",
    "scale_throughput",
    "scenario_throughput",
]

PACKAGES = ("purgatory", "replica", "coordinator", "apis", "cluster", "sim")
"""The project's packages, whose build (compiled or pure Python) the benchmark reports."""


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


BENCH_DURATIONS_S: tuple[int, ...] = (2, 4, 8)
"""Simulated durations of the scenario benchmark: the cost must grow linearly with them."""


def scenario_throughput(
    scenario: Scenario | None = None,
    durations_s: Sequence[int] = BENCH_DURATIONS_S,
    *,
    repeat: int = 1,
) -> dict[str, float]:
    """Simulate ``scenario`` (default: the bundled ``default``) for each of ``durations_s``
    simulated seconds (warmup: a quarter of it) and measure the host's effort, after one short
    unmeasured run that pays the process's one-time costs. Each duration is run ``repeat``
    times and its best run counts (least wall time, least CPU time: a run is deterministic, so
    only the host's disturbance differs between them).

    Returns, for the longest run, ``messages_per_wall_s`` and ``events_per_wall_s`` (the
    end-to-end rates: produce, replicate, consume, process, commit) and the same per second
    of process CPU time (``*_per_cpu_s``, which a busy machine does not distort); per
    duration ``d``, ``cpu_us_per_message_<d>s``; and ``linearity``: CPU per simulated second
    of the longest run over that of the shortest (1.0: cost exactly linear in the simulated
    duration). Raises ValueError for an empty or non-positive ``durations_s``; raises
    whatever a run raises; ValueError for a ``repeat`` below 1.
    """
    from sim.scenario import load_scenario, with_overrides

    if not durations_s or min(durations_s) <= 0:
        raise ValueError(f"durations_s must be positive seconds, got {list(durations_s)!r}")
    _check_repeat(repeat)
    base = load_scenario() if scenario is None else scenario
    # A process's first run also pays for imports and first-time set-up (the summary's
    # pyarrow kernels): a short run first, unmeasured, so that the shortest measured run is
    # not charged for them and ``linearity`` compares like with like.
    _best_run(with_overrides(base, [("simulation.warmup", 0), ("simulation.duration", 200_000)]), 1)
    results: dict[str, float] = {}
    cpu_per_simulated_s: dict[int, float] = {}
    for seconds in sorted(durations_s):
        duration_us = seconds * 1_000_000
        run = with_overrides(
            base,
            [("simulation.warmup", duration_us // 4), ("simulation.duration", duration_us)],
        )
        messages, events, wall, cpu = _best_run(run, repeat)
        results[f"cpu_us_per_message_{seconds}s"] = round(cpu / max(messages, 1) * 1e6, 1)
        cpu_per_simulated_s[seconds] = cpu / seconds
    # the last duration is the longest: its run gives the rates
    shortest, last = min(cpu_per_simulated_s), max(cpu_per_simulated_s)
    return {
        "messages_per_wall_s": round(messages / wall),
        "events_per_wall_s": round(events / wall),
        "messages_per_cpu_s": round(messages / cpu),
        "events_per_cpu_s": round(events / cpu),
        **results,
        "linearity": round(cpu_per_simulated_s[last] / cpu_per_simulated_s[shortest], 3),
    }


SCALE_SCENARIO = "confluent-2020"
"""The bundled scenario of the scale benchmark."""

SCALE_DURATION_US = 500_000
"""Simulated duration of the scale benchmark (100,000 messages; warmup: a fifth of it)."""


def scale_throughput(
    scenario: Scenario | None = None, duration_us: int = SCALE_DURATION_US, *, repeat: int = 1
) -> dict[str, float]:
    """Simulate ``scenario`` (default: :data:`SCALE_SCENARIO`) for ``duration_us``, best of
    ``repeat`` runs (as in :func:`scenario_throughput`); return ``messages``,
    ``messages_per_wall_s`` and ``messages_per_cpu_s`` (process CPU time) and
    ``cpu_us_per_message``. Raises whatever the run raises; ValueError for a ``repeat`` below 1.
    """
    from sim.scenario import load_scenario, with_overrides

    _check_repeat(repeat)
    base = load_scenario(SCALE_SCENARIO) if scenario is None else scenario
    run = with_overrides(
        base, [("simulation.warmup", duration_us // 5), ("simulation.duration", duration_us)]
    )
    messages, _, wall, cpu = _best_run(run, repeat)
    return {
        "messages": messages,
        "messages_per_wall_s": round(messages / wall),
        "messages_per_cpu_s": round(messages / cpu),
        "cpu_us_per_message": round(cpu / max(messages, 1) * 1e6, 1),
    }


def _check_repeat(repeat: int) -> None:
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat!r}")


def _best_run(scenario: Scenario, repeat: int) -> tuple[int, int, float, float]:
    """Run ``scenario`` ``repeat`` times; return its messages and engine events (the same in
    every run: a run is deterministic) and the least wall seconds of the engine's loop and the
    least process CPU seconds of a whole run."""
    from sim.runner import run_scenario

    wall = cpu = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        result = run_scenario(scenario)
        cpu = min(cpu, time.process_time() - started)
        wall = min(wall, result.wall_seconds)
    return result.messages.num_rows, result.summary["run"]["events_processed"], wall, cpu


def pure_python_figures(bench_args: Sequence[str]) -> dict[str, float]:
    """Run ``python -m sim bench --json *bench_args`` on pure Python (the compiled modules
    hidden, :func:`purgatory.compiled.run_pure`) in a subprocess; return its figures.

    Raises subprocess.CalledProcessError if that run fails.
    """
    command = pure_python_command("sim", ["bench", "--json", *bench_args])
    completed = subprocess.run(command, check=True, capture_output=True, text=True)
    report: dict[str, object] = json.loads(completed.stdout)
    return {key: value for key, value in report.items() if isinstance(value, (int, float))}

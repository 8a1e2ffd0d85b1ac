"""Kafka's purgatory performance test, replayed on virtual time.

The workload of Kafka's ``TestPurgatoryPerformance``: requests arrive as a Poisson process at
``rate`` per second; each is a delayed operation watched under the same ``keys`` keys (drawn
once, with replacement, from ``key_space_size`` keys named ``fakeKey<n>``); its completion
latency is log-normal with ``mu = ln(pct50)`` and ``sigma = (ln(pct75) - mu) / 0.674490``,
truncated to whole milliseconds as Kafka does. A request whose latency is below ``timeout`` is
force-completed by a completion queue when its latency has elapsed; every other one expires
through the purgatory's timer. Nothing calls ``check_and_complete``, as in Kafka's test, so
completed operations leave the watch lists only by purging.

Time is virtual, in milliseconds, and the run goes as fast as it can. The whole stream (arrival
and completion of every request) is generated up front from the seed, so the purgatory and the
naive baseline replay exactly the same events through the same driver loop. At each
millisecond with an event the driver: advances the purgatory's clock (expiring what is due),
submits that millisecond's arrivals with ``try_complete_else_watch``, then force-completes the
requests whose latency ends then. A completion therefore always precedes its deadline, so
exactly the requests with latency < timeout complete and all others expire.

Differences from Kafka's test: one thread instead of a generator thread and a completion thread
(no lock contention, no sleeping); ``FakeOperation.try_complete`` is always False, so a
request with zero latency is completed by the completion queue in its arrival millisecond
instead of inside ``try_complete_else_watch``; the reported CPU time covers the replay only
(the driver loop included), not generating the stream.

Reported per implementation: process CPU seconds of the replay (``time.process_time_ns``; the
cyclic garbage collector's share is reported too), requests per CPU-second, completed and
expired counts, the peak of ``watched`` next to its bound ``keys x (peak live operations +
purge interval + most completions in one millisecond)`` (the completions between two purgatory
calls can linger past the purge interval), and the tracemalloc peak of a separate, untimed
replay (the stream is allocated before it starts, so it is not counted). The naive baseline's
watch lists are never checked in this workload, so they only grow: the unbounded memory of
Kafka's old purgatory (KAFKA-664) that purging exists to prevent.
"""

from __future__ import annotations

import gc
import math
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

import attrs

from purgatory.bench.baselines import NaivePurgatory
from purgatory.bench.errors import BenchArgumentError
from purgatory.bench.gc_time import GcTime
from purgatory.delayed_operation import DelayedOperation
from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory

__all__ = [
    "IMPLEMENTATIONS",
    "FakeOperation",
    "MeteredPurgatory",
    "PurgatoryResult",
    "RequestStream",
    "WorkloadConfig",
    "drive",
    "generate_requests",
    "run_purgatory_bench",
]

_PCT75_OF_STANDARD_NORMAL = 0.674490

# One millisecond with events: (time, ops-table slots of the requests arriving then, slots of
# the requests completing then). An arriving request that will expire gets slot -1.
Moment = tuple[int, Sequence[int], Sequence[int]]


@attrs.define(frozen=True)
class WorkloadConfig:
    """Parameters of Kafka's test (``--num``, ``--rate`` per second, times in ms)."""

    num: int = 200_000
    rate: float = 10_000.0
    keys: int = 3
    key_space_size: int = 100
    timeout: int = 200
    pct50: float = 20.0
    pct75: float = 60.0
    purge_interval: int = 1000
    seed: int = 1

    def __attrs_post_init__(self) -> None:
        for name in ("num", "rate", "keys", "key_space_size", "timeout", "pct50"):
            if getattr(self, name) <= 0:
                raise BenchArgumentError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.pct75 < self.pct50:
            raise BenchArgumentError(
                f"pct75 must be >= pct50 (latency percentiles), got {self.pct75!r} < {self.pct50!r}"
            )
        if self.purge_interval < 0:
            raise BenchArgumentError(f"purge_interval must be >= 0, got {self.purge_interval!r}")


class FakeOperation(DelayedOperation):
    """A request of the workload: completed by the completion queue or by expiry, nothing else."""

    __slots__ = ()

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        """Kafka's fake operation counts down a latch here; the driver counts instead."""


@attrs.define(frozen=True)
class RequestStream:
    """The pre-generated run: keys, the moments with events, and what to expect."""

    keys: tuple[str, ...]
    timeline: list[Moment]
    completing: int  # requests with latency < timeout; they take ops-table slots 0..n-1
    end: int  # a time by which every request has completed or expired
    max_completions_per_ms: int


def generate_requests(config: WorkloadConfig) -> RequestStream:
    """Draw the keys, arrivals and latencies of ``config`` (deterministic for its seed)."""
    rng = random.Random(config.seed)
    keys = tuple(f"fakeKey{rng.randrange(config.key_space_size)}" for _ in range(config.keys))
    mu = math.log(config.pct50)
    sigma = (math.log(config.pct75) - mu) / _PCT75_OF_STANDARD_NORMAL
    rate_per_ms = config.rate / 1000
    arrivals: dict[int, list[int]] = {}
    completions: dict[int, list[int]] = {}
    arrival_time = 0.0
    slot = 0
    for _ in range(config.num):
        arrival_time += rng.expovariate(rate_per_ms)
        arrival = int(arrival_time)
        latency = int(rng.lognormvariate(mu, sigma))
        if latency < config.timeout:
            arrivals.setdefault(arrival, []).append(slot)
            completions.setdefault(arrival + latency, []).append(slot)
            slot += 1
        else:
            arrivals.setdefault(arrival, []).append(-1)
    timeline: list[Moment] = [
        (now, arrivals.get(now, ()), completions.get(now, ()))
        for now in sorted(arrivals.keys() | completions.keys())
    ]
    return RequestStream(
        keys=keys,
        timeline=timeline,
        completing=slot,
        end=int(arrival_time) + config.timeout,
        max_completions_per_ms=max(map(len, completions.values()), default=0),
    )


class PurgatoryUnderTest(Protocol):
    """What the driver needs from a purgatory."""

    def try_complete_else_watch(
        self, operation: FakeOperation, keys: Sequence[Hashable]
    ) -> bool: ...

    def advance_clock(self, now: int) -> int: ...

    @property
    def peak_watched(self) -> int: ...


class MeteredPurgatory(DelayedOperationPurgatory[FakeOperation]):
    """The real purgatory, also recording the peak of ``watched``.

    Without ``check_and_complete`` or ``cancel_for_key`` (as in this workload) ``watched`` only
    shrinks when a purge runs, so its peak is the larger of the last value and the values right
    before each purge.
    """

    def __init__(self, purge_interval: int) -> None:
        super().__init__("bench", purge_interval=purge_interval)
        self._peak_watched = 0

    def purge_completed(self) -> int:
        self._peak_watched = max(self._peak_watched, self.watched)
        return super().purge_completed()

    @property
    def peak_watched(self) -> int:
        return max(self._peak_watched, self.watched)


IMPLEMENTATIONS: dict[str, Callable[[WorkloadConfig], PurgatoryUnderTest]] = {
    "purgatory": lambda config: MeteredPurgatory(config.purge_interval),
    "naive": lambda config: NaivePurgatory[FakeOperation](),
}


@attrs.define(frozen=True)
class RunCounts:
    """What one replay observed; identical for every implementation."""

    completed: int
    expired: int
    peak_live: int  # operations waiting (neither completed nor expired), at the worst moment


def drive(purgatory: PurgatoryUnderTest, stream: RequestStream, timeout: int) -> RunCounts:
    """Replay ``stream`` on ``purgatory``: the loop whose CPU time the benchmark reports."""
    # Completing requests are kept here until the completion queue forces them; a request that
    # will expire is only written to the spare last slot, which the next one overwrites.
    ops: list[FakeOperation | None] = [None] * (stream.completing + 1)
    submit = purgatory.try_complete_else_watch
    advance_clock = purgatory.advance_clock
    keys = stream.keys
    arrived = completed = expired = peak_live = 0
    for now, arrivals, completions in stream.timeline:
        expired += advance_clock(now)
        for slot in arrivals:
            operation = FakeOperation(timeout)
            ops[slot] = operation
            submit(operation, keys)
        arrived += len(arrivals)
        peak_live = max(peak_live, arrived - completed - expired)
        for slot in completions:
            completed += ops[slot].force_complete()  # type: ignore[union-attr]
            ops[slot] = None
    expired += advance_clock(stream.end)
    return RunCounts(completed=completed, expired=expired, peak_live=peak_live)


@attrs.define(frozen=True)
class PurgatoryResult:
    """One implementation's figures. ``cpu_s`` is the median over the repeats."""

    impl: str
    requests: int
    cpu_s: float
    cpu_s_runs: tuple[float, ...]
    gc_s: float  # the part of cpu_s spent in the cyclic garbage collector (median)
    completed: int
    expired: int
    peak_live: int
    peak_watched: int
    watched_bound: int | None  # keys x (peak live + purge interval + completion burst)
    peak_memory_bytes: int | None  # tracemalloc peak during a separate replay

    @property
    def requests_per_cpu_s(self) -> float:
        return self.requests / self.cpu_s


@attrs.define(frozen=True)
class _TimedRun:
    cpu_ns: int
    gc_ns: int  # the part of cpu_ns spent in the cyclic garbage collector
    counts: RunCounts
    peak_watched: int


def _timed_run(name: str, config: WorkloadConfig, stream: RequestStream) -> _TimedRun:
    gc.collect()
    with GcTime() as collector:
        start = time.process_time_ns()
        purgatory = IMPLEMENTATIONS[name](config)
        counts = drive(purgatory, stream, config.timeout)
        elapsed = time.process_time_ns() - start
    return _TimedRun(elapsed, collector.ns, counts, purgatory.peak_watched)


def _peak_memory(name: str, config: WorkloadConfig, stream: RequestStream) -> int:
    """Peak bytes allocated by a replay (the stream is older, so it is not counted)."""
    gc.collect()
    tracemalloc.start()
    try:
        purgatory = IMPLEMENTATIONS[name](config)
        drive(purgatory, stream, config.timeout)
        peak = tracemalloc.get_traced_memory()[1]
        del purgatory
    finally:
        tracemalloc.stop()
    return peak


def run_purgatory_bench(
    config: WorkloadConfig, *, repeat: int = 1, memory: bool = True
) -> list[PurgatoryResult]:
    """Replay the workload on the purgatory and the naive baseline, alternating, ``repeat``
    times each; raises AssertionError if they disagree on what completed or expired."""
    if repeat < 1:
        raise BenchArgumentError(f"repeat must be >= 1, got {repeat!r}")
    stream = generate_requests(config)
    runs: dict[str, list[_TimedRun]] = {name: [] for name in IMPLEMENTATIONS}
    for _ in range(repeat):
        for name in IMPLEMENTATIONS:
            runs[name].append(_timed_run(name, config, stream))
    expected = (stream.completing, config.num - stream.completing)
    results = []
    for name, name_runs in runs.items():
        for run in name_runs:
            if (run.counts.completed, run.counts.expired) != expected:
                raise AssertionError(
                    f"{name}: {run.counts.completed} completed / {run.counts.expired} expired, "
                    f"the stream expects {expected[0]} / {expected[1]}"
                )
        counts, peak_watched = name_runs[0].counts, name_runs[0].peak_watched
        cpu_runs = tuple(run.cpu_ns / 1e9 for run in name_runs)
        results.append(
            PurgatoryResult(
                impl=name,
                requests=config.num,
                cpu_s=statistics.median(cpu_runs),
                cpu_s_runs=cpu_runs,
                gc_s=statistics.median(run.gc_ns / 1e9 for run in name_runs),
                completed=counts.completed,
                expired=counts.expired,
                peak_live=counts.peak_live,
                peak_watched=peak_watched,
                watched_bound=(
                    config.keys
                    * (counts.peak_live + config.purge_interval + stream.max_completions_per_ms)
                    if name == "purgatory"
                    else None
                ),
                peak_memory_bytes=_peak_memory(name, config, stream) if memory else None,
            )
        )
    return results

"""A seeded, pre-generated stream of timer events for the timer benchmark.

The clock moves one tick per *step*, except for rare idle jumps. At every step ``per_tick`` new
timers are scheduled with timeouts drawn uniformly from ``[1, 2 * mean_timeout - 1]``; a
``cancel_fraction`` of them is cancelled at a uniformly drawn time before its deadline, the rest
fire. ``mean_timeout`` is chosen so that about ``live`` timers are outstanding in steady state
(Little's law): ``live = arrival rate * mean lifetime``, where a fired timer lives its whole
timeout and a cancelled one half of it on average.

The stream is generated lazily, chunk by chunk, so a run over millions of timers never holds
them all in memory; the same config always yields the same events. A chunk is a few flat
``array`` objects: they are not tracked by the garbage collector, so generating the stream does
not trigger collections that would then walk the structure under test. Only
``Random.random`` (a C method) is called here, so every allocation made while generating is
attributed to this module and the memory measurement can leave it out.
"""

from __future__ import annotations

import random
from array import array
from bisect import bisect_left
from collections.abc import Iterator

import attrs

from purgatory.bench.errors import BenchArgumentError

__all__ = ["Chunk", "TimerStream", "TimerStreamConfig"]

FIRES = -1  # the cancel step of a timer that is never cancelled


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise BenchArgumentError(f"{name} must be positive, got {value!r}")


@attrs.define(frozen=True)
class TimerStreamConfig:
    """Shape of the stream. ``live`` is the steady-state number of outstanding timers."""

    live: int
    per_tick: int = 100
    cancel_fraction: float = 0.9
    jump_probability: float = 0.001  # chance that a step is an idle jump instead of one tick
    max_jump: int = 200  # an idle jump moves the clock by 2..max_jump ticks
    seed: int = 1

    def __attrs_post_init__(self) -> None:
        _positive("live", self.live)
        _positive("per_tick", self.per_tick)
        if not 0 <= self.cancel_fraction < 1:
            raise BenchArgumentError(
                f"cancel_fraction must be in [0, 1), got {self.cancel_fraction!r}"
            )
        if not 0 <= self.jump_probability < 1:
            raise BenchArgumentError(
                f"jump_probability must be in [0, 1), got {self.jump_probability!r}"
            )
        if self.max_jump < 2:
            raise BenchArgumentError(f"max_jump must be >= 2, got {self.max_jump!r}")

    @property
    def ticks_per_step(self) -> float:
        """Mean clock movement per step, idle jumps included."""
        mean_jump = (2 + self.max_jump) / 2
        return 1 + self.jump_probability * (mean_jump - 1)

    @property
    def mean_timeout(self) -> int:
        """Mean timeout (ticks) that keeps about ``live`` timers outstanding."""
        arrivals_per_tick = self.per_tick / self.ticks_per_step
        lifetime_per_timeout = 1 - self.cancel_fraction / 2
        return max(1, round(self.live / (arrivals_per_tick * lifetime_per_timeout)))

    @property
    def max_timeout(self) -> int:
        return 2 * self.mean_timeout - 1


@attrs.define(frozen=True)
class Chunk:
    """Consecutive steps. Step ``i`` moves the clock to ``times[i]`` and schedules ``counts[i]``
    timers, the next ones in ``delays`` (timeouts) and ``cancel_steps`` (the step index at which
    each is cancelled, or ``FIRES``)."""

    first_step: int
    times: array[int]
    counts: array[int]
    delays: array[int]
    cancel_steps: array[int]

    def __len__(self) -> int:
        return len(self.times)


class TimerStream:
    """The events of ``total_steps`` steps; :meth:`chunks` yields them in order.

    A timer whose cancellation would fall after the last step is cancelled at ``total_steps``,
    a step that never runs: the driver files its handle there and never uses it.
    """

    def __init__(self, config: TimerStreamConfig, total_steps: int) -> None:
        _positive("total_steps", total_steps)
        self.config = config
        self.total_steps = total_steps
        # Separate generators for the clock and the timers: a shorter stream with the same seed
        # is then an exact prefix of a longer one.
        rand = random.Random(f"timer-stream-clock-{config.seed}").random
        self._rng = random.Random(f"timer-stream-timers-{config.seed}")
        times = array("q")
        now = 0
        jump_span = config.max_jump - 1
        for _ in range(total_steps):
            if rand() < config.jump_probability:
                now += 2 + int(rand() * jump_span)
            else:
                now += 1
            times.append(now)
        self.times = times
        self._fire_deadlines = array("q")  # of the timers generated so far that will fire

    def chunks(self, chunk_steps: int) -> Iterator[Chunk]:
        """Yield the steps in chunks of ``chunk_steps`` (the last one may be shorter)."""
        _positive("chunk_steps", chunk_steps)
        for first in range(0, self.total_steps, chunk_steps):
            yield self._chunk(first, min(first + chunk_steps, self.total_steps))

    def _chunk(self, first: int, last: int) -> Chunk:
        config = self.config
        rand = self._rng.random
        times = self.times
        total_steps = self.total_steps
        timeout_span = config.max_timeout
        fire_deadlines = self._fire_deadlines
        counts = array("q", [config.per_tick]) * (last - first)
        delays = array("q")
        cancel_steps = array("q")
        for index in range(first, last):
            now = times[index]
            for _ in range(config.per_tick):
                timeout = 1 + int(rand() * timeout_span)
                delays.append(timeout)
                if timeout > 1 and rand() < config.cancel_fraction:
                    cancel_time = now + 1 + int(rand() * (timeout - 1))  # before the deadline
                    step = bisect_left(times, cancel_time)
                    if step == total_steps or times[step] < now + timeout:
                        cancel_steps.append(step)
                        continue
                    # An idle jump carries the clock past the deadline first: the timer fires.
                cancel_steps.append(FIRES)
                fire_deadlines.append(now + timeout)
        return Chunk(first, times[first:last], counts, delays, cancel_steps)

    def expected_fired(self, step: int) -> int:
        """How many timers fire by the end of ``step`` (all steps up to it must be generated)."""
        now = self.times[step]
        return sum(1 for deadline in self._fire_deadlines if deadline <= now)

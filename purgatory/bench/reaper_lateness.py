"""Real-time lateness of the trio expiry reaper: how long after its deadline an operation expires.

:func:`measure_lateness` runs under trio in real time (``python -m purgatory.bench reaper``
calls it). It submits ``num_ops`` operations at once to a purgatory driven by
:func:`~purgatory.trio_reaper.open_trio_reaper`, with timeouts drawn uniformly from
``timeout_ms_range``, and records for each one ``lateness = expiry time - deadline`` in
milliseconds, the deadline being the earliest loop time at which the clock reads it
(:meth:`~purgatory.clock.LoopClock.to_seconds`), so lateness includes the rounding up to the
wheel's tick.

Baseline, in the same run: the same timeouts slept for by one trio task each
(``trio.sleep_until``; each deadline is taken when its task starts waiting, as an operation's
is when it is submitted), i.e. trio's own timer heap doing the whole job. Both phases share
the loop and the timeouts; compare the two summaries, not absolute numbers across machines.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import trio

from purgatory.bench.errors import BenchArgumentError
from purgatory.clock import LoopClock
from purgatory.delayed_operation import DelayedOperation
from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from purgatory.trio_reaper import open_trio_reaper, trio_clock

__all__ = ["measure_lateness"]

_KEY_SPACE = 100  # keys the operations are watched under (Kafka's perf test default)
_PERCENTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999))


def measure_lateness(
    num_ops: int = 10_000,
    timeout_ms_range: tuple[float, float] = (100, 1000),
    units_per_second: int = 1000,
    *,
    tick: int = 1,
    seed: int = 0,
) -> dict[str, float]:
    """Expire ``num_ops`` outstanding operations through the trio reaper in real time.

    Timeouts are uniform in ``timeout_ms_range`` (milliseconds, drawn from
    ``random.Random(seed)``), converted to whole units of ``units_per_second``; the wheel's
    tick is ``tick`` units. Takes about twice the longest timeout.

    Returns lateness in ms: ``count``, ``min_ms``, ``p50_ms``, ``p90_ms``, ``p99_ms``,
    ``p99_9_ms`` and ``max_ms`` for the reaper, and the same keys prefixed ``baseline_`` for
    one trio task per operation. Lateness is never negative: the reaper never expires an
    operation before its deadline.

    Raises BenchArgumentError for ``num_ops`` < 1 or a range that is not
    ``0 <= low <= high``, and the clock's and wheel's errors for a bad ``units_per_second`` or
    ``tick``.
    """
    if type(num_ops) is not int or num_ops < 1:
        raise BenchArgumentError(f"num_ops must be a positive int, got {num_ops!r}")
    low, high = timeout_ms_range
    if not 0 <= low <= high:
        raise BenchArgumentError(
            "timeout_ms_range must be (low, high) with 0 <= low <= high milliseconds, "
            f"got {timeout_ms_range!r}"
        )
    rng = random.Random(seed)
    timeouts = [round(rng.uniform(low, high) * units_per_second / 1000) for _ in range(num_ops)]
    reaper, baseline = trio.run(_measure, timeouts, units_per_second, tick)
    return _summary("", reaper) | _summary("baseline_", baseline)


class _Timed(DelayedOperation):
    """Never satisfied; records the loop time at which it expires, then calls ``expired()``."""

    __slots__ = ("expired", "expired_at")

    def __init__(self, timeout: int, expired: Callable[[], None]) -> None:
        super().__init__(timeout)
        self.expired = expired
        self.expired_at = math.nan

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        self.expired_at = trio.current_time()
        self.expired()


async def _measure(
    timeouts: list[int], units_per_second: int, tick: int
) -> tuple[list[float], list[float]]:
    clock = trio_clock(units_per_second)
    return await _through_reaper(clock, timeouts, tick), await _one_task_each(clock, timeouts)


async def _through_reaper(clock: LoopClock, timeouts: list[int], tick: int) -> list[float]:
    purgatory: DelayedOperationPurgatory[_Timed] = DelayedOperationPurgatory(
        "lateness", tick=tick, clock=clock, start=clock()
    )
    remaining = len(timeouts)
    all_expired = trio.Event()

    def expired() -> None:
        nonlocal remaining
        remaining -= 1
        if not remaining:
            all_expired.set()

    operations = [_Timed(timeout, expired) for timeout in timeouts]
    async with open_trio_reaper(purgatory, clock):
        for index, operation in enumerate(operations):
            purgatory.try_complete_else_watch(operation, (index % _KEY_SPACE,))
        await all_expired.wait()
    return [(op.expired_at - clock.to_seconds(op.deadline)) * 1000 for op in operations]


async def _one_task_each(clock: LoopClock, timeouts: list[int]) -> list[float]:
    lateness: list[float] = []

    async def sleeper(timeout: int) -> None:
        deadline = clock.to_seconds(clock() + timeout)  # from when it starts waiting
        await trio.sleep_until(deadline)
        lateness.append((trio.current_time() - deadline) * 1000)

    async with trio.open_nursery() as nursery:
        for timeout in timeouts:
            nursery.start_soon(sleeper, timeout)
    return lateness


def _summary(prefix: str, lateness_ms: list[float]) -> dict[str, float]:
    ordered = sorted(lateness_ms)
    count = len(ordered)
    summary: dict[str, float] = {f"{prefix}count": count, f"{prefix}min_ms": ordered[0]}
    for name, quantile in _PERCENTILES:  # nearest rank
        summary[f"{prefix}{name}_ms"] = ordered[max(0, math.ceil(quantile * count) - 1)]
    summary[f"{prefix}max_ms"] = ordered[-1]
    return summary

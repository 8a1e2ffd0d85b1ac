"""A reaper binds the wheel it drives to its clock, so deadlines and expiries share one time
source: a purgatory created without ``clock=`` counts its timeouts from the reaper's clock, and
a wheel or purgatory that reads another clock is refused."""

from __future__ import annotations

import asyncio

import pytest
import trio
import trio.testing

from purgatory import DelayedOperationPurgatory, ManualClock, TimingWheel
from purgatory.asyncio_reaper import AsyncioReaper, asyncio_clock, open_asyncio_reaper
from purgatory.clock import ClockMismatchError, InvalidClockError
from purgatory.testing import ConditionOperation
from purgatory.trio_reaper import TrioReaper, open_trio_reaper, trio_clock


async def test_a_purgatory_without_clock_counts_timeouts_from_the_reapers_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory("p")
    expired_at: list[int] = []
    async with open_trio_reaper(purgatory, clock):
        assert purgatory.timer.clock is clock
        await trio.sleep(5)  # nothing due: the wheel's own time stays at 0 meanwhile
        assert purgatory.now == 5000
        operation = ConditionOperation(
            100, on_complete_callback=lambda _: expired_at.append(clock())
        )
        purgatory.try_complete_else_watch(operation, ["k"])
        await trio.sleep(0.001)
        assert not operation.is_completed  # it used to expire at once (deadline 0 + 100)
        await trio.sleep(1)
    assert operation.is_expired and expired_at == [5100]


async def test_the_binding_outlives_the_reaper_and_a_reaper_on_the_same_clock_is_accepted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory("p")
    async with open_trio_reaper(purgatory, clock):
        pass
    await trio.sleep(2)
    assert purgatory.timer.clock is clock and purgatory.now == 2000
    operation = ConditionOperation(50)
    purgatory.try_complete_else_watch(operation, ["k"])
    async with open_trio_reaper(purgatory, clock):
        await trio.sleep(0.049)
        assert not operation.is_completed
        await trio.sleep(0.002)
        assert operation.is_expired
    with pytest.raises(ClockMismatchError, match="create a new purgatory"):
        TrioReaper(purgatory, trio_clock(start=5000))


async def test_a_purgatory_reading_another_clock_is_refused() -> None:
    clock = trio_clock()
    manual: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory(
        "manual", clock=ManualClock()
    )
    with pytest.raises(ClockMismatchError) as refused:
        TrioReaper(manual, clock)
    message = str(refused.value)
    assert "purgatory 'manual' reads its deadlines from ManualClock(now=0)" in message
    assert "without clock=" in message and "clock=<the reaper's clock>" in message
    assert manual.timer.clock is not clock  # nothing was bound
    assert isinstance(refused.value, InvalidClockError)
    same: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory(
        "same", clock=clock
    )
    TrioReaper(same, clock)  # the reaper's own clock: accepted


async def test_a_wheel_ahead_of_the_clock_is_refused() -> None:
    clock = trio_clock()  # reads 0
    wheel = TimingWheel(start=1_000)
    with pytest.raises(ClockMismatchError, match=r"time 1000 is ahead of the reaper's clock \(0\)"):
        TrioReaper(wheel, clock)
    assert wheel.clock is None
    TrioReaper(TimingWheel(start=1_000), trio_clock(start=1_000))  # aligned: accepted


async def test_a_refused_reaper_binds_nothing() -> None:
    wheel = TimingWheel()
    with pytest.raises(TypeError, match="on_error"):
        TrioReaper(wheel, trio_clock(), on_error=3)  # type: ignore[arg-type]
    assert wheel.clock is None


def test_asyncio_reaper_binds_the_purgatory_and_refuses_another_clock() -> None:
    async def main() -> tuple[bool, bool]:
        clock = asyncio_clock()
        purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory("p")
        with pytest.raises(ClockMismatchError, match="purgatory 'q' reads its deadlines"):
            AsyncioReaper(DelayedOperationPurgatory("q", clock=ManualClock()), clock)
        done = asyncio.Event()
        async with open_asyncio_reaper(purgatory, clock):
            await asyncio.sleep(0.2)  # the wheel's own time stays at 0 meanwhile
            operation = ConditionOperation(200, on_complete_callback=lambda _: done.set())
            purgatory.try_complete_else_watch(operation, ["k"])
            await asyncio.sleep(0.05)
            early = operation.is_completed  # it used to expire at once
            async with asyncio.timeout(5):
                await done.wait()
        return early, operation.is_expired

    assert asyncio.run(main()) == (False, True)


async def test_call_later_on_a_wheel_driven_by_a_reaper_counts_from_the_loops_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    wheel = TimingWheel()
    fired: list[int] = []
    async with open_trio_reaper(wheel, clock):
        await trio.sleep(5)  # nothing due: the wheel's own time stays at 0 meanwhile
        wheel.call_later(100, lambda: fired.append(clock()))
        await trio.sleep(1)
    assert fired == [5100]

"""The trio expiry reaper under trio's MockClock (autojump): exact expiry instants, early
wake-ups, cancellation, callback errors, a purgatory end to end; LoopClock's conversion
contract (hypothesis)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Hashable, Sequence

import pytest
import trio
import trio.testing
from hypothesis import example, given
from hypothesis import strategies as st

from purgatory import DelayedOperation, DelayedOperationPurgatory, TimingWheel
from purgatory.clock import (
    MAX_UNITS_PER_SECOND,
    InvalidClockError,
    InvalidReaperArgumentError,
    LoopClock,
)
from purgatory.errors import InvalidDeadlineError, PurgatoryError
from purgatory.trio_reaper import TrioReaper, open_trio_reaper, trio_clock


class Recorded(DelayedOperation):
    """Completes once ``ready()`` holds; records the clock (units, loop seconds) when it
    completes. ``on_expiration`` raises ``fail`` if given."""

    def __init__(
        self,
        timeout: int,
        clock: LoopClock,
        ready: Callable[[], bool] = lambda: False,
        fail: Exception | None = None,
    ) -> None:
        super().__init__(timeout)
        self.clock = clock
        self.ready = ready
        self.fail = fail
        self.completed_at: tuple[int, float] | None = None

    def try_complete(self) -> bool:
        return self.ready() and self.force_complete()

    def on_complete(self) -> None:
        self.completed_at = (self.clock(), trio.current_time())

    def on_expiration(self) -> None:
        if self.fail is not None:
            raise self.fail


def ten_unit_tick_purgatory(clock: LoopClock) -> DelayedOperationPurgatory[Recorded]:
    """A purgatory on ``clock`` whose timer ticks every 10 units (deadlines round up)."""
    return DelayedOperationPurgatory("p", tick=10, clock=clock)


def submit(
    purgatory: DelayedOperationPurgatory[Recorded],
    clock: LoopClock,
    timeout: int,
    keys: Sequence[Hashable] = ("key",),
    ready: Callable[[], bool] = lambda: False,
    fail: Exception | None = None,
) -> Recorded:
    operation = Recorded(timeout, clock, ready, fail)
    purgatory.try_complete_else_watch(operation, keys)
    return operation


def at(clock: LoopClock, units: int) -> tuple[int, float]:
    """What ``Recorded.completed_at`` holds for a completion at time ``units``."""
    return (units, clock.to_seconds(units))


def rounded_up(deadline: int, tick: int) -> int:
    return -(-deadline // tick) * tick


# -- exact expiry under the mock clock ------------------------------------------------------


@pytest.mark.parametrize(
    ("units_per_second", "tick", "start"),
    [
        (1000, 1, 0),
        (1000, 10, 0),
        (7, 3, 12_345),
        (3, 1, 5),
        (1024, 5, 1),
        (999_983, 64, 77),
        (MAX_UNITS_PER_SECOND, 1000, 10**12),
    ],
)
async def test_operations_expire_exactly_at_their_deadline_rounded_up_to_the_tick(
    autojump_clock: trio.testing.MockClock, units_per_second: int, tick: int, start: int
) -> None:
    await trio.sleep(0.1 + 1 / 3)  # an awkward origin
    clock = trio_clock(units_per_second, start=start)
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory(
        "exact", tick=tick, clock=clock, start=start
    )
    timeouts = [0, 1, 2, 3, 17, 64, 65, 4097, 262_145]
    operations = []
    async with open_trio_reaper(purgatory, clock) as reaper:
        for timeout in timeouts:
            operations.append(submit(purgatory, clock, timeout))
            await trio.sleep(1 / 7)  # submit the next one at an awkward instant
        await trio.sleep(262_146 / units_per_second + 1)
    for operation in operations:
        assert operation.is_expired
        assert operation.completed_at == at(clock, rounded_up(operation.deadline, tick))
        expected_seconds = clock.origin + (operation.completed_at[0] - start) / units_per_second
        assert operation.completed_at[1] == pytest.approx(expected_seconds, rel=0, abs=1e-9)
    distinct_instants = len({operation.completed_at for operation in operations})
    assert reaper.wakeups + reaper.early_wakeups <= distinct_instants + len(operations)


async def test_clock_reads_start_at_creation_and_ticks_with_trio_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    await trio.sleep(0.25)
    clock = trio_clock(7, start=100)
    assert clock() == 100
    await trio.sleep(1)
    assert clock() == 107
    await trio.sleep(1 / 7)
    assert clock() == 108


async def test_wheel_as_target_runs_callbacks_at_their_deadlines(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    wheel = TimingWheel(tick=1)
    fired: list[tuple[str, int]] = []
    async with open_trio_reaper(wheel, clock):
        wheel.schedule(clock() + 250, lambda: fired.append(("b", clock())))
        wheel.schedule(clock() + 100, lambda: fired.append(("a", clock())))
        await trio.sleep(1)
        wheel.schedule(clock() - 50, lambda: fired.append(("past", clock())))  # already due
        await trio.sleep(0.001)  # the reaper runs before the mock clock moves on
        assert fired == [("a", 100), ("b", 250), ("past", 1000)]


async def test_started_reaper_has_expired_what_was_already_due(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    wheel = TimingWheel()
    fired: list[int] = []
    wheel.schedule(5, lambda: fired.append(clock()))
    await trio.sleep(0.010)
    async with trio.open_nursery() as nursery:
        reaper = TrioReaper(wheel, clock)
        await nursery.start(reaper.run)
        assert fired == [10]
        nursery.cancel_scope.cancel()


# -- waking up -------------------------------------------------------------------------------


async def test_idle_reaper_wakes_for_the_first_operation(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory("p", clock=clock)
    async with open_trio_reaper(purgatory, clock) as reaper:
        await trio.sleep(3)  # nothing scheduled: the reaper sleeps without a deadline
        operation = submit(purgatory, clock, 40)
        await trio.sleep(1)
    assert operation.completed_at == at(clock, 3040)
    assert (reaper.early_wakeups, reaper.wakeups) == (1, 1)


async def test_earlier_deadline_added_while_sleeping_wakes_the_reaper(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory = ten_unit_tick_purgatory(clock)
    async with open_trio_reaper(purgatory, clock) as reaper:
        late = submit(purgatory, clock, 10_000)
        await trio.sleep(1)  # the reaper sleeps until 10 s
        early_wakeups = reaper.early_wakeups
        early = submit(purgatory, clock, 500)
        await trio.sleep(0.001)
        assert reaper.early_wakeups == early_wakeups + 1
        await trio.sleep(10)
    assert early.completed_at == at(clock, 1500)
    assert late.completed_at == at(clock, 10_000)
    assert reaper.wakeups == 2


async def test_later_deadline_or_one_in_the_same_tick_does_not_wake_the_reaper(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory = ten_unit_tick_purgatory(clock)
    async with open_trio_reaper(purgatory, clock) as reaper:
        first = submit(purgatory, clock, 1000)
        await trio.sleep(0.1)
        early_wakeups = reaper.early_wakeups
        later = submit(purgatory, clock, 5000)  # deadline 5100
        same_tick = submit(purgatory, clock, 891)  # deadline 991, fires with the first at 1000
        await trio.sleep(0.2)
        assert reaper.early_wakeups == early_wakeups
        await trio.sleep(6)
    assert first.completed_at == same_tick.completed_at == at(clock, 1000)
    assert later.completed_at == at(clock, 5100)
    assert reaper.wakeups == 2


async def test_completed_operation_costs_at_most_one_wakeup_at_its_old_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory("p", clock=clock)
    async with open_trio_reaper(purgatory, clock) as reaper:
        operation = submit(purgatory, clock, 100)
        later = submit(purgatory, clock, 300)
        await trio.sleep(0.05)
        assert operation.force_complete()
        await trio.sleep(1)
    assert operation.completed_at == at(clock, 50)
    assert not operation.is_expired
    assert later.completed_at == at(clock, 300)
    assert reaper.wakeups == 2  # 100 (nothing left to fire) and 300


# -- cancellation ----------------------------------------------------------------------------


async def test_leaving_the_block_stops_the_reaper_and_leaves_operations_pending(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory("p", clock=clock)
    async with open_trio_reaper(purgatory, clock):
        pending = submit(purgatory, clock, 500)
        await trio.sleep(0.1)
    added_after = submit(purgatory, clock, 10)
    await trio.sleep(1)
    assert pending.completed_at is None
    assert added_after.completed_at is None
    assert purgatory.num_delayed == 2
    assert purgatory.advance_clock(clock()) == 2  # the wheel is intact; anyone may drive it


async def test_cancelling_the_enclosing_scope_ends_the_reaper_cleanly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory("p", clock=clock)
    with trio.move_on_after(1) as scope:
        async with open_trio_reaper(purgatory, clock):
            operation = submit(purgatory, clock, 10_000)
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert operation.completed_at is None
    assert trio.current_time() == 1


async def test_reaper_run_in_a_nursery_is_cancellable(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory("p", clock=clock)
    reaper = TrioReaper(purgatory, clock)
    async with trio.open_nursery() as nursery:
        await nursery.start(reaper.run)
        first = submit(purgatory, clock, 100)
        second = submit(purgatory, clock, 200)
        await trio.sleep(0.15)
        nursery.cancel_scope.cancel()
    await trio.sleep(1)
    assert first.completed_at == at(clock, 100)
    assert second.completed_at is None


# -- errors raised by callbacks --------------------------------------------------------------


async def test_callback_error_goes_to_on_error_and_the_rest_expire_on_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory("p", clock=clock)
    errors: list[Exception] = []
    boom = RuntimeError("boom")
    async with open_trio_reaper(purgatory, clock, on_error=errors.append) as reaper:
        failing = submit(purgatory, clock, 100, fail=boom)
        same_batch = submit(purgatory, clock, 100)
        later = submit(purgatory, clock, 250)
        await trio.sleep(0.2)
        after_error = submit(purgatory, clock, 100)
        await trio.sleep(1)
    assert errors == [boom]
    assert reaper.errors == 1
    assert reaper.wakeups == 3  # 100, 250, 300: the error at 100 cost no extra sleep
    assert failing.completed_at == same_batch.completed_at == at(clock, 100)
    assert later.completed_at == at(clock, 250)
    assert after_error.completed_at == at(clock, 300)


async def test_callback_errors_are_logged_by_default(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory("p", clock=clock)
    boom = ValueError("boom")
    with caplog.at_level(logging.ERROR, logger="purgatory.reaper"):
        async with open_trio_reaper(purgatory, clock):
            submit(purgatory, clock, 10, fail=boom)
            later = submit(purgatory, clock, 20)
            await trio.sleep(1)
    assert [record.exc_info[1] for record in caplog.records if record.exc_info] == [boom]
    assert later.completed_at == at(clock, 20)


async def test_on_error_that_raises_stops_the_reaper_and_propagates_unwrapped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory("p", clock=clock)

    def reraise(exc: Exception) -> None:
        raise exc

    body_cancelled = False
    with pytest.raises(KeyError, match="fail fast"):
        async with open_trio_reaper(purgatory, clock, on_error=reraise):
            submit(purgatory, clock, 10, fail=KeyError("fail fast"))
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                body_cancelled = True
                raise
    assert body_cancelled
    assert trio.current_time() == pytest.approx(0.010)


async def test_body_exception_propagates_unwrapped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    with pytest.raises(LookupError, match="from the body"):
        async with open_trio_reaper(TimingWheel(), clock):
            raise LookupError("from the body")


# -- a purgatory end to end ------------------------------------------------------------------


async def test_purgatory_driven_by_the_reaper_with_check_and_complete_from_another_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory: DelayedOperationPurgatory[Recorded] = DelayedOperationPurgatory(
        "acks", tick=5, clock=clock
    )
    high_watermark = {"a": 0, "b": 0}

    def reached(key: str, offset: int) -> Callable[[], bool]:
        return lambda: high_watermark[key] >= offset

    async def replicate(key: str, offset: int, delay: float) -> None:
        await trio.sleep(delay)
        high_watermark[key] = offset
        purgatory.check_and_complete(key)

    async with open_trio_reaper(purgatory, clock):
        satisfied = submit(purgatory, clock, 1000, ["a"], reached("a", 5))
        times_out = submit(purgatory, clock, 200, ["a"], reached("a", 6))
        on_b = submit(purgatory, clock, 500, ["b"], reached("b", 10))
        both = submit(
            purgatory,
            clock,
            1000,
            ["a", "b"],
            lambda: high_watermark["a"] >= 1 and high_watermark["b"] >= 1,
        )
        never = submit(purgatory, clock, 402, ["b"], reached("b", 20))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(replicate, "a", 5, 0.1)
            nursery.start_soon(replicate, "b", 10, 0.3)
        await trio.sleep(1)
    assert satisfied.completed_at == at(clock, 100)
    assert on_b.completed_at == both.completed_at == at(clock, 300)
    assert times_out.completed_at == at(clock, 200)
    assert never.completed_at == at(clock, 405)
    assert [op.is_expired for op in (satisfied, times_out, on_b, both, never)] == [
        False,
        True,
        False,
        False,
        True,
    ]
    assert purgatory.num_delayed == 0


# -- bad arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("units_per_second", [0, -1, True, 1.5, MAX_UNITS_PER_SECOND + 1])
async def test_bad_units_per_second_is_rejected(units_per_second: int) -> None:
    with pytest.raises(InvalidClockError, match="units_per_second must be an int from 1 to"):
        trio_clock(units_per_second)


async def test_bad_start_is_rejected() -> None:
    with pytest.raises(InvalidDeadlineError, match="start must be an int"):
        trio_clock(start=1.5)  # type: ignore[arg-type]


async def test_bad_reaper_arguments_are_rejected() -> None:
    clock = trio_clock()
    with pytest.raises(InvalidReaperArgumentError, match="TimingWheel or a DelayedOperation"):
        TrioReaper("wheel", clock)  # type: ignore[arg-type]
    with pytest.raises(InvalidReaperArgumentError, match="on_error must be a callable"):
        TrioReaper(TimingWheel(), clock, on_error=3)  # type: ignore[arg-type]
    other_source = LoopClock.anchored(time.monotonic)
    with pytest.raises(InvalidClockError, match="must read this event loop's time"):
        TrioReaper(TimingWheel(), other_source)
    with pytest.raises(InvalidClockError, match="must read this event loop's time"):
        TrioReaper(TimingWheel(), clock.__call__)  # type: ignore[arg-type]
    assert issubclass(InvalidClockError, PurgatoryError)
    assert issubclass(InvalidClockError, ValueError)
    assert issubclass(InvalidReaperArgumentError, PurgatoryError)
    assert issubclass(InvalidReaperArgumentError, TypeError)


# -- the clock's conversion contract ---------------------------------------------------------


@given(
    units_per_second=st.integers(1, MAX_UNITS_PER_SECOND),
    origin=st.floats(0, 1e7),
    start=st.integers(-(10**15), 10**15),
    offset=st.integers(-(10**12), 10**12),
)
# Boundaries at loop time ~0 with a distant origin: floats there are far denser than the
# clock's resolution, so a search stepping one float at a time would never finish.
@example(units_per_second=1, origin=1.0, start=0, offset=-1)
@example(units_per_second=3, origin=1.0, start=0, offset=-3)
@example(units_per_second=MAX_UNITS_PER_SECOND, origin=0.1 + 1 / 3, start=0, offset=-433_333_333)
def test_to_seconds_is_the_earliest_time_the_clock_reads_the_units(
    units_per_second: int, origin: float, start: int, offset: int
) -> None:
    clock = LoopClock(time.monotonic, units_per_second, origin, start)
    units = start + offset
    seconds = clock.to_seconds(units)
    assert clock.to_units(seconds) >= units
    assert clock.to_units(math.nextafter(seconds, -math.inf)) < units
    if max(math.ulp(seconds), math.ulp(origin)) * units_per_second < 0.25:  # a unit resolves
        assert clock.to_units(seconds) == units


@given(
    units_per_second=st.integers(1, MAX_UNITS_PER_SECOND),
    origin=st.floats(0, 1e7),
    seconds=st.floats(0, 1e7),
    later=st.floats(0, 1e3),
)
def test_to_units_is_monotone(
    units_per_second: int, origin: float, seconds: float, later: float
) -> None:
    clock = LoopClock(time.monotonic, units_per_second, origin, 0)
    assert clock.to_units(seconds) <= clock.to_units(seconds + later)


def test_times_beyond_never_never_come() -> None:
    clock = LoopClock(time.monotonic, 1000, 5.0, 0)
    assert clock.to_seconds(clock.never) == math.inf
    assert clock.to_seconds(clock.never - 1) < math.inf

"""The expiry reaper on trio: a task that sleeps until the wheel's next deadline and advances it.

Usage::

    clock = trio_clock()  # milliseconds; reads 0 now
    purgatory = DelayedOperationPurgatory("produce")  # the reaper binds it to its clock
    async with open_trio_reaper(purgatory, clock):
        purgatory.try_complete_else_watch(operation, ["key"])  # expires at its deadline

The reaper sleeps until ``clock.to_seconds(next_deadline)``, wakes early when an operation with
an earlier deadline is added, and never polls. Under ``trio.testing.MockClock`` (with
``autojump_threshold=0``) an operation expires at exactly its deadline rounded up to the tick.
Callbacks run inside the reaper's task. See :class:`~purgatory.clock.Reaper` for the error
contract.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, NoReturn

import trio

from purgatory.clock import LoopClock, Reaper, lone_error_unwrapped
from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from purgatory.timing_wheel import TimingWheel

__all__ = ["TrioReaper", "open_trio_reaper", "trio_clock"]


def trio_clock(units_per_second: int = 1000, *, start: int = 0) -> LoopClock:
    """A clock reading trio's time (``trio.current_time()``) in integer units.

    It reads ``start`` now; call it inside ``trio.run``. Raises InvalidClockError for a bad
    ``units_per_second`` (an int from 1 to 10**9 is allowed).
    """
    return LoopClock.anchored(trio.current_time, units_per_second, start=start)


class TrioReaper(Reaper):
    """An expiry reaper for trio; start :meth:`run` in a nursery, or use
    :func:`open_trio_reaper`.

    ``clock`` must come from :func:`trio_clock`; the reaper binds the purgatory (or wheel) it
    drives to it. Raises InvalidClockError for a clock of another time source,
    ClockMismatchError for a target that reads another clock (see :mod:`purgatory.clock`) and
    InvalidReaperArgumentError for a bad ``target`` or ``on_error``.
    """

    __slots__ = ()

    def __init__(
        self,
        target: TimingWheel | DelayedOperationPurgatory[Any],
        clock: LoopClock,
        *,
        on_error: Callable[[Exception], object] | None = None,
    ) -> None:
        super().__init__(target, clock, trio.current_time, on_error=on_error)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        """Reap until cancelled. Expires whatever is already due before reporting started
        (``await nursery.start(reaper.run)``). Cancelling it leaves the wheel as it is, with no
        wake-up arranged."""
        await self._serve(task_status.started)

    async def _sleep(self) -> int | None:
        woken = trio.Event()
        deadline, seconds = self._arm(woken.set)
        with trio.move_on_at(seconds) as sleep:
            await woken.wait()
        return deadline if sleep.cancelled_caught else None


@asynccontextmanager
async def open_trio_reaper(
    target: TimingWheel | DelayedOperationPurgatory[Any],
    clock: LoopClock,
    *,
    on_error: Callable[[Exception], object] | None = None,
) -> AsyncIterator[TrioReaper]:
    """Run a :class:`TrioReaper` for the body of an ``async with``; yields the reaper.

    Whatever is already due expires before the body starts. Leaving the block (normally, by an
    exception or by cancellation) cancels the reaper; pending operations stay pending. An
    exception from the body, or from an ``on_error`` that raises (which stops the reaper and
    cancels the body), propagates as itself, not wrapped in an exception group.
    """
    reaper = TrioReaper(target, clock, on_error=on_error)
    with lone_error_unwrapped():
        async with trio.open_nursery() as nursery:
            await nursery.start(reaper.run)
            try:
                yield reaper
            finally:
                nursery.cancel_scope.cancel()

"""The expiry reaper on asyncio: a task that sleeps until the wheel's next deadline and advances it.

Usage::

    clock = asyncio_clock()  # milliseconds; reads 0 now
    purgatory = DelayedOperationPurgatory("produce")  # the reaper binds it to its clock
    async with open_asyncio_reaper(purgatory, clock):
        purgatory.try_complete_else_watch(operation, ["key"])  # expires at its deadline

Same behaviour as :mod:`purgatory.trio_reaper`, on ``loop.time()``. One difference comes from
asyncio itself: it runs a timer up to its clock resolution (``time.get_clock_info`` of
``monotonic``: typically 1 ns) before the timer's time. The reaper then still expires what it
slept for, so an operation can expire that much early in loop time, but it never spins.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, NoReturn

from purgatory.clock import LoopClock, Reaper, lone_error_unwrapped
from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from purgatory.timing_wheel import TimingWheel

__all__ = ["AsyncioReaper", "asyncio_clock", "open_asyncio_reaper"]


def asyncio_clock(units_per_second: int = 1000, *, start: int = 0) -> LoopClock:
    """A clock reading the running loop's time (``loop.time()``) in integer units.

    It reads ``start`` now; call it inside the loop (RuntimeError otherwise). Raises
    InvalidClockError for a bad ``units_per_second`` (an int from 1 to 10**9 is allowed).
    """
    return LoopClock.anchored(asyncio.get_running_loop().time, units_per_second, start=start)


class AsyncioReaper(Reaper):
    """An expiry reaper for asyncio; run :meth:`run` as a task, or use
    :func:`open_asyncio_reaper`. Create it inside the running loop.

    ``clock`` must come from :func:`asyncio_clock` on the same loop; the reaper binds the
    purgatory (or wheel) it drives to it. Raises InvalidClockError for a clock of another time
    source, ClockMismatchError for a target that reads another clock (see
    :mod:`purgatory.clock`) and InvalidReaperArgumentError for a bad ``target`` or
    ``on_error``.
    """

    __slots__ = ()

    def __init__(
        self,
        target: TimingWheel | DelayedOperationPurgatory[Any],
        clock: LoopClock,
        *,
        on_error: Callable[[Exception], object] | None = None,
    ) -> None:
        super().__init__(target, clock, asyncio.get_running_loop().time, on_error=on_error)

    async def run(self) -> NoReturn:
        """Reap until cancelled. Cancelling it leaves the wheel as it is, with no wake-up
        arranged."""
        await self._serve()

    async def _sleep(self) -> int | None:
        woken = asyncio.Event()
        deadline, seconds = self._arm(woken.set)
        try:
            async with asyncio.timeout_at(None if seconds == math.inf else seconds):
                await woken.wait()
        except TimeoutError:
            return deadline
        return None


@asynccontextmanager
async def open_asyncio_reaper(
    target: TimingWheel | DelayedOperationPurgatory[Any],
    clock: LoopClock,
    *,
    on_error: Callable[[Exception], object] | None = None,
) -> AsyncIterator[AsyncioReaper]:
    """Run an :class:`AsyncioReaper` in a task group for the body of an ``async with``;
    yields the reaper.

    Leaving the block (normally, by an exception or by cancellation) cancels the reaper;
    pending operations stay pending. An exception from the body, or from an ``on_error`` that
    raises (which stops the reaper and cancels the body), propagates as itself, not wrapped in
    an exception group.
    """
    reaper = AsyncioReaper(target, clock, on_error=on_error)
    with lone_error_unwrapped():
        async with asyncio.TaskGroup() as group:
            task = group.create_task(reaper.run())
            try:
                yield reaper
            finally:
                task.cancel()

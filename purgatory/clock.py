"""Real time for timing wheels: event-loop clocks in integer units, and the reapers' shared core.

An event loop keeps time as float seconds (``trio.current_time()``, ``loop.time()``); a
:class:`~purgatory.TimingWheel` keeps integer time units. :class:`LoopClock` converts between
the two. It is the clock to give a :class:`~purgatory.DelayedOperationPurgatory` as ``clock=``,
so that deadlines are computed from the very time source the reaper sleeps on.

Conversion contract, for a clock with ``units_per_second`` ``u``, ``origin`` ``o`` and
``start`` ``s``: ``to_units(t) = s + floor((t - o) * u)`` (float arithmetic, monotone in
``t``), and ``to_seconds(n)`` is the *earliest* float ``t`` with ``to_units(t) >= n``. Hence a
reaper that sleeps until ``to_seconds(deadline)`` reads ``to_units(now) >= deadline`` when it
wakes, however awkward ``u`` and ``o`` are: float rounding can never make it wake at
``deadline - 1`` and spin.

:class:`Reaper` is the half of an expiry reaper that does not depend on the event loop: it
binds the wheel to its clock, advances the wheel (or purgatory), handles errors raised by
callbacks, and arms the wheel's early wake-up. :mod:`purgatory.trio_reaper` and
:mod:`purgatory.asyncio_reaper` add only the loop-specific sleep.

Binding: deadlines must be counted from the clock the reaper sleeps on. A reaper advances its
wheel only when something is due, so the wheel's own time (the default clock of a purgatory)
lags real time, and an operation timed from it would be due at once. So the reaper owns the
clock: it binds a wheel (a purgatory's timer) that has no clock to its own, for good -- the
loop's time stays the right time source after the reaper stops -- and refuses, with
:class:`ClockMismatchError`, a wheel that reads another clock (given as ``clock=``, or bound
by a reaper on another clock) or whose time is already ahead of the clock. Refusing rather
than rebinding keeps every deadline of a wheel on one time scale.
"""

from __future__ import annotations

import logging
import math
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import attrs

from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from purgatory.errors import InvalidDeadlineError, PurgatoryError
from purgatory.timing_wheel import TimingWheel

__all__ = [
    "MAX_UNITS_PER_SECOND",
    "NEVER_SECONDS",
    "ClockMismatchError",
    "InvalidClockError",
    "InvalidReaperArgumentError",
    "LoopClock",
    "Reaper",
    "log_callback_error",
]

MAX_UNITS_PER_SECOND = 10**9
"""The finest unit a :class:`LoopClock` supports: nanoseconds (loop clocks are floats)."""

NEVER_SECONDS = 10**12
"""Deadlines more than this many seconds (about 31,700 years) after a clock's origin never come:
:meth:`LoopClock.to_seconds` maps them to ``math.inf``."""

_logger = logging.getLogger("purgatory.reaper")


class InvalidClockError(PurgatoryError, ValueError):
    """A clock was given a bad ``units_per_second``, or a reaper a clock of another loop."""


class ClockMismatchError(InvalidClockError):
    """A reaper was given a wheel or purgatory that reads a clock other than the reaper's, or
    whose time is ahead of it (see the module docstring)."""


class InvalidReaperArgumentError(PurgatoryError, TypeError):
    """A reaper was given something other than a wheel or purgatory, or a non-callable
    ``on_error``."""


@attrs.frozen
class LoopClock:
    """An event loop's float clock, read as integer time units; call it to read the time.

    ``time`` reads the loop's clock in seconds; at loop time ``origin`` the clock reads
    ``start``. Build one with :meth:`anchored` (or ``trio_clock()`` / ``asyncio_clock()``).
    """

    time: Callable[[], float]
    units_per_second: int
    origin: float
    start: int

    @classmethod
    def anchored(
        cls, time: Callable[[], float], units_per_second: int = 1000, *, start: int = 0
    ) -> LoopClock:
        """A clock that reads ``start`` now (its origin is ``time()``), ticking
        ``units_per_second`` units per second.

        Raises InvalidClockError unless ``units_per_second`` is an int in
        ``1..MAX_UNITS_PER_SECOND``, and InvalidDeadlineError if ``start`` is not an int.
        """
        if type(units_per_second) is not int or not 1 <= units_per_second <= MAX_UNITS_PER_SECOND:
            raise InvalidClockError(
                f"units_per_second must be an int from 1 to {MAX_UNITS_PER_SECOND} "
                f"(1000 = milliseconds), got {units_per_second!r}"
            )
        if type(start) is not int:
            raise InvalidDeadlineError(f"start must be an int (time units), got {start!r}")
        return cls(time, units_per_second, time(), start)

    @property
    def never(self) -> int:
        """The earliest time in units that never comes: :meth:`to_seconds` gives ``math.inf``
        from here on (:data:`NEVER_SECONDS` after the origin)."""
        return self.start + NEVER_SECONDS * self.units_per_second + 1

    def __call__(self) -> int:
        """The current time in units: ``to_units(time())``."""
        return self.to_units(self.time())

    def to_units(self, seconds: float) -> int:
        """Loop time ``seconds`` in units, rounded down. Monotone: a later time never gives
        fewer units."""
        return self.start + math.floor((seconds - self.origin) * self.units_per_second)

    def to_seconds(self, units: int) -> float:
        """The earliest loop time at which the clock reads ``units`` or more.

        ``to_units(t) >= units`` exactly when ``t >= to_seconds(units)``. Returns ``math.inf``
        from :attr:`never` on.
        """
        if units >= self.never:
            return math.inf
        estimate = self.origin + (units - self.start) / self.units_per_second
        # Bracket the boundary (to_units(low) < units <= to_units(high)), widening from the
        # estimate, which is usually right already; then bisect the floats in between.
        reach = max(math.ulp(estimate), math.ulp(self.origin))
        low = high = estimate
        while self.to_units(high) < units:
            high += reach
            reach *= 2
        while self.to_units(low) >= units:
            low -= reach
            reach *= 2
        below, above = _float_rank(low), _float_rank(high)
        while above - below > 1:  # at most 64 steps: there are 2**64 floats
            middle = (below + above) // 2
            if self.to_units(_ranked_float(middle)) >= units:
                above = middle
            else:
                below = middle
        return _ranked_float(above)


_DOUBLE = struct.Struct("<d")
_BITS = struct.Struct("<Q")
_SIGN = 1 << 63


def _float_rank(value: float) -> int:
    """An integer that orders finite floats like their values, adjacent floats by 1."""
    bits: int = _BITS.unpack(_DOUBLE.pack(value))[0]
    return bits if bits < _SIGN else _SIGN - bits


def _ranked_float(rank: int) -> float:
    """The float with :func:`_float_rank` ``rank`` (0 is ``0.0``)."""
    value: float = _DOUBLE.unpack(_BITS.pack(rank if rank >= 0 else _SIGN - rank))[0]
    return value


def log_callback_error(exc: Exception) -> None:
    """The default ``on_error`` of reapers: log ``exc`` with its traceback at ERROR level on
    the ``purgatory.reaper`` logger."""
    _logger.error("a timer callback raised; the reaper carries on", exc_info=exc)


class Reaper:
    """The loop-independent part of an expiry reaper (subclassed per event loop).

    Drives ``target`` (a :class:`~purgatory.TimingWheel`, or a
    :class:`~purgatory.DelayedOperationPurgatory` whose ``advance_clock`` it calls) from
    ``clock``: sleep until the wheel's next deadline, wake early when an earlier deadline is
    added, advance to ``max(clock(), wheel.now)``, repeat. At most one reaper may drive a wheel.
    Creating the reaper binds the wheel to ``clock`` (see the module docstring).

    Errors: an ``Exception`` raised by a timer callback is passed to ``on_error`` (default
    :func:`log_callback_error`) and the reaper advances again at once, so the tasks due in the
    same batch still fire on time. If ``on_error`` itself raises, the reaper stops and that
    exception propagates (a way to fail fast). ``BaseException`` (e.g. ``KeyboardInterrupt``)
    is not caught.

    Counters: :attr:`wakeups` (woken because the deadline slept for arrived),
    :attr:`early_wakeups` (woken because an earlier deadline was added), :attr:`errors`
    (callback errors handled).
    """

    __slots__ = ("_advance", "_wheel", "clock", "early_wakeups", "errors", "on_error", "wakeups")

    def __init__(
        self,
        target: TimingWheel | DelayedOperationPurgatory[Any],
        clock: LoopClock,
        loop_time: Callable[[], float],
        *,
        on_error: Callable[[Exception], object] | None = None,
    ) -> None:
        if isinstance(target, DelayedOperationPurgatory):
            self._wheel = target.timer
            self._advance: Callable[[int], int] = target.advance_clock
        elif isinstance(target, TimingWheel):
            self._wheel = target
            self._advance = target.advance
        else:
            raise InvalidReaperArgumentError(
                f"a reaper drives a TimingWheel or a DelayedOperationPurgatory, got {target!r}"
            )
        if not isinstance(clock, LoopClock) or clock.time != loop_time:
            raise InvalidClockError(
                f"the clock must read this event loop's time ({loop_time!r}), got {clock!r}; "
                "create it with trio_clock() or asyncio_clock() inside the loop"
            )
        if on_error is not None and not callable(on_error):
            raise InvalidReaperArgumentError(
                f"on_error must be a callable taking the exception, or None; got {on_error!r}"
            )
        _bind(self._wheel, clock, target)
        self.clock = clock
        self.on_error: Callable[[Exception], object] = (
            on_error if on_error is not None else log_callback_error
        )
        self.wakeups = 0
        self.early_wakeups = 0
        self.errors = 0

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} wheel={self._wheel!r} wakeups={self.wakeups} "
            f"early_wakeups={self.early_wakeups} errors={self.errors}>"
        )

    async def _serve(self, started: Callable[[], object] | None = None) -> NoReturn:
        """Expire what is due, call ``started()`` if given, then sleep and expire forever."""
        try:
            self._expire(None)
            if started is not None:
                started()
            while True:
                reached = await self._sleep()
                if reached is None:
                    self.early_wakeups += 1
                else:
                    self.wakeups += 1
                self._expire(reached)
        finally:
            self._wheel.notify_when_earlier(self._wheel.now, None)

    async def _sleep(self) -> int | None:
        """Call :meth:`_arm` with a wake-up callback, then sleep until the returned time or
        the callback. Returns the deadline if its time came, None if woken early."""
        raise NotImplementedError

    def _arm(self, wake: Callable[[], None]) -> tuple[int | None, float]:
        """Arrange for ``wake()`` when a deadline earlier than the next one is added.

        Returns the next deadline (None if nothing is scheduled) and the loop time to sleep
        until (``math.inf`` for none). A deadline that rounds up to the same tick as the next
        one does not wake the reaper: it fires in the same batch.
        """
        wheel = self._wheel
        deadline = wheel.next_deadline()
        if deadline is None:
            wheel.notify_when_earlier(self.clock.never, wake)
            return None, math.inf
        wheel.notify_when_earlier(deadline - wheel.tick + 1, wake)
        return deadline, self.clock.to_seconds(deadline)

    def _expire(self, reached: int | None) -> None:
        """Advance to the current time, or to ``reached`` if later (a loop may end a sleep a
        little before its time: asyncio does, by up to its clock resolution)."""
        now = max(self.clock(), self._wheel.now)
        if reached is not None and reached > now:
            now = reached
        while True:
            try:
                self._advance(now)
            except Exception as exc:
                self.errors += 1
                self.on_error(exc)
            else:
                return


def _bind(wheel: TimingWheel, clock: LoopClock, target: object) -> None:
    """Bind ``wheel`` to ``clock``, or raise ClockMismatchError (see the module docstring)."""
    if isinstance(target, DelayedOperationPurgatory):
        kind, what = "purgatory", f"purgatory {target.name!r}"
    else:
        kind, what = "wheel", "the timing wheel"
    bound = wheel._clock
    if bound is None:
        now = clock()
        if wheel.now > now:
            raise ClockMismatchError(
                f"{what}'s time {wheel.now} is ahead of the reaper's clock ({now}): every "
                "deadline counted from the clock would be due at once. Start the clock at the "
                f"{kind}'s time (trio_clock(start={wheel.now}) or asyncio_clock(start="
                f"{wheel.now})), or create the {kind} with start={now}"
            )
        wheel._clock = clock
    elif bound != clock:
        raise ClockMismatchError(
            f"{what} reads its deadlines from {bound!r}, but this reaper advances it by "
            f"{clock!r}: operations would expire at the wrong time. Create the {kind} without "
            f"clock= (the reaper binds it to its own clock) or with clock=<the reaper's clock>; "
            f"a {kind} bound to an earlier reaper's clock keeps it: create a new {kind} for a "
            "new clock"
        )


@contextmanager
def lone_error_unwrapped() -> Iterator[None]:
    """Re-raise an exception group holding a single exception as that exception.

    Used by the reapers' context managers so that an error raised in their body (or by a
    failing reaper) reaches the caller as itself rather than wrapped by the task group.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise

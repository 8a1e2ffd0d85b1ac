"""ManualClock: integer time that moves only when its owner moves it.

The clock to give a :class:`~purgatory.DelayedOperationPurgatory` (``clock=``) or anything
else that reads the time by calling a function, when time is not real: tests, simulations,
replays. Call it (or read :attr:`ManualClock.now`) for the current time; move it with
:meth:`ManualClock.advance_to` or by assigning :attr:`ManualClock.now`. It never goes back:
both raise :class:`~purgatory.ClockWentBackwardsError` for an earlier time. Moving the clock
fires nothing; whoever owns the wheels advances them.
"""

from __future__ import annotations

from purgatory.errors import ClockWentBackwardsError, InvalidDeadlineError

__all__ = ["ManualClock"]


class ManualClock:
    """A clock at ``start`` (an int, in the caller's time unit) until moved."""

    __slots__ = ("_now",)

    def __init__(self, start: int = 0) -> None:
        self._now = _checked(start)

    def __call__(self) -> int:
        return self._now

    @property
    def now(self) -> int:
        """The current time; assigning a later time moves the clock (an earlier one raises
        ClockWentBackwardsError)."""
        return self._now

    @now.setter
    def now(self, time: int) -> None:
        self.advance_to(time)

    def advance_to(self, time: int) -> None:
        """Set the time to ``time`` (>= the current time)."""
        if _checked(time) < self._now:
            raise ClockWentBackwardsError(f"clock cannot go back from {self._now} to {time}")
        self._now = time

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now})"


def _checked(time: object) -> int:
    if type(time) is not int:
        raise InvalidDeadlineError(f"a clock's time must be an int, got {time!r}")
    return time

"""ManualClock: integer milliseconds that move only when the cluster's driver moves them."""

from __future__ import annotations

from purgatory import ClockWentBackwardsError

__all__ = ["ManualClock"]


class ManualClock:
    """A clock for brokers: call it to read the time (ms); :meth:`advance_to` moves it.

    Raises ``purgatory.ClockWentBackwardsError`` when asked to go back in time.
    """

    __slots__ = ("_now",)

    def __init__(self, start: int = 0) -> None:
        self._now = start

    def __call__(self) -> int:
        return self._now

    @property
    def now(self) -> int:
        """The current time in ms."""
        return self._now

    def advance_to(self, time: int) -> None:
        """Set the time to ``time`` (>= the current time)."""
        if time < self._now:
            raise ClockWentBackwardsError(
                f"clock cannot go back from {self._now} ms to {time} ms"
            )
        self._now = time

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now})"

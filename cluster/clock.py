"""Broker time: the :class:`Clock` protocol brokers read, and :class:`ManualClock`.

Every broker of a :class:`~cluster.Cluster` reads one clock, in integer milliseconds; nothing
in the broker layers keeps time of its own. Who moves it is the driver's business: a test
moves a :class:`ManualClock` by hand (``Cluster.advance``), the simulator hands the cluster a
clock derived from its engine's virtual time, a network server one derived from real time.
"""

from __future__ import annotations

from typing import Protocol

from purgatory import ClockWentBackwardsError

__all__ = ["Clock", "ManualClock"]


class Clock(Protocol):
    """A millisecond clock: call it (or read ``now``) for the current time; it never goes
    back."""

    def __call__(self) -> int: ...

    @property
    def now(self) -> int: ...


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

"""Broker time: the :class:`Clock` protocol brokers read.

Every broker of a :class:`~cluster.Cluster` reads one clock, in integer milliseconds; nothing
in the broker layers keeps time of its own. Who moves it is the driver's business: a test
moves a :class:`purgatory.ManualClock` by hand (``Cluster.advance``), the simulator hands the
cluster a clock derived from its engine's virtual time, a network server one derived from real
time.
"""

from __future__ import annotations

from typing import Protocol

from purgatory import ManualClock

__all__ = ["Clock", "ManualClock"]


class Clock(Protocol):
    """A millisecond clock: call it (or read ``now``) for the current time; it never goes
    back."""

    def __call__(self) -> int: ...

    @property
    def now(self) -> int: ...

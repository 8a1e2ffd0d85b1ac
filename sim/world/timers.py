"""Broker time on the simulator: the brokers' clock, read off the engine, and their wake-ups.

One source of time: the brokers read :class:`EngineClock`, the engine's virtual time in whole
milliseconds (``now_us // 1000``), so whatever broker code runs -- a request being handled, a
response arriving, a fault -- sees the simulator's time without anyone keeping two clocks in
step.

A broker's timers (delayed produce/fetch expiry, the ISR-expiration check, a follower's
fetch back-off) fire only when ``advance_clock`` is called; each broker has ONE engine event
at its next deadline (``BrokerNode.next_deadline``), which advances it, settles the cluster
and re-arms. Deadlines only appear or move earlier when the broker handles a request, gets a
response to one of its own fetches, or changes state (a fault), so the world calls
:meth:`BrokerTimers.arm` after those; nothing polls every millisecond.
"""

from __future__ import annotations

from functools import partial
from typing import Final

from cluster import Cluster, ClusterError
from sim.core.engine import Event, Simulator

__all__ = ["BrokerTimers", "EngineClock"]

_US_PER_MS: Final = 1000


class EngineClock:
    """The engine's virtual time in whole milliseconds: a :class:`cluster.Clock` that only
    the engine moves."""

    __slots__ = ("_sim",)

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    def __call__(self) -> int:
        return self._sim.now // _US_PER_MS

    @property
    def now(self) -> int:
        """The current time in ms."""
        return self._sim.now // _US_PER_MS

    def __repr__(self) -> str:
        return f"EngineClock(now={self.now})"


class BrokerTimers:
    """Timer wake-ups for the brokers of ``cluster`` on ``sim`` (see module doc)."""

    __slots__ = ("_cluster", "_events", "_sim")

    def __init__(self, sim: Simulator, cluster: Cluster) -> None:
        self._sim = sim
        self._cluster = cluster
        self._events: dict[int, Event] = {}

    def arm(self, broker_id: int) -> None:
        """Make sure broker ``broker_id`` wakes up at its next deadline (no-op if it already
        wakes up no later than that, or has nothing scheduled)."""
        deadline = self._cluster.brokers[broker_id].next_deadline()
        if deadline is None:
            return
        at = max(deadline * _US_PER_MS, self._sim.now)
        event = self._events.get(broker_id)
        if event is not None and event.pending:
            if event.time <= at:
                return
            event.cancel()
        self._events[broker_id] = self._sim.call_at(at, partial(self._wake, broker_id))

    def arm_all(self) -> None:
        """:meth:`arm` every broker."""
        for broker_id in self._cluster.brokers:
            self.arm(broker_id)

    def _wake(self, broker_id: int) -> None:
        del self._events[broker_id]
        now_ms = self._cluster.clock()
        node = self._cluster.brokers[broker_id]
        node.advance_clock(now_ms)
        self._cluster.run_until_idle()
        deadline = node.next_deadline()
        if deadline is not None and deadline <= now_ms:
            raise ClusterError(
                f"broker {broker_id}: a timer due at {deadline} ms did not fire at {now_ms} ms"
            )
        self.arm(broker_id)

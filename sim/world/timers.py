"""Broker time on the simulator: the brokers' millisecond clock and their timer wake-ups.

The brokers read the in-process cluster's :class:`~cluster.ManualClock` (integer ms); the
simulator counts microseconds. :meth:`BrokerTimers.sync_clock` sets the clock to
``now_us // 1000`` and is called before anything enters broker code.

A broker's timers (delayed produce/fetch expiry, the ISR-expiration check, a follower's
fetch back-off) fire only when ``advance_clock`` is called; each broker has ONE engine event
at its next deadline (``BrokerNode.next_deadline``), which advances it, settles the cluster
and re-arms. Deadlines only appear or move earlier when the broker handles a request, gets a
response to one of its own fetches, or changes state (a fault), so the world calls
:meth:`BrokerTimers.arm` after those; nothing polls every millisecond.
"""

from __future__ import annotations

from cluster import Cluster, ClusterError
from sim.core.engine import Event, Simulator

__all__ = ["BrokerTimers"]

_US_PER_MS = 1000


class BrokerTimers:
    """The brokers' clock and timer wake-ups for ``cluster`` on ``sim`` (see module doc)."""

    __slots__ = ("_clock", "_cluster", "_events", "_sim")

    def __init__(self, sim: Simulator, cluster: Cluster) -> None:
        self._sim = sim
        self._cluster = cluster
        self._clock = cluster.clock
        self._events: dict[int, Event] = {}

    def sync_clock(self) -> None:
        """Set the brokers' clock to the simulator's time, in whole milliseconds."""
        now_ms = self._sim.now // _US_PER_MS
        if now_ms != self._clock.now:
            self._clock.advance_to(now_ms)

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
        self._events[broker_id] = self._sim.call_at(at, lambda: self._wake(broker_id))

    def arm_all(self) -> None:
        """:meth:`arm` every broker."""
        for broker_id in self._cluster.brokers:
            self.arm(broker_id)

    def _wake(self, broker_id: int) -> None:
        del self._events[broker_id]
        self.sync_clock()
        now_ms = self._clock.now
        node = self._cluster.brokers[broker_id]
        node.advance_clock(now_ms)
        self._cluster.run_until_idle()
        deadline = node.next_deadline()
        if deadline is not None and deadline <= now_ms:
            raise ClusterError(
                f"broker {broker_id}: a timer due at {deadline} ms did not fire at {now_ms} ms"
            )
        self.arm(broker_id)

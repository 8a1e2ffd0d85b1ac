"""ReplicaFetcherManager: a broker's replica fetchers, one per leader it follows partitions of.

Kafka's ``AbstractFetcherManager`` / ``ReplicaFetcherManager`` with one fetcher per source
broker (Kafka's ``num.replica.fetchers = 1``), sans-IO: a fetcher is a
:class:`~replica.replica_fetcher.ReplicaFetcher`, not a thread, and whoever drives the broker
asks each one for its next fetch request. The partitions the broker follows are grouped by
leader:

* :meth:`~ReplicaFetcherManager.add_fetcher_for_partitions` hands each partition to the fetcher
  of its leader, creating the fetcher if there is none; the partition (re)starts at the given
  fetch state, forgetting any back-off;
* :meth:`~ReplicaFetcherManager.remove_fetcher_for_partitions` stops fetching partitions, and
  drops every fetcher left without partitions at once (Kafka drops idle fetcher threads
  later, in ``shutdownIdleFetcherThreads``);
* :meth:`~ReplicaFetcherManager.shutdown` drops every fetcher;
* :meth:`~ReplicaFetcherManager.ready_fetches` builds the requests of the fetchers that are
  due, for the driver to send;
* :attr:`~ReplicaFetcherManager.paused` holds every fetcher back (a stalled follower, a fault
  the simulator injects; Kafka has no such switch): while it is set, the driver sends no fetch
  and no fetcher keeps a wake-up on the broker's scheduler.

A dropped fetcher stops waking the broker at once (a response to its last fetch may still
arrive and is applied, but it never fetches again).

:attr:`~ReplicaFetcherManager.fetchers` maps leader id to fetcher and iterates in leader id
order, whatever order the fetchers were created in: a driver that starts fetches in that order
(the simulator) does not depend on the history of leadership changes. It is a live read-only
view: the dict behind it is changed in place, never replaced.

The :class:`~replica.replica_manager.ReplicaManager` owns one manager and decides, on each state
change, which partitions to remove and add (Kafka's ``makeLeaders`` / ``makeFollowers`` /
``stopReplicas``). The manager holds the broker only to give it to new fetchers, typed by
the :class:`~replica.replica_fetcher.LocalBroker` protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from replica.replica_fetcher import (
    InitialFetchState,
    LocalBroker,
    ReplicaFetcher,
    ReplicaFetchRequest,
)
from replica.types import TopicPartition


class ReplicaFetcherManager:
    """The replica fetchers of ``broker``, keyed by leader id (see the module docstring)."""

    __slots__ = ("_broker", "_fetchers", "_paused", "fetchers")

    def __init__(self, broker: LocalBroker) -> None:
        self._broker = broker
        self._fetchers: dict[int, ReplicaFetcher] = {}
        #: Live read-only view: leader id -> the fetcher of the partitions followed from it,
        #: in leader id order. A fetcher is dropped once it has no partitions.
        self.fetchers: Mapping[int, ReplicaFetcher] = MappingProxyType(self._fetchers)
        self._paused = False

    @property
    def paused(self) -> bool:
        """True while the fetchers are held back (see the module docstring)."""
        return self._paused

    @paused.setter
    def paused(self, paused: bool) -> None:
        if paused == self._paused:
            return
        self._paused = paused
        for fetcher in self._fetchers.values():
            if paused:
                fetcher.stop_waking()
            else:
                fetcher.start_waking()

    def add_fetcher_for_partitions(
        self, partitions: Mapping[TopicPartition, tuple[int, InitialFetchState]]
    ) -> None:
        """Fetch each partition from its leader: ``partitions`` maps a partition to
        ``(leader id, where to start)``. A partition another fetcher still has is not removed
        from it (call :meth:`remove_fetcher_for_partitions` first)."""
        by_leader: dict[int, dict[TopicPartition, InitialFetchState]] = {}
        for tp, (leader_id, initial_state) in partitions.items():
            by_leader.setdefault(leader_id, {})[tp] = initial_state
        for leader_id, initial_states in by_leader.items():
            fetcher = self._fetchers.get(leader_id)
            if fetcher is None:
                fetcher = self._add_fetcher(leader_id)
            fetcher.add_partitions(initial_states)

    def _add_fetcher(self, leader_id: int) -> ReplicaFetcher:
        """A new fetcher from ``leader_id``, keeping ``_fetchers`` in leader id order (in
        place: the read-only view stays live)."""
        fetcher = ReplicaFetcher(self._broker, leader_id)
        if self._paused:
            fetcher.stop_waking()
        fetchers = sorted({**self._fetchers, leader_id: fetcher}.items())
        self._fetchers.clear()
        self._fetchers.update(fetchers)
        return fetcher

    def remove_fetcher_for_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching ``partitions`` (unknown ones are ignored) and drop the fetchers left
        with none."""
        removed = list(partitions)
        for leader_id in list(self._fetchers):
            fetcher = self._fetchers[leader_id]
            fetcher.remove_partitions(removed)
            if not fetcher.partition_states:
                fetcher.stop_waking()
                del self._fetchers[leader_id]

    def ready_fetches(self, now_ms: int) -> list[tuple[ReplicaFetcher, ReplicaFetchRequest]]:
        """Build the fetch of every fetcher ready at ``now_ms`` (its
        :meth:`~ReplicaFetcher.next_fetch_time_ms` has come), in leader id order; none while
        :attr:`paused`. Each returned request is in flight until its fetcher is given the
        response or the failure."""
        ready: list[tuple[ReplicaFetcher, ReplicaFetchRequest]] = []
        if self._paused:
            return ready
        for fetcher in self._fetchers.values():
            due = fetcher.next_fetch_time_ms()
            if due is not None and due <= now_ms:
                request = fetcher.build_fetch_request(now_ms)
                if request is not None:
                    ready.append((fetcher, request))
        return ready

    def log_changed(self, partitions: Iterable[TopicPartition]) -> None:
        """The local logs of ``partitions`` changed other than through their fetchers'
        responses (:meth:`ReplicaFetcher.log_changed`)."""
        changed = list(partitions)
        for fetcher in self._fetchers.values():
            fetcher.log_changed(changed)

    def shutdown(self) -> None:
        """Drop every fetcher."""
        for fetcher in self._fetchers.values():
            fetcher.stop_waking()
        self._fetchers.clear()

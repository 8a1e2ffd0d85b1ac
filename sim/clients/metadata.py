"""A client's view of the cluster, kept current over the network (a :class:`MetadataView`).

Kafka's client-side ``Metadata`` (what producers and consumers know of leaders, partition
counts and coordinators), named :class:`ClientMetadata` so that it is not confused with the
broker's :class:`apis.metadata_cache.MetadataCache`, which answers Metadata requests.

``refresh`` sends one MetadataRequest for the cache's topics and one FindCoordinatorRequest
per group to a known broker (rotating through the bootstrap brokers and, once known, the live
brokers the last response listed). It completes when every answer arrived or timed out;
refreshes asked for meanwhile share it. A failed answer leaves the old entries in place:
callers re-read the view and back off if it is still unusable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from apis.metadata import MetadataRequest, MetadataResponse
from replica.errors import Errors
from replica.types import TopicPartition, canonical_partition
from sim.clients.errors import ClientConfigError
from sim.clients.network import ClientNetwork
from sim.core.engine import Scheduler

__all__ = ["ClientMetadata"]


class ClientMetadata:
    """Leaders, partition counts and group coordinators learnt from the brokers."""

    def __init__(
        self,
        scheduler: Scheduler,
        network: ClientNetwork,
        bootstrap_brokers: Sequence[int],
        *,
        topics: Iterable[str],
        groups: Iterable[str] = (),
        request_timeout_ms: int = 30_000,
    ) -> None:
        if not bootstrap_brokers:
            raise ClientConfigError("bootstrap_brokers must name at least one broker id")
        self._scheduler = scheduler
        self._network = network
        self._brokers = list(bootstrap_brokers)
        self._next = 0
        self._topics = list(dict.fromkeys(topics))
        self._groups = list(dict.fromkeys(groups))
        self._timeout_us = request_timeout_ms * 1000
        self._leaders: dict[TopicPartition, int] = {}
        self._counts: dict[str, int] = {}
        self._coordinators: dict[str, int] = {}
        self._waiters: list[Callable[[], None]] = []
        self._outstanding = 0
        self.refreshes = 0

    # -- MetadataView ---------------------------------------------------------------------------

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self._leaders.get(tp)

    def partition_count(self, topic: str) -> int | None:
        return self._counts.get(topic)

    def coordinator_for(self, group_id: str) -> int | None:
        return self._coordinators.get(group_id)

    def refresh(self, on_done: Callable[[], None]) -> None:
        self._waiters.append(on_done)
        if self._outstanding:
            return
        self.refreshes += 1
        broker = self._brokers[self._next % len(self._brokers)]
        self._next += 1
        self._outstanding = 1 + len(self._groups)
        self._request(broker, MetadataRequest(tuple(self._topics)), self._on_metadata)
        for group in self._groups:
            self._request(broker, FindCoordinatorRequest(group), self._coordinator_answer(group))

    # -- registration ---------------------------------------------------------------------------

    def add_topic(self, topic: str) -> None:
        """Include ``topic`` in future refreshes."""
        if topic not in self._topics:
            self._topics.append(topic)

    def add_group(self, group_id: str) -> None:
        """Look up ``group_id``'s coordinator in future refreshes."""
        if group_id not in self._groups:
            self._groups.append(group_id)

    # -- answers --------------------------------------------------------------------------------

    def _on_metadata(self, response: MetadataResponse | None) -> None:
        if response is None:
            return
        if response.brokers:
            self._brokers = [b.broker_id for b in response.brokers]
        for topic, meta in response.topics.items():
            if meta.error != Errors.NONE:
                continue
            self._counts[topic] = len(meta.partitions)
            for partition, pmeta in meta.partitions.items():
                tp = canonical_partition(topic, partition)
                if pmeta.error == Errors.NONE and pmeta.leader >= 0:
                    self._leaders[tp] = pmeta.leader
                else:
                    self._leaders.pop(tp, None)

    def _coordinator_answer(self, group: str) -> Callable[[FindCoordinatorResponse | None], None]:
        def answered(response: FindCoordinatorResponse | None) -> None:
            if response is None:
                return
            if response.error == Errors.NONE and response.coordinator is not None:
                self._coordinators[group] = response.coordinator.broker_id
            else:
                self._coordinators.pop(group, None)

        return answered

    def _request(self, broker: int, request: Any, on_answer: Callable[[Any], None]) -> None:
        settled = False

        def settle(response: Any) -> None:
            nonlocal settled
            if settled:
                return
            settled = True
            timer.cancel()
            on_answer(response)
            self._outstanding -= 1
            if not self._outstanding:
                waiters, self._waiters = self._waiters, []
                for waiter in waiters:
                    waiter()

        timer = self._scheduler.call_later(self._timeout_us, lambda: settle(None))
        self._network.send(broker, request, settle)

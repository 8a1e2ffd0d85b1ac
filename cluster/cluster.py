"""Cluster: several brokers, a controller, a transport and a clock, in one process.

Everything runs the real ``apis`` / ``coordinator`` / ``replica`` code; the cluster only moves
requests, responses and time around:

* requests go through the :class:`~cluster.transport.Transport` (clients', the
  controller's, and each follower's replica fetches to its leader's ``KafkaApis.handle_fetch``);
* :meth:`Cluster.run_until_idle` delivers, drains the brokers' request channels, runs the
  offset loads and starts ready fetches until nothing is left to do at the current time; every
  public method ends with it, so with the default
  :class:`~cluster.transport.ImmediateTransport` each call leaves the cluster settled. A
  broker is visited only while its ``has_work`` says something happened to it (a request, a
  response to its fetch, a timer), so settling after one request costs one broker's visit;
* :meth:`Cluster.advance` moves its :class:`~cluster.clock.ManualClock`, stopping at every
  timer deadline in between (delayed produce/fetch expiry, ISR checks, fetch back-off) and
  settling at each.

A simulator drives the same object with its own transport (delivering in its event loop) and
its own clock (derived from virtual time): it wakes each broker at the times
:meth:`BrokerNode.next_deadline <cluster.broker.BrokerNode.next_deadline>` asks for.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TypeVar

from apis.config import KafkaConfig
from apis.fetch import FetchRequest, FetchResponse
from apis.request_channel import Request, RequestBody, ResponseBody
from cluster.broker import BrokerNode
from cluster.clock import Clock, ManualClock
from cluster.controller import Controller
from cluster.errors import (
    ClusterError,
    DuplicateResponseError,
    UnexpectedResponseError,
    UnknownBrokerError,
)
from cluster.transport import (
    ImmediateTransport,
    ResponseCallback,
    Transport,
    broker_node_name,
)
from replica.errors import Errors
from replica.replica_fetcher import ReplicaFetcher, ReplicaFetchRequest
from replica.types import GROUP_METADATA_TOPIC_NAME, PartitionState, TopicPartition

__all__ = ["Call", "Cluster"]

_T = TypeVar("_T")


class Call:
    """A request sent through the cluster and what came back (compared by identity).

    ``response`` is None until the response arrives; ``answered_at`` is the clock time (ms)
    it arrived. A plain class, not an attrs one: one is made per request, and a plain class is
    native (cheap to build and read) in the compiled build.
    """

    __slots__ = ("answered_at", "destination", "request", "response", "sent_at")

    def __init__(
        self,
        request: Request,
        destination: int,
        sent_at: int,
        response: ResponseBody | None = None,
        answered_at: int | None = None,
    ) -> None:
        self.request = request
        self.destination = destination
        self.sent_at = sent_at
        self.response = response
        self.answered_at = answered_at

    def __repr__(self) -> str:
        return (
            f"Call(request={self.request!r}, destination={self.destination}, "
            f"sent_at={self.sent_at}, response={self.response!r}, "
            f"answered_at={self.answered_at})"
        )

    @property
    def done(self) -> bool:
        """True once the response arrived."""
        return self.response is not None

    def result(self, kind: type[_T]) -> _T:
        """The response, checked to be a ``kind``.

        Raises:
            UnexpectedResponseError: no response yet, or one of another type.
        """
        response = self.response
        if not isinstance(response, kind):
            raise UnexpectedResponseError(
                f"expected a {kind.__name__} to {type(self.request.body).__name__} "
                f"(correlation id {self.request.header.correlation_id}), got {response!r}"
            )
        return response

    def _record(self, body: ResponseBody, now: int) -> None:
        if self.response is not None:
            raise DuplicateResponseError(
                f"second response to correlation id {self.request.header.correlation_id}: "
                f"{body!r} after {self.response!r}"
            )
        self.response = body
        self.answered_at = now


class Cluster:
    """``broker_ids`` (or ``range(n)`` for an int) running the broker layers with ``config``.

    ``__consumer_offsets`` is created at start-up (unless ``create_offsets_topic`` is False)
    with ``config.offsets``' partition count and ``min(replication factor, brokers)``
    replicas. ``transport`` defaults to an :class:`ImmediateTransport`; ``clock`` to a
    :class:`ManualClock` starting at ``start_ms`` (give one or the other, not both).
    """

    def __init__(
        self,
        broker_ids: Sequence[int] | int = 3,
        *,
        config: KafkaConfig | None = None,
        transport: Transport | None = None,
        clock: Clock | None = None,
        start_ms: int = 0,
        create_offsets_topic: bool = True,
    ) -> None:
        ids = list(range(broker_ids)) if isinstance(broker_ids, int) else sorted(broker_ids)
        if not ids or len(set(ids)) != len(ids) or any(i < 0 for i in ids):
            raise UnknownBrokerError(f"broker ids must be distinct ints >= 0, got {broker_ids!r}")
        self.config = config if config is not None else KafkaConfig()
        if clock is not None and start_ms:
            raise ClusterError("give a clock or a start_ms, not both")
        self.clock: Clock = clock if clock is not None else ManualClock(start_ms)
        self.transport: Transport = transport if transport is not None else ImmediateTransport()
        self.transport.bind(self._receive)
        self.brokers = {i: BrokerNode(i, self.config, self.clock) for i in ids}
        self.controller = Controller(
            [b.endpoint for b in self.brokers.values()],
            self._send_from_controller,
            self._leader_isr,
        )
        self._correlation_ids = itertools.count(1)
        self._settling = False
        self.controller.startup()
        if create_offsets_topic:
            offsets = self.config.offsets
            self.create_topic(
                GROUP_METADATA_TOPIC_NAME,
                offsets.offsets_topic_num_partitions,
                min(offsets.offsets_topic_replication_factor, len(ids)),
            )
        self.run_until_idle()

    def __repr__(self) -> str:
        return f"Cluster(now={self.clock.now}, brokers={list(self.brokers.values())})"

    # -- sending ----------------------------------------------------------------------------

    def broker(self, broker_id: int) -> BrokerNode:
        """The broker with this id. Raises UnknownBrokerError."""
        node = self.brokers.get(broker_id)
        if node is None:
            raise UnknownBrokerError(
                f"broker {broker_id} is not in the cluster (brokers: {sorted(self.brokers)})"
            )
        return node

    def send(
        self,
        destination: int,
        body: RequestBody,
        on_response: ResponseCallback | None = None,
        *,
        source: str = "client",
        api_version: int = 0,
        client_id: str | None = None,
        client_host: str | None = None,
    ) -> Call:
        """Send ``body`` from node ``source`` to broker ``destination``; returns its
        :class:`Call`, whose response is filled in when it arrives (``on_response`` is called
        then too). ``api_version`` goes in the request header, with ``client_id`` (default
        ``source``); ``client_host`` is where the request came from (default the connection's
        name, ``source->broker-N``): a wire-protocol server passes the client's version, id
        and address, which the group coordinator records with a member. Raises
        UnknownBrokerError for an unknown destination."""
        self.broker(destination)
        correlation_id = next(self._correlation_ids)
        request = Request.create(
            body,
            correlation_id=correlation_id,
            client_id=source if client_id is None else client_id,
            connection_id=(
                f"{source}->{broker_node_name(destination)}" if client_host is None else client_host
            ),
            api_version=api_version,
        )
        call = Call(request, destination, self.clock.now)

        def deliver(response: ResponseBody) -> None:
            call._record(response, self.clock.now)
            if on_response is not None:
                on_response(response)
            self._settle()

        self.transport.send(source, destination, request, deliver)
        self._settle()
        return call

    def _send_from_controller(self, destination: int, body: RequestBody) -> None:
        self.send(destination, body, source="controller")

    def _receive(self, destination: int, request: Request, reply: ResponseCallback) -> None:
        self.brokers[destination].receive(request, reply)
        self._settle()

    def _leader_isr(self, leader: int, tp: TopicPartition) -> tuple[int, tuple[int, ...]] | None:
        rm = self.brokers[leader].replica_manager
        isr = rm.isr(tp)
        epoch = rm.leader_epoch(tp)
        if isr is None or epoch is None or not rm.is_leader(tp):
            return None
        return epoch, isr

    def _send_fetch(
        self, node: BrokerNode, fetcher: ReplicaFetcher, fetch: ReplicaFetchRequest
    ) -> None:
        incarnation = node.incarnation

        def on_response(response: ResponseBody) -> None:
            if node.incarnation != incarnation:
                return  # the follower stopped meanwhile: its fetch already failed
            node.has_work = True  # the fetcher may be ready again
            if not isinstance(response, FetchResponse):
                raise UnexpectedResponseError(f"a replica fetch was answered with {response!r}")
            if response.error is Errors.NETWORK_EXCEPTION:
                fetcher.handle_fetch_failure(self.clock.now)
            else:
                fetcher.handle_fetch_response(
                    response.responses,
                    self.clock.now,
                    session_id=response.session_id,
                    error=response.error,
                )

        session = fetch.session
        body = FetchRequest(
            fetch_data=session.to_send,
            max_wait_ms=fetch.max_wait_ms,
            min_bytes=fetch.min_bytes,
            max_bytes=fetch.max_bytes,
            replica_id=fetch.replica_id,
            session_id=session.metadata.session_id,
            session_epoch=session.metadata.epoch,
            forgotten=session.forgotten,
        )
        self.send(fetcher.leader_id, body, on_response, source=broker_node_name(node.broker_id))

    # -- running ----------------------------------------------------------------------------

    def run_until_idle(self) -> None:
        """Deliver, answer, load and fetch until nothing is left to do at the current time.

        Every broker is visited (whatever happened to it from outside the cluster's own
        calls). Re-entrant calls return at once (the outer call keeps going).
        """
        for node in self.brokers.values():
            node.has_work = True
        self._settle()

    def _settle(self) -> None:
        """:meth:`run_until_idle`, visiting only the brokers whose ``has_work`` is set: after
        a request, a response or a timer only the brokers it concerned can have work, so
        the others are not polled. Brokers are visited in id order, pass after pass, until a
        pass does nothing: the order of the full loop, less the visits that find nothing."""
        if self._settling:
            return
        self._settling = True
        try:
            progressed = True
            while progressed:
                progressed = self.transport.poll()
                for node in self.brokers.values():
                    if not node.has_work:
                        continue
                    node.has_work = False
                    worked = node.drain_responses()
                    worked |= node.run_tasks()
                    for fetcher, fetch in node.ready_fetches(self.clock.now):
                        self._send_fetch(node, fetcher, fetch)
                        worked = True
                    if worked:
                        node.has_work = progressed = True
        finally:
            self._settling = False

    def next_deadline(self) -> int | None:
        """The earliest time a running broker has a timer due (None: nothing scheduled)."""
        due = [t for t in (n.next_deadline() for n in self.brokers.values()) if t is not None]
        return min(due) if due else None

    def advance_to(self, time: int) -> None:
        """Set the clock to ``time``, fire the brokers' due timers and settle. Timers due
        earlier than ``time`` fire late; :meth:`advance` stops at each of them instead.

        Raises ``purgatory.ClockWentBackwardsError`` if ``time`` is in the past, ClusterError
        if the cluster's clock is not a :class:`ManualClock` (its driver moves time then).
        """
        if not isinstance(self.clock, ManualClock):
            raise ClusterError(f"this cluster's clock ({self.clock!r}) is moved by its driver")
        self.clock.advance_to(time)
        for node in self.brokers.values():
            node.advance_clock(time)
        self.run_until_idle()

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms``, stopping at every deadline on the way."""
        if ms < 0:
            raise ValueError(f"advance needs ms >= 0, got {ms}")
        target = self.clock.now + ms
        while (deadline := self.next_deadline()) is not None and deadline <= target:
            self.advance_to(max(deadline, self.clock.now))
            if self.next_deadline() == deadline:
                raise ClusterError(f"a timer due at {deadline} ms did not fire")
        self.advance_to(target)

    # -- topics and faults ------------------------------------------------------------------

    def create_topic(
        self, name: str, num_partitions: int, replication_factor: int
    ) -> dict[TopicPartition, PartitionState]:
        """Create a topic through the controller (see :meth:`Controller.create_topic`)."""
        created = self.controller.create_topic(name, num_partitions, replication_factor)
        self.run_until_idle()
        return created

    def leader(self, tp: TopicPartition) -> int:
        """The partition's leader according to the controller (-1: offline)."""
        return self.controller.partition_state(tp).leader

    def coordinator(self, group_id: str) -> int:
        """The broker leading ``group_id``'s ``__consumer_offsets`` partition (-1: none)."""
        partition = self.broker(min(self.brokers)).offset_manager.partition_for(group_id)
        return self.leader(TopicPartition(GROUP_METADATA_TOPIC_NAME, partition))

    def stop_broker(self, broker_id: int) -> None:
        """Stop a broker (its connections fail) and let the controller fail it over."""
        self.broker(broker_id).stop()
        self.controller.on_broker_failure(broker_id)
        self.run_until_idle()

    def restart_broker(self, broker_id: int) -> None:
        """Start a stopped broker; the controller brings it back into its partitions."""
        self.broker(broker_id).start()
        self.controller.on_broker_startup(broker_id)
        self.run_until_idle()

    def pause_fetchers(self, broker_id: int) -> None:
        """Stall a follower: its replica fetchers send no new fetches (a response already in
        flight is still applied). The controller is not told; the leader notices through
        replica.lag.time.max.ms."""
        self.broker(broker_id).fetchers_paused = True

    def resume_fetchers(self, broker_id: int) -> None:
        """Let a stalled follower fetch again."""
        self.broker(broker_id).fetchers_paused = False
        self.run_until_idle()

    def elect_leader(self, tp: TopicPartition, broker_id: int) -> PartitionState:
        """Move the leadership of ``tp`` to a live ISR member (see
        :meth:`Controller.elect_leader`)."""
        state = self.controller.elect_leader(tp, broker_id)
        self.run_until_idle()
        return state

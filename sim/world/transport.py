"""The cluster transport of the simulator: requests over the simulated network, through each
broker's request handler pool, and responses back over the network.

A request's life (every time is virtual, in microseconds):

1. ``send``: the request leaves ``source`` on the link to ``broker-<id>``
   (:class:`sim.core.network.Network`: per-link latency, in-order delivery, spikes, outages);
2. it arrives and enters the broker's :class:`~sim.core.request_handling.RequestHandlerPool`
   (queue, ``num.io.threads`` handler threads, a local time per request);
3. at the end of its local time the handler hands it to the broker (the cluster's receiver:
   ``BrokerNode.receive`` -> the real ``KafkaApis.handle``);
4. the broker answers at once or later (a delayed operation completing in a purgatory); the
   response travels back on the link ``broker-<id> -> source``;
5. it arrives and the sender's ``on_response`` runs.

Every request ends in exactly one ``on_response`` call, as the cluster's transport contract
requires: a message the network loses (an endpoint down, a connection broken while in flight)
and a request dropped from a crashed broker's queue are answered with the request's
NETWORK_EXCEPTION response. The one exception is an acks=0 produce, which gets no response, as
in Kafka (only clients send those, and their contract allows it) -- unless it failed (e.g.
NOT_LEADER_OR_FOLLOWER after a leader change): Kafka's broker then closes the connection so
that the client refreshes its metadata, and here the client gets the NETWORK_EXCEPTION of a
broken connection, one network trip after the broker answered.

Measurements: each answered request is reported to the recorder
(:meth:`sim.output.MetricsRecorder.request_completed`) with its round trip (send to response
arrival), its queue time in the handler pool, and its time in a purgatory: a response that
does not come out while the broker is handling the request was held by a delayed operation,
for (response time - handling time) -- the Produce purgatory for Produce and OffsetCommit (its
append), the Fetch purgatory for fetches.

Setup mode: until :meth:`SimTransport.go_live`, messages are delivered at once, in FIFO order,
by :meth:`SimTransport.poll` (like the cluster's ImmediateTransport), so the cluster starts at
time 0 with its topics created and leaders elected; responses sent after going live travel the
network even for requests made during setup (e.g. the followers' first long-polling fetches).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from functools import partial

from apis.api_table import api_of, response_errors
from apis.request_channel import Request, ResponseBody
from cluster import Receiver, ResponseCallback, UnknownBrokerError, broker_node_name
from replica.errors import Errors
from sim.core.engine import Simulator
from sim.core.network import Network
from sim.core.request_handling import RequestHandlerPool, local_time_sampler
from sim.output import MetricsRecorder
from sim.scenario import ClusterConfig
from sim.world.requests import api_name, response_error
from sim.world.timers import BrokerTimers

__all__ = ["Exchange", "SimTransport"]


class Exchange:
    """One request and its response on their way (what the request table reports).

    Its bound methods are the callbacks of the request's hops (arrival at the broker, the
    broker's reply, the response's arrival, a loss): one object per hop, where a partial of
    the transport's method was three (itself, its arguments, a bound method).
    """

    __slots__ = (
        "destination",
        "handled_us",
        "in_handler",
        "on_response",
        "purgatory_us",
        "queue_us",
        "request",
        "response",
        "sent_us",
        "source",
        "tracked",
        "transport",
    )

    def __init__(
        self,
        transport: SimTransport,
        source: str,
        destination: int,
        request: Request,
        on_response: ResponseCallback,
        sent_us: int,
        tracked: bool,
    ) -> None:
        self.transport = transport
        self.source = source
        self.destination = destination
        self.request = request
        self.on_response = on_response
        self.sent_us = sent_us
        self.tracked = tracked  # False during setup: not reported
        self.queue_us = 0
        self.handled_us = -1
        self.in_handler = False
        self.purgatory_us: int | None = None
        self.response: ResponseBody | None = None  # set when the broker replies

    def arrive(self) -> None:
        """The request reached its broker: it enters the broker's handler pool."""
        self.transport.pools[self.destination].submit(self)

    def respond(self, body: ResponseBody) -> None:
        """The broker's reply (a broker replies exactly once per request)."""
        self.transport._respond(self, body)

    def deliver(self) -> None:
        """The response reached the request's source."""
        response = self.response
        assert response is not None
        self.transport._deliver(self, response)

    def lost(self) -> None:
        """The request or its response was lost: the connection failed."""
        self.transport._lost(self)


class SimTransport:
    """A :class:`~cluster.Transport` over ``network`` (see the module docstring).

    ``broker_ids`` get one handler pool each, configured by ``cluster`` (num.io.threads,
    queued.max.requests, request_local_time, drawn from the stream
    ``request-handling:broker-<id>``). Answered requests are reported to ``recorder``.
    """

    def __init__(
        self,
        sim: Simulator,
        network: Network,
        recorder: MetricsRecorder,
        cluster: ClusterConfig,
        broker_ids: Iterable[int],
    ) -> None:
        self._sim = sim
        self._network = network
        self._recorder = recorder
        self._receiver: Receiver | None = None
        self._timers: BrokerTimers | None = None
        self._setup: deque[Callable[[], None]] = deque()
        self.pools: dict[int, RequestHandlerPool[Exchange]] = {}
        self._node_names: dict[int, str] = {}
        self._brokers_by_node: dict[str, int] = {}
        for broker_id in broker_ids:
            name = broker_node_name(broker_id)
            self._node_names[broker_id] = name
            self._brokers_by_node[name] = broker_id
            self.pools[broker_id] = RequestHandlerPool(
                sim,
                num_io_threads=cluster.num_io_threads,
                queued_max_requests=cluster.queued_max_requests,
                local_time=local_time_sampler(
                    cluster.request_local_time, sim.rng(f"request-handling:{name}")
                ),
                handler=self._handler(broker_id),
            )

    def go_live(self, timers: BrokerTimers) -> None:
        """Leave setup mode: from now on messages take network and handling time, and
        ``timers`` re-arms a broker's wake-up after each delivery to it."""
        self._timers = timers

    # -- the cluster Transport protocol --------------------------------------------------------

    def bind(self, receiver: Receiver) -> None:
        """Set the function that hands a request to its broker (the cluster's)."""
        self._receiver = receiver

    def send(
        self, source: str, destination: int, request: Request, on_response: ResponseCallback
    ) -> None:
        """Send ``request`` from node ``source`` to broker ``destination``.

        Raises UnknownBrokerError for a broker that is not in the cluster.
        """
        node = self._node_names.get(destination)
        if node is None:
            raise UnknownBrokerError(
                f"no broker {destination} (brokers: {sorted(self._node_names)})"
            )
        timers = self._timers
        now = self._sim.now
        exchange = Exchange(self, source, destination, request, on_response, now, bool(timers))
        if timers is None:
            self._setup.append(partial(self._handle, exchange))
            return
        self._network.send(source, node, exchange.arrive, exchange.lost)

    def poll(self) -> bool:
        """Setup mode: deliver queued messages (FIFO) until none is left; True if any was.
        Live: nothing to do here (the simulator delivers), False."""
        delivered = False
        while self._setup:
            self._setup.popleft()()
            delivered = True
        return delivered

    # -- faults ---------------------------------------------------------------------------------

    def drop_requests(self, broker_id: int) -> None:
        """Broker ``broker_id`` crashed: the requests in its queue and handler threads never
        reach it; each sender gets NETWORK_EXCEPTION (as a new event)."""
        for exchange in self.pools[broker_id].drop_all():
            self._sim.call_later(0, exchange.lost)

    # -- internals ------------------------------------------------------------------------------

    def _handler(self, broker_id: int) -> Callable[[Exchange, int], None]:
        def handle(exchange: Exchange, queue_time: int) -> None:
            exchange.queue_us = queue_time
            timers = self._timers
            assert timers is not None
            self._handle(exchange)
            timers.arm(broker_id)

        return handle

    def _handle(self, exchange: Exchange) -> None:
        receiver = self._receiver
        if receiver is None:
            raise RuntimeError("SimTransport: a request arrived before bind()")
        exchange.handled_us = self._sim.now
        exchange.in_handler = True
        try:
            receiver(exchange.destination, exchange.request, exchange.respond)
        finally:
            exchange.in_handler = False

    def _respond(self, exchange: Exchange, body: ResponseBody) -> None:
        """The broker answered: send the response back to the request's source. Nothing is
        sent for an acks=0 produce (Kafka writes no response for it) unless it failed: then
        the broker closes the connection, which the client learns one network trip later as
        the request's connection breaking (NETWORK_EXCEPTION), as with any broken
        connection."""
        if not exchange.request.expects_response:
            if any(error is not Errors.NONE for error in response_errors(body)):
                self._network.send(
                    self._node_names[exchange.destination],
                    exchange.source,
                    exchange.lost,
                    exchange.lost,
                )
            return
        if not exchange.in_handler:
            exchange.purgatory_us = self._sim.now - exchange.handled_us
        if self._timers is None:
            self._setup.append(partial(exchange.on_response, body))
            return
        exchange.response = body
        self._network.send(
            self._node_names[exchange.destination], exchange.source, exchange.deliver, exchange.lost
        )

    def _lost(self, exchange: Exchange) -> None:
        """The request or its response was lost: the connection failed."""
        exchange.purgatory_us = None
        self._deliver(exchange, exchange.request.body.error_response(Errors.NETWORK_EXCEPTION))

    def _deliver(self, exchange: Exchange, body: ResponseBody) -> None:
        timers = self._timers
        assert timers is not None
        if exchange.tracked:
            self._report(exchange, body)
        exchange.on_response(body)
        source_broker = self._brokers_by_node.get(exchange.source)
        if source_broker is not None:
            timers.arm(source_broker)  # a follower's fetcher may now back off

    def _report(self, exchange: Exchange, body: ResponseBody) -> None:
        request = exchange.request.body
        purgatory = exchange.purgatory_us
        produce = fetch = None
        if purgatory is not None:
            delayed_in = api_of(request).delayed_in
            if delayed_in == "produce":
                produce = purgatory
            elif delayed_in == "fetch":
                fetch = purgatory
        self._recorder.request_completed(
            api_name(request),
            exchange.destination,
            exchange.source,
            exchange.sent_us,
            self._sim.now,
            queue_time=exchange.queue_us,
            produce_purgatory=produce,
            fetch_purgatory=fetch,
            error=int(response_error(body)),
        )

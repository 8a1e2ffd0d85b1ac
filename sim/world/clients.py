"""The scenario's clients on the simulated cluster: producers, plain consumers, Burrow.

Each client is a node on the network named by its client id (``producer-<i>``,
``consumer-<i>``, ``burrow``, ``burrow-<i>``) and talks to the brokers through a
:class:`ClientPort`, the :class:`~sim.clients.ClientNetwork` over the in-process cluster. A
client has its own :class:`~sim.clients.ClientMetadata`, refreshed once before the client
starts; it draws its randomness from the stream named by its client id (``<id>:workload`` for
a producer's arrivals, sizes and keys), so adding a client does not perturb the others.

A consumer (plain or Burrow) joins its group (``subscribe``) when its ``group_membership`` is
``"on"``, or ``"auto"`` and another consumer of the scenario has the same ``group_id``
(:func:`sim.scenario.subscribes`); otherwise it is assigned every partition of its topics, as
before group membership existed. ``[burrow] members`` Burrow consumers are ``burrow``,
``burrow-1``, ...

Consumers live in a :class:`ConsumerSlot`, which can crash the running instance (no final
commit) and start a new one for the same group: the new instance resumes from the group's
committed offsets, so whatever was delivered but not committed is delivered again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from apis.header import ApiKeys
from apis.request_channel import Request
from cluster import broker_node_name
from replica.types import TopicPartition, canonical_partition
from sim.clients import (
    BurrowConsumer,
    ClientMetadata,
    ClientRecorder,
    ClientStateError,
    Consumer,
    Producer,
    WorkloadDriver,
)
from sim.core.engine import Simulator
from sim.core.network import Network
from sim.scenario import (
    BurrowSection,
    ConsumerSection,
    ProducerSection,
    Scenario,
    consumer_ids,
    subscribes,
)
from sim.world.transport import SimTransport

__all__ = ["ClientPort", "ConsumerSlot", "ProducerClient", "start_clients"]


_API_VERSIONS: Final = {ApiKeys.JOIN_GROUP: 9}
"""Request versions the clients send where a rule depends on it (Kafka 3.9's consumer sends
JoinGroup v9: MEMBER_ID_REQUIRED applies from v4); every other request goes as version 0."""


class ClientPort:
    """A :class:`~sim.clients.ClientNetwork` for client ``client_id``: its requests go straight
    to the simulator's transport (the network, then the broker's handler pool), with the
    client's own correlation ids; responses always arrive as later events.

    Clients are not part of the in-process cluster, so their requests skip ``Cluster.send``:
    nothing in the cluster needs settling when a client sends or is answered.
    """

    __slots__ = ("_connections", "_correlation_ids", "_transport", "client_id")

    def __init__(self, transport: SimTransport, client_id: str) -> None:
        self._transport = transport
        self._correlation_ids = itertools.count(1)
        self._connections: dict[int, str] = {}
        self.client_id = client_id

    def send(self, broker_id: int, request: Any, on_response: Callable[[Any], None]) -> None:
        """Send ``request`` (an ``apis`` request body) to broker ``broker_id``; ``on_response``
        gets the response body. Raises UnknownBrokerError for a broker not in the cluster."""
        connection = self._connections.get(broker_id)
        if connection is None:
            connection = f"{self.client_id}->{broker_node_name(broker_id)}"
            self._connections[broker_id] = connection
        wrapped = Request.create(
            request,
            correlation_id=next(self._correlation_ids),
            client_id=self.client_id,
            connection_id=connection,
            api_version=_API_VERSIONS.get(request.API_KEY, 0),
        )
        self._transport.send(self.client_id, broker_id, wrapped, on_response)


class _Context:
    """What every client is built from."""

    __slots__ = ("broker_ids", "network", "partitions", "recorder", "sim", "transport")

    def __init__(
        self,
        sim: Simulator,
        network: Network,
        transport: SimTransport,
        broker_ids: Sequence[int],
        recorder: ClientRecorder,
        partitions: dict[str, int],
    ) -> None:
        self.sim = sim
        self.network = network
        self.transport = transport
        self.broker_ids = list(broker_ids)
        self.recorder = recorder
        self.partitions = partitions  # topic -> partition count

    def port(self, client_id: str) -> ClientPort:
        """A port for a new network node ``client_id``."""
        self.network.add_node(client_id, "client")
        return ClientPort(self.transport, client_id)

    def metadata(
        self, port: ClientPort, topics: Sequence[str], groups: Sequence[str], timeout_ms: int
    ) -> ClientMetadata:
        return ClientMetadata(
            self.sim, port, self.broker_ids, topics=topics, groups=groups,
            request_timeout_ms=timeout_ms,
        )  # fmt: skip

    def assignment(self, topics: Sequence[str]) -> list[TopicPartition]:
        return [canonical_partition(t, p) for t in topics for p in range(self.partitions[t])]


class ProducerClient:
    """A producer and the workload driving it; starts sending once its metadata is known."""

    __slots__ = ("driver", "producer")

    def __init__(
        self, context: _Context, client_id: str, section: ProducerSection, ids: Iterator[int]
    ) -> None:
        port = context.port(client_id)
        config = section.config
        metadata = context.metadata(port, [section.workload.topic], [], config.request_timeout_ms)
        self.producer = Producer(
            context.sim, port, metadata, config, rng=context.sim.rng(client_id),
            recorder=context.recorder, client_id=client_id, message_ids=ids,
        )  # fmt: skip
        self.driver = WorkloadDriver(
            context.sim, self.producer, section.workload,
            rng=context.sim.rng(f"{client_id}:workload"),
        )  # fmt: skip
        metadata.refresh(self.driver.start)


class ConsumerSlot:
    """A consumer (plain or Burrow) that can be crashed and restarted (see the module doc).

    ``build()`` makes and starts a new instance; the first one is built at once.
    """

    __slots__ = ("_build", "client_id", "instance", "restarts")

    def __init__(self, client_id: str, build: Callable[[], Consumer | BurrowConsumer]) -> None:
        self.client_id = client_id
        self._build = build
        self.restarts = 0
        self.instance = build()

    @property
    def running(self) -> bool:
        """False once the current instance has crashed or stopped."""
        return not self.instance.stopped

    def crash(self) -> None:
        """Kill the running instance: no final commit, in-flight work lost."""
        self.instance.crash()

    def restart(self) -> None:
        """Start a new instance (it resumes from the committed offsets).

        Raises ClientStateError if the current instance is still running.
        """
        if self.running:
            raise ClientStateError(f"{self.client_id} is running: crash it before restarting")
        self.restarts += 1
        self.instance = self._build()


def _start_unless_stopped(consumer: Consumer | BurrowConsumer) -> None:
    """Start ``consumer`` once its metadata is known, unless it crashed in the meantime."""
    if not consumer.stopped:
        consumer.start()


def _plain_consumer(
    context: _Context, client_id: str, section: ConsumerSection, subscribe: bool
) -> Callable[[], Consumer]:
    port = context.port(client_id)
    config = section.config
    groups = [] if config.group_id is None else [config.group_id]

    def build() -> Consumer:
        metadata = context.metadata(port, section.topics, groups, config.request_timeout_ms)
        consumer = Consumer(
            context.sim, port, metadata, config, rng=context.sim.rng(client_id),
            recorder=context.recorder, client_id=client_id,
        )  # fmt: skip
        if subscribe:
            consumer.subscribe(section.topics)
        else:
            members, member = section.members, section.member
            share = context.assignment(section.topics)
            consumer.assign([tp for tp in share if tp.partition % members == member])
        metadata.refresh(lambda: _start_unless_stopped(consumer))
        return consumer

    return build


def _burrow(
    context: _Context, client_id: str, section: BurrowSection, subscribe: bool
) -> Callable[[], BurrowConsumer]:
    port = context.port(client_id)
    inner = section.consumer
    group_id = inner.group_id
    assert group_id is not None  # BurrowSection checks it

    def build() -> BurrowConsumer:
        metadata = context.metadata(port, [section.topic], [group_id], inner.request_timeout_ms)
        burrow = BurrowConsumer(
            context.sim, port, metadata, section.config, inner,
            partitions=() if subscribe else context.assignment([section.topic]),
            topics=[section.topic] if subscribe else (),
            rng=context.sim.rng(client_id), recorder=context.recorder, client_id=client_id,
        )  # fmt: skip
        metadata.refresh(lambda: _start_unless_stopped(burrow))
        return burrow

    return build


def start_clients(
    sim: Simulator,
    network: Network,
    transport: SimTransport,
    broker_ids: Sequence[int],
    recorder: ClientRecorder,
    scenario: Scenario,
) -> tuple[list[ProducerClient], dict[str, ConsumerSlot]]:
    """Create and start the scenario's clients (bootstrapping from ``broker_ids``); return the
    producers and the consumer slots by client id (:func:`sim.scenario.consumer_ids`).
    Message ids are unique across producers.
    """
    partitions = {topic.name: topic.partitions for topic in scenario.topics}
    context = _Context(sim, network, transport, broker_ids, recorder, partitions)
    ids = itertools.count()
    producers = [
        ProducerClient(context, f"producer-{i}", section, ids)
        for i, section in enumerate(scenario.producers)
    ]
    builders: list[Callable[[], Consumer | BurrowConsumer]] = [
        _plain_consumer(context, f"consumer-{i}", section, subscribes(scenario, section))
        for i, section in enumerate(scenario.consumers)
    ]
    burrow = scenario.burrow
    if burrow is not None:
        member = subscribes(scenario, burrow)
        builders += [
            _burrow(context, client_id, burrow, member)
            for client_id in consumer_ids(scenario)[len(scenario.consumers) :]
        ]
    slots = {
        client_id: ConsumerSlot(client_id, build)
        for client_id, build in zip(consumer_ids(scenario), builders, strict=True)
    }
    return producers, slots

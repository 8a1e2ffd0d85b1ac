"""KafkaServer: the brokers of an in-process :class:`cluster.Cluster` served over TCP with trio.

The server is a driver at the edge, like :mod:`purgatory.trio_reaper`: everything below it is
synchronous and reads the cluster's :class:`~cluster.ManualClock`; the server moves that
clock with real time and carries bytes.

* **One listener per broker** on ``host``, port ``port + broker index`` (or an ephemeral port
  each with ``port=0``); Metadata and FindCoordinator advertise these addresses.
* **One task per connection**: read a size-prefixed frame (at most ``max_request_bytes``),
  decode it (:mod:`kafka_server.protocol`), serve it through its row of
  :data:`~kafka_server.translations.TRANSLATIONS` (which hands an :mod:`apis` body to the
  broker's ``KafkaApis`` through ``Cluster.send``), wait for the answer and write it, then
  read the next frame. Like Kafka's network processor, a connection has one request in
  progress at a time (Kafka mutes the channel until the response is sent), so responses go
  back in request order; pipelined requests wait in the socket. An acks=0 produce gets no
  response (the next frame is read at once); one that failed closes the connection.
* **Bad input closes only its connection**: a size below 0 or above the limit, an unknown API
  key or version (ApiVersions excepted: it is answered with UNSUPPORTED_VERSION), bytes that
  do not parse, a client gone mid-frame; an unexpected exception while serving a request is
  logged and closes the connection too. No state changes for a request that did not parse.
* **Idle connections are closed** after ``connections_max_idle_ms`` (Kafka's
  ``connections.max.idle.ms``, 10 minutes) without a byte from the client while no request
  of theirs is in progress, so a client that stalls mid-frame (or just leaves its socket
  open) does not hold its connection forever. A long poll in progress is not idle.
* **A reaper task** advances the cluster to the current time whenever the brokers' earliest
  timer is due (delayed produce and fetch expiry, ISR checks, replica fetch back-off), and
  is woken after every request, which may have moved that deadline earlier.

Time: the cluster's clock starts at the wall clock's milliseconds (brokers stamp log append
times and commit times with it) and then follows ``trio.current_time()``, so it never goes
back.
"""

from __future__ import annotations

import itertools
import logging
import math
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import trio

from apis import KafkaConfig, RequestBody, ResponseBody
from cluster import Cluster, ClusterError, ManualClock
from kafka_server.protocol import MAX_REQUEST_BYTES, DecodedRequest, decode_request, encode_response
from kafka_server.translations import InvalidRequestError, Silence

__all__ = ["KafkaServer", "TopicSpec"]

_logger = logging.getLogger(__name__)
_SIZE_BYTES = 4
CONNECTIONS_MAX_IDLE_MS = 600_000
"""Kafka's ``connections.max.idle.ms`` default: a connection silent this long is closed."""
_TOPIC_ID_NAMESPACE = uuid.UUID("5d1d5d8a-4e0e-4b4e-9a57-6b6166b3c0de")


@attrs.frozen
class TopicSpec:
    """A topic to create at start-up: name, partitions, replication factor (capped at the
    number of brokers)."""

    name: str
    partitions: int = 1
    replication_factor: int = 3

    @classmethod
    def parse(cls, text: str) -> TopicSpec:
        """``name[:partitions[:replication_factor]]``, as the CLI's ``--topic`` takes it.

        Raises:
            ValueError: not that shape, or a count that is not an int >= 1.
        """
        name, *counts = text.split(":")
        if not name or len(counts) > 2:
            raise ValueError(f"--topic wants name[:partitions[:replication_factor]], got {text!r}")
        numbers = [int(c) for c in counts]
        if any(n < 1 for n in numbers):
            raise ValueError(f"partitions and replication factor must be >= 1, got {text!r}")
        return cls(name, *numbers)


class _Pending:
    """The one answer of a request being served, and the event its connection waits on."""

    __slots__ = ("answer", "done")

    def __init__(self) -> None:
        self.answer: Any = Silence.CLOSE_CONNECTION
        self.done = trio.Event()

    def __call__(self, answer: Any) -> None:
        if not self.done.is_set():
            self.answer = answer
            self.done.set()


class _Connection:
    """What a translation serving one request sees of the broker its connection is to (a
    :class:`~kafka_server.translations.BrokerContext`); ``pending`` gets the answer."""

    def __init__(
        self,
        server: KafkaServer,
        broker_id: int,
        name: str,
        request: DecodedRequest,
        client_host: str,
        pending: _Pending,
    ) -> None:
        self.server = server
        self.broker_id = broker_id
        self.name = name
        self.request = request
        self.client_host = client_host
        self.pending = pending

    def send(self, body: RequestBody, on_response: Callable[[ResponseBody], None]) -> None:
        def guarded(response: ResponseBody) -> None:
            # Runs inside the cluster's settling, maybe from the reaper: a failure here must
            # not escape into the cluster, only fail this request's connection.
            try:
                on_response(response)
            except Exception:
                _logger.exception("%s: building the response to %r failed", self.name, body)
                self.pending(Silence.CLOSE_CONNECTION)

        self.server.cluster.send(
            self.broker_id,
            body,
            guarded,
            source=self.name,
            api_version=self.request.version,
            client_id=self.request.client_id or "",
            client_host=self.client_host,
        )

    def advertised(self, broker_id: int) -> tuple[str, int] | None:
        return self.server.advertised(broker_id)

    def topic_id(self, topic: str) -> uuid.UUID:
        return self.server.topic_id(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.server.topic_name(topic_id)

    def auto_create(self, topics: list[str]) -> None:
        self.server.auto_create(topics)

    def allocate_producer_id(self) -> int:
        return next(self.server._producer_ids)

    def cluster_id(self) -> str:
        return self.server.cluster_id

    def max_message_bytes(self) -> int:
        return self.server.cluster.config.broker.message_max_bytes


def _client_host(stream: trio.SocketStream) -> str:
    """The client's address as Kafka records it with a group member (``/127.0.0.1``)."""
    try:
        peer = stream.socket.getpeername()
    except OSError:
        return "/unknown"
    return f"/{peer[0]}"


class KafkaServer:
    """``brokers`` brokers of one :class:`~cluster.Cluster`, each listening on ``host``.

    ``port``: the first broker's port, the others follow (0: an ephemeral port each).
    ``topics`` are created at start-up; unknown topics named in a Metadata request are created
    with ``default_partitions`` and ``default_replication_factor`` (capped at the live brokers)
    unless ``auto_create_topics`` is False. ``config`` configures every broker.
    ``max_request_bytes`` bounds a frame and ``connections_max_idle_ms`` a client's silence
    (Kafka's ``socket.request.max.bytes`` and ``connections.max.idle.ms``).

    Run it with ``await server.serve()`` (or ``nursery.start(server.serve)``, which returns once
    every broker listens); cancel it to stop. The attributes below are valid from then on.
    """

    def __init__(
        self,
        brokers: int = 3,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        topics: Sequence[TopicSpec] = (),
        config: KafkaConfig | None = None,
        auto_create_topics: bool = True,
        default_partitions: int = 1,
        default_replication_factor: int = 3,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        connections_max_idle_ms: int = CONNECTIONS_MAX_IDLE_MS,
    ) -> None:
        if brokers < 1:
            raise ValueError(f"a server needs at least one broker, got {brokers}")
        if connections_max_idle_ms < 1:
            raise ValueError(f"connections_max_idle_ms must be >= 1, got {connections_max_idle_ms}")
        self.host = host
        self.port = port
        self.topics = tuple(topics)
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.max_request_bytes = max_request_bytes
        self.connections_max_idle_ms = connections_max_idle_ms
        self.cluster_id = "kafka-purgatory"
        self._start_ms = int(time.time() * 1000)
        self.clock = ManualClock(self._start_ms)
        #: The in-process cluster served (its brokers are ``0 .. brokers - 1``).
        self.cluster = Cluster(brokers, config=config, clock=self.clock)
        #: ``broker id -> (host, port)`` of every broker listening.
        self.addresses: dict[int, tuple[str, int]] = {}
        self._scopes: dict[int, trio.CancelScope] = {}
        self._stopped_ports: dict[int, int] = {}
        self._listeners: dict[int, trio.SocketListener] = {}
        self._nursery: trio.Nursery | None = None
        self._topic_names: dict[uuid.UUID, str] = {}
        self._producer_ids = itertools.count()
        self._connection_ids = itertools.count(1)
        self._wakeup = trio.Event()
        self._t0 = 0.0

    @property
    def bootstrap_servers(self) -> str:
        """``host:port,...`` of the listening brokers (a client's bootstrap list)."""
        return ",".join(f"{h}:{p}" for h, p in self.addresses.values())

    # -- running ----------------------------------------------------------------------------

    async def serve(
        self, *, task_status: trio.TaskStatus[KafkaServer] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen on every broker's port and serve until cancelled; ``task_status.started``
        gets the server once every broker listens."""
        self._t0 = trio.current_time()
        for spec in self.topics:
            self.cluster.create_topic(
                spec.name, spec.partitions, min(spec.replication_factor, len(self.cluster.brokers))
            )
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for index, broker_id in enumerate(sorted(self.cluster.brokers)):
                self._listen(broker_id, 0 if self.port == 0 else self.port + index)
            nursery.start_soon(self._reap)
            task_status.started(self)

    def _listen(self, broker_id: int, port: int) -> None:
        """Bind ``host:port`` for broker ``broker_id`` and start serving it.

        Raises:
            OSError: the address cannot be bound.
        """
        if self._nursery is None:
            raise ClusterError("the server is not running")
        family, kind, proto, _, address = socket.getaddrinfo(
            self.host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen()
        except OSError:
            sock.close()
            raise
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
        bound = sock.getsockname()[1]
        self.addresses[broker_id] = (self.host, bound)
        scope = trio.CancelScope()
        self._scopes[broker_id] = scope
        self._listeners[broker_id] = listener
        self._nursery.start_soon(self._serve_broker, broker_id, [listener], scope)
        _logger.info("broker %d listening on %s:%d", broker_id, self.host, bound)

    async def _serve_broker(
        self, broker_id: int, listeners: list[trio.SocketListener], scope: trio.CancelScope
    ) -> None:
        with scope:
            async with trio.open_nursery() as nursery:
                for listener in listeners:
                    nursery.start_soon(self._accept, broker_id, listener, nursery)
        for listener in listeners:
            await listener.aclose()

    async def _accept(
        self, broker_id: int, listener: trio.SocketListener, nursery: trio.Nursery
    ) -> None:
        async with listener:
            while True:
                stream = await listener.accept()
                nursery.start_soon(self._connection, broker_id, stream)

    def stop_broker(self, broker_id: int) -> None:
        """Stop a broker: close its listener and connections, and let the cluster's
        controller move its leaderships (``Cluster.stop_broker``)."""
        scope = self._scopes.pop(broker_id, None)
        if scope is None:
            raise ClusterError(f"broker {broker_id} is not running")
        scope.cancel()
        self._listeners.pop(broker_id).socket.close()  # now: a restart may rebind the port
        self._stopped_ports[broker_id] = self.addresses.pop(broker_id)[1]
        self._tick()
        self.cluster.stop_broker(broker_id)
        self._wakeup.set()
        _logger.info("broker %d stopped", broker_id)

    def restart_broker(self, broker_id: int) -> None:
        """Start a stopped broker again on the port it had (``Cluster.restart_broker``: the
        controller makes it a follower of its partitions again; leaderships stay where they
        moved).

        Raises:
            ClusterError: the broker was not stopped through :meth:`stop_broker`.
            OSError: its port is taken meanwhile.
        """
        port = self._stopped_ports.get(broker_id)
        if port is None:
            raise ClusterError(f"broker {broker_id} was not stopped")
        self._listen(broker_id, port)
        del self._stopped_ports[broker_id]
        self._tick()
        self.cluster.restart_broker(broker_id)
        self._wakeup.set()

    def _now_ms(self) -> int:
        return self._start_ms + int((trio.current_time() - self._t0) * 1000)

    def _tick(self) -> None:
        now = self._now_ms()
        if now > self.clock.now:
            self.cluster.advance_to(now)

    async def _reap(self) -> None:
        while True:
            self._tick()
            deadline = self.cluster.next_deadline()
            wake_at = math.inf
            if deadline is not None:
                wake_at = self._t0 + (deadline - self._start_ms + 0.5) / 1000
            with trio.move_on_at(wake_at):
                await self._wakeup.wait()
            self._wakeup = trio.Event()

    # -- connections ------------------------------------------------------------------------

    async def _connection(self, broker_id: int, stream: trio.SocketStream) -> None:
        name = f"conn-{next(self._connection_ids)}->broker-{broker_id}"
        client_host = _client_host(stream)
        buffer = bytearray()
        try:
            async with stream:
                while True:
                    frame = await self._read_frame(stream, buffer, name)
                    if frame is None:
                        return
                    answer = await self._serve_frame(broker_id, name, client_host, frame)
                    if answer is None:
                        return
                    if answer:
                        await stream.send_all(answer)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            _logger.debug("%s: closed: %r", name, exc)

    async def _read_frame(
        self, stream: trio.SocketStream, buffer: bytearray, name: str
    ) -> bytes | None:
        """The next frame, or None if the client closed, sent a size out of bounds or was
        silent for ``connections_max_idle_ms``."""
        size: int | None = None
        while True:
            if size is None and len(buffer) >= _SIZE_BYTES:
                size = int.from_bytes(buffer[:_SIZE_BYTES], "big", signed=True)
                if not 0 <= size <= self.max_request_bytes:
                    _logger.warning("%s: a frame of %d bytes is out of bounds: closing", name, size)
                    return None
            if size is not None and len(buffer) >= _SIZE_BYTES + size:
                frame = bytes(buffer[_SIZE_BYTES : _SIZE_BYTES + size])
                del buffer[: _SIZE_BYTES + size]
                return frame
            data = b""
            with trio.move_on_after(self.connections_max_idle_ms / 1000) as idle:
                data = await stream.receive_some(65536)
            if idle.cancelled_caught:
                _logger.info("%s: idle for %d ms: closing", name, self.connections_max_idle_ms)
                return None
            if not data:
                if buffer:
                    _logger.info("%s: the client left mid-frame", name)
                return None
            buffer += data

    async def _serve_frame(
        self, broker_id: int, name: str, client_host: str, frame: bytes
    ) -> bytes | None:
        """The bytes to write for ``frame`` (b"" for nothing), or None to close."""
        decoded = decode_request(frame)
        if not isinstance(decoded, DecodedRequest):
            _logger.warning("%s: %s", name, decoded.reason)
            return decoded.answer
        if broker_id not in self._scopes:
            return None
        _logger.debug("%s: %s v%d", name, decoded.translation.name, decoded.version)
        pending = _Pending()
        connection = _Connection(self, broker_id, name, decoded, client_host, pending)
        try:
            self._tick()
            decoded.translation.serve(decoded.payload, decoded.version, connection, pending)
        except InvalidRequestError as exc:
            _logger.warning("%s: %s v%d: %s", name, decoded.translation.name, decoded.version, exc)
            return None
        except Exception:
            _logger.exception(
                "%s: serving %s v%d failed", name, decoded.translation.name, decoded.version
            )
            return None
        finally:
            self._wakeup.set()
        await pending.done.wait()
        if pending.answer is Silence.CLOSE_CONNECTION:
            return None
        if pending.answer is Silence.NO_RESPONSE:
            return b""
        try:
            return encode_response(pending.answer, decoded.correlation_id)
        except Exception:
            _logger.exception("%s: encoding a %s response failed", name, decoded.translation.name)
            return None

    # -- what translations ask of the server ------------------------------------------------

    def advertised(self, broker_id: int) -> tuple[str, int] | None:
        """Where clients reach broker ``broker_id``, None if it is not listening."""
        return self.addresses.get(broker_id)

    def topic_id(self, topic: str) -> uuid.UUID:
        """A topic's id: derived from the cluster id and the name, so stable while the topic
        exists (topics are never deleted)."""
        topic_id = uuid.uuid5(_TOPIC_ID_NAMESPACE, f"{self.cluster_id}/{topic}")
        self._topic_names[topic_id] = topic
        return topic_id

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The topic with id ``topic_id``, None if there is none."""
        if topic_id not in self._topic_names:
            for topic in self.cluster.controller.topics():
                self.topic_id(topic)
        return self._topic_names.get(topic_id)

    def auto_create(self, topics: list[str]) -> None:
        """Create the missing ``topics`` (if auto-creation is on)."""
        if not self.auto_create_topics:
            return
        existing = set(self.cluster.controller.topics())
        live = len(self.cluster.controller.live_brokers)
        for topic in topics:
            if topic in existing or live == 0:
                continue
            self.cluster.create_topic(
                topic, self.default_partitions, min(self.default_replication_factor, live)
            )
            _logger.info("created topic %s", topic)

"""The three real clients behind one small, blocking interface, so that each scenario of
``test_client_matrix.py`` runs unchanged against kafka-python, aiokafka and confluent-kafka.

A :class:`Client` makes producers (acks=all, idempotent, retrying) and consumers; a consumer
joins a group when given topics (``subscribe``) or reads assigned partitions. Nothing here
hides a client's behaviour: each call is the client's own (send and wait, poll, commit,
committed, assignment, close). aiokafka is asyncio code: its clients live on an event loop
running in a thread of its own, so they heartbeat while the test waits on another client, as
they would in an asyncio application.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple, Protocol, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import KafkaError
from confluent_kafka import Producer as CkProducer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KpTopicPartition

__all__ = [
    "CLIENTS",
    "Client",
    "ClientConsumer",
    "ClientProducer",
    "ConsumerOptions",
    "Message",
    "poll_until",
]

_T = TypeVar("_T")


class Message(NamedTuple):
    partition: int
    offset: int
    value: bytes


class ConsumerOptions(NamedTuple):
    """What a scenario sets on a consumer, in Kafka's terms (each client spells them its way)."""

    group: str | None = None
    topics: Sequence[str] = ()  # subscribe (join ``group``); empty: assign with ``assign``
    fetch_max_wait_ms: int = 500
    fetch_min_bytes: int = 1


class ClientProducer(Protocol):
    def send(self, topic: str, values: Sequence[bytes], partition: int = 0) -> list[int]:
        """Send ``values`` (acks=all) to one partition and wait; their offsets, in order."""

    def close(self) -> None: ...


class ClientConsumer(Protocol):
    def poll(self, seconds: float) -> list[Message]:
        """Whatever arrives within ``seconds`` (runs the client's group work too)."""

    def assign(self, topic: str, partition: int, offset: int) -> None:
        """Read ``partition`` from ``offset`` (no group membership)."""

    def assignment(self) -> set[int]:
        """The partitions assigned to this consumer now."""

    def commit(self, topic: str, offsets: dict[int, int]) -> None:
        """Commit ``offsets`` (partition -> next offset to read) synchronously."""

    def committed(self, topic: str, partition: int) -> int | None:
        """The group's committed offset of ``partition``, asked of its coordinator."""

    def close(self) -> None:
        """Leave the group (LeaveGroup) and close."""


class Client(Protocol):
    name: str

    def producer(self, bootstrap: str) -> ClientProducer: ...

    def consumer(self, bootstrap: str, options: ConsumerOptions) -> ClientConsumer: ...


# -- kafka-python -------------------------------------------------------------------------------


class _KpProducer:
    def __init__(self, bootstrap: str) -> None:
        # kafka-python 3 is idempotent by default (acks=all, retries without limit).
        self._producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)

    def send(self, topic: str, values: Sequence[bytes], partition: int = 0) -> list[int]:
        futures = [self._producer.send(topic, v, partition=partition) for v in values]
        self._producer.flush(timeout=60)
        return [f.get(timeout=60).offset for f in futures]

    def close(self) -> None:
        self._producer.close(timeout=10)


class _KpConsumer:
    def __init__(self, bootstrap: str, options: ConsumerOptions) -> None:
        self._consumer = KafkaConsumer(
            *options.topics, bootstrap_servers=bootstrap, group_id=options.group,
            auto_offset_reset="earliest", enable_auto_commit=False,
            session_timeout_ms=6000, heartbeat_interval_ms=500,
            fetch_max_wait_ms=options.fetch_max_wait_ms, fetch_min_bytes=options.fetch_min_bytes,
            request_timeout_ms=max(30_000, options.fetch_max_wait_ms + 10_000),
        )  # fmt: skip

    def poll(self, seconds: float) -> list[Message]:
        batches = self._consumer.poll(timeout_ms=int(seconds * 1000))
        return [Message(r.partition, r.offset, r.value) for rs in batches.values() for r in rs]

    def assign(self, topic: str, partition: int, offset: int) -> None:
        tp = KpTopicPartition(topic, partition)
        self._consumer.assign([tp])
        self._consumer.seek(tp, offset)

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

    def commit(self, topic: str, offsets: dict[int, int]) -> None:
        self._consumer.commit(
            {KpTopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()}
        )

    def committed(self, topic: str, partition: int) -> int | None:
        offset: int | None = self._consumer.committed(KpTopicPartition(topic, partition))
        return offset

    def close(self) -> None:
        self._consumer.close()


class KafkaPython:
    name = "kafka-python"

    def producer(self, bootstrap: str) -> ClientProducer:
        return _KpProducer(bootstrap)

    def consumer(self, bootstrap: str, options: ConsumerOptions) -> ClientConsumer:
        return _KpConsumer(bootstrap, options)


# -- aiokafka -----------------------------------------------------------------------------------


class _Loop:
    """An asyncio event loop in a daemon thread: aiokafka's clients run there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, _T], timeout: float = 90) -> _T:
        future: Future[_T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    def call(self, function: Callable[[], _T]) -> _T:
        """``function()`` run on the loop (aiokafka's synchronous methods expect it)."""

        async def call() -> _T:
            return function()

        return self.run(call())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class _AioProducer:
    def __init__(self, loop: _Loop, bootstrap: str) -> None:
        self._loop = loop

        async def start() -> AIOKafkaProducer:
            producer = AIOKafkaProducer(
                bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                request_timeout_ms=30_000, linger_ms=5,
            )  # fmt: skip
            await producer.start()
            return producer

        self._producer = loop.run(start())

    def send(self, topic: str, values: Sequence[bytes], partition: int = 0) -> list[int]:
        async def send_all() -> list[int]:
            futures = [await self._producer.send(topic, v, partition=partition) for v in values]
            return [(await f).offset for f in futures]

        return self._loop.run(send_all())

    def close(self) -> None:
        self._loop.run(self._producer.stop())


class _AioConsumer:
    def __init__(self, loop: _Loop, bootstrap: str, options: ConsumerOptions) -> None:
        self._loop = loop

        async def start() -> AIOKafkaConsumer:
            consumer = AIOKafkaConsumer(
                *options.topics, bootstrap_servers=bootstrap, group_id=options.group,
                auto_offset_reset="earliest", enable_auto_commit=False,
                session_timeout_ms=6000, heartbeat_interval_ms=500,
                fetch_max_wait_ms=options.fetch_max_wait_ms,
                fetch_min_bytes=options.fetch_min_bytes,
                request_timeout_ms=max(40_000, options.fetch_max_wait_ms + 10_000),
            )  # fmt: skip
            await consumer.start()
            return consumer

        self._consumer = loop.run(start())

    def poll(self, seconds: float) -> list[Message]:
        batches = self._loop.run(self._consumer.getmany(timeout_ms=int(seconds * 1000)))
        return [Message(r.partition, r.offset, r.value) for rs in batches.values() for r in rs]

    def assign(self, topic: str, partition: int, offset: int) -> None:
        tp = AioTopicPartition(topic, partition)

        def assign() -> None:
            self._consumer.assign([tp])
            self._consumer.seek(tp, offset)

        self._loop.call(assign)

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self._loop.call(self._consumer.assignment)}

    def commit(self, topic: str, offsets: dict[int, int]) -> None:
        self._loop.run(
            self._consumer.commit({AioTopicPartition(topic, p): o for p, o in offsets.items()})
        )

    def committed(self, topic: str, partition: int) -> int | None:
        offset: int | None = self._loop.run(
            self._consumer.committed(AioTopicPartition(topic, partition))
        )
        return offset

    def close(self) -> None:
        self._loop.run(self._consumer.stop())


class Aiokafka:
    """aiokafka's clients on one event loop thread (made on first use, stopped by
    :meth:`close`)."""

    name = "aiokafka"

    def __init__(self) -> None:
        self._loop: _Loop | None = None

    def _running(self) -> _Loop:
        if self._loop is None:
            self._loop = _Loop()
        return self._loop

    def producer(self, bootstrap: str) -> ClientProducer:
        return _AioProducer(self._running(), bootstrap)

    def consumer(self, bootstrap: str, options: ConsumerOptions) -> ClientConsumer:
        return _AioConsumer(self._running(), bootstrap, options)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None


# -- confluent-kafka (librdkafka) ---------------------------------------------------------------


class _CkProducer:
    def __init__(self, bootstrap: str) -> None:
        self._producer = CkProducer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
             "linger.ms": 5, "message.timeout.ms": 60_000, "retry.backoff.ms": 50}
        )  # fmt: skip

    def send(self, topic: str, values: Sequence[bytes], partition: int = 0) -> list[int]:
        offsets: dict[int, int] = {}
        errors: list[KafkaError] = []

        def report(index: int, error: KafkaError | None, message: Any) -> None:
            if error is not None:
                errors.append(error)
            else:
                offsets[index] = message.offset()

        for index, value in enumerate(values):
            self._producer.produce(
                topic, value, partition=partition,
                on_delivery=lambda e, m, i=index: report(i, e, m),
            )  # fmt: skip
        remaining = self._producer.flush(60)
        assert remaining == 0 and errors == [], (remaining, errors)
        return [offsets[i] for i in range(len(values))]

    def close(self) -> None:
        self._producer.flush(10)


class _CkConsumer:
    def __init__(self, bootstrap: str, options: ConsumerOptions) -> None:
        self._consumer = CkConsumer(
            {"bootstrap.servers": bootstrap, "group.id": options.group or "unused",
             "auto.offset.reset": "earliest", "enable.auto.commit": False,
             "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
             "fetch.wait.max.ms": options.fetch_max_wait_ms,
             "fetch.min.bytes": options.fetch_min_bytes}
        )  # fmt: skip
        if options.topics:
            self._consumer.subscribe(list(options.topics))

    def poll(self, seconds: float) -> list[Message]:
        messages = self._consumer.consume(num_messages=1000, timeout=seconds)
        return [
            Message(m.partition(), m.offset(), m.value()) for m in messages if m.error() is None
        ]

    def assign(self, topic: str, partition: int, offset: int) -> None:
        self._consumer.assign([CkTopicPartition(topic, partition, offset)])

    def assignment(self) -> set[int]:
        return {tp.partition for tp in self._consumer.assignment()}

    def commit(self, topic: str, offsets: dict[int, int]) -> None:
        self._consumer.commit(
            offsets=[CkTopicPartition(topic, p, o) for p, o in offsets.items()],
            asynchronous=False,
        )

    def committed(self, topic: str, partition: int) -> int | None:
        [found] = self._consumer.committed([CkTopicPartition(topic, partition)], timeout=30)
        offset: int = found.offset
        return None if offset < 0 else offset

    def close(self) -> None:
        self._consumer.close()


class ConfluentKafka:
    name = "confluent-kafka"

    def producer(self, bootstrap: str) -> ClientProducer:
        return _CkProducer(bootstrap)

    def consumer(self, bootstrap: str, options: ConsumerOptions) -> ClientConsumer:
        return _CkConsumer(bootstrap, options)


CLIENTS = {"kafka-python": KafkaPython, "aiokafka": Aiokafka, "confluent-kafka": ConfluentKafka}


def poll_until(
    consumers: Sequence[ClientConsumer], done: Callable[[list[Message]], bool], seconds: float = 60
) -> list[Message]:
    """Poll every consumer in turn until ``done(everything read so far)``; returns what they
    read. Fails after ``seconds`` (a bound for a loaded machine, not a measurement)."""
    read: list[Message] = []
    deadline = time.monotonic() + seconds
    while not done(read):
        assert time.monotonic() < deadline, f"the clients did not get there in time: {read}"
        for consumer in consumers:
            read += consumer.poll(0.2)
    return read

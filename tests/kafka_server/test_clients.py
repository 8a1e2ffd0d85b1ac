"""Real Kafka clients against the server: kafka-python, aiokafka and confluent-kafka.

Each test starts a cluster on loopback ephemeral ports (the ``kafka_server`` fixture of
:mod:`kafka_server.pytest_plugin`, or a :class:`ServerThread`) and stops it at the end.
Consumers read with manual assignment and commit under a group id, or subscribe and join a
consumer group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup through the group coordinator).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KpTopicPartition

from kafka_server import ServerThread, TopicSpec
from replica.types import TopicPartition

pytest_plugins = ["kafka_server.pytest_plugin"]


def _topic() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


# -- kafka-python -------------------------------------------------------------------------------


def test_kafka_python_produce_consume_commit(kafka_bootstrap: str) -> None:
    topic = _topic()
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    offsets = [producer.send(topic, b"m%d" % i, key=b"k").get(timeout=10).offset for i in range(5)]
    producer.close()
    assert offsets == [0, 1, 2, 3, 4]

    tp = KpTopicPartition(topic, 0)
    consumer = KafkaConsumer(
        bootstrap_servers=kafka_bootstrap, group_id="g1", enable_auto_commit=False,
        auto_offset_reset="earliest",
    )  # fmt: skip
    consumer.assign([tp])
    values = []
    deadline = time.monotonic() + 10
    while len(values) < 5 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            values += [r.value for r in records]
    assert values == [b"m%d" % i for i in range(5)]
    consumer.commit({tp: OffsetAndMetadata(5, "done", -1)})
    consumer.close()

    again = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id="g1")
    assert again.committed(tp) == 5
    again.close()


def test_kafka_python_long_poll(kafka_server: ServerThread) -> None:
    """A fetch with nothing to read waits in the leader's fetch purgatory; records arriving
    complete it (well before its 20 s max wait); with a short max wait it answers empty."""
    topic = _topic()
    bootstrap = kafka_server.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    producer.send(topic, b"first").get(timeout=10)
    tp = KpTopicPartition(topic, 0)
    leader = kafka_server.call(lambda: kafka_server.server.cluster.leader(TopicPartition(topic, 0)))
    purgatory = kafka_server.server.cluster.broker(leader).replica_manager.fetch_purgatory

    def waiting() -> int:
        # Only fetches watching this partition: the server is shared with other tests, whose
        # clients' fetches may wait at the same broker.
        watched = TopicPartition(topic, 0)
        return kafka_server.call(
            lambda: sum(not op.is_completed for op in purgatory.watchers(watched))
        )

    short = KafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=300)
    short.assign([tp])
    short.seek(tp, 1)
    assert short.poll(timeout_ms=1500) == {}  # empty answers at max wait, no error
    short.close()

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, fetch_min_bytes=1, fetch_max_wait_ms=20_000,
        request_timeout_ms=60_000,
    )  # fmt: skip
    consumer.assign([tp])
    consumer.seek(tp, 1)
    assert consumer.poll(timeout_ms=200) == {}
    deadline = time.monotonic() + 10
    while waiting() != 3 and time.monotonic() < deadline:
        consumer.poll(timeout_ms=50)
    assert waiting() == 3  # the two followers' fetches and the consumer's are parked
    sent = time.monotonic()
    producer.send(topic, b"second").get(timeout=10)
    got: list[bytes] = []
    while not got and time.monotonic() - sent < 15:  # < the 20 s max wait: completed, not expired
        got = [r.value for rs in consumer.poll(timeout_ms=100).values() for r in rs]
    assert got == [b"second"]
    consumer.close()
    producer.close()


# -- aiokafka -----------------------------------------------------------------------------------


def test_aiokafka_produce_consume_commit(kafka_bootstrap: str) -> None:
    topic = _topic()

    async def main() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        await producer.start()
        try:
            metadata = [await producer.send_and_wait(topic, b"a%d" % i) for i in range(3)]
        finally:
            await producer.stop()
        assert [m.offset for m in metadata] == [0, 1, 2]
        consumer = AIOKafkaConsumer(
            bootstrap_servers=kafka_bootstrap, group_id="ag", enable_auto_commit=False,
            auto_offset_reset="earliest",
        )  # fmt: skip
        await consumer.start()
        try:
            tp = AioTopicPartition(topic, 0)
            consumer.assign([tp])
            values = []
            while len(values) < 3:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 10)
                values += [r.value for rs in batch.values() for r in rs]
            assert values == [b"a0", b"a1", b"a2"]
            await consumer.commit({tp: 3})
            assert await consumer.committed(tp) == 3
        finally:
            await consumer.stop()

    asyncio.run(main())


# -- confluent-kafka (librdkafka) ---------------------------------------------------------------


def _delivered(producer: Producer, sends: list[tuple[str, bytes]], **options: object) -> list[int]:
    offsets: list[int] = []
    errors: list[KafkaError] = []

    def report(error: KafkaError | None, message: object) -> None:
        if error is not None:
            errors.append(error)
        else:
            offsets.append(message.offset())  # type: ignore[attr-defined]

    for topic, value in sends:
        producer.produce(topic, value, on_delivery=report, **options)
    assert producer.flush(15) == 0
    assert errors == []
    return offsets


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka_produce_consume_commit(kafka_bootstrap: str, compression: str) -> None:
    topic = _topic()
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "acks": "all", "compression.type": compression,
         "linger.ms": 5}
    )  # fmt: skip
    offsets = _delivered(producer, [(topic, b"c%d" % i * 20) for i in range(20)])
    assert sorted(offsets) == list(range(20))

    consumer = Consumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": "cg", "enable.auto.commit": False,
         "auto.offset.reset": "earliest"}
    )  # fmt: skip
    consumer.assign([CkTopicPartition(topic, 0, 0)])
    values = []
    deadline = time.monotonic() + 15
    while len(values) < 20 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    assert values == [b"c%d" % i * 20 for i in range(20)]
    consumer.commit(offsets=[CkTopicPartition(topic, 0, 20)], asynchronous=False)
    committed = consumer.committed([CkTopicPartition(topic, 0)], timeout=10)
    assert committed[0].offset == 20
    consumer.close()


def test_failover_loses_nothing_acknowledged() -> None:
    """Stop the leader of a 3-replica partition while producing with acks=all: every
    acknowledged record is still there, read back from the new leader."""
    topic = "failover"
    with ServerThread(brokers=3, topics=[TopicSpec(topic, 1, 3)]) as server:
        producer = Producer(
            {"bootstrap.servers": server.bootstrap_servers, "acks": "all",
             "message.timeout.ms": 30000, "retries": 1000, "retry.backoff.ms": 50,
             "enable.idempotence": False}
        )  # fmt: skip
        acked: list[bytes] = []

        def report(error: KafkaError | None, message: object) -> None:
            if error is None:
                acked.append(message.value())  # type: ignore[attr-defined]

        for i in range(50):
            producer.produce(topic, b"before-%d" % i, on_delivery=report)
        assert producer.flush(15) == 0
        old_leader = server.call(lambda: server.server.cluster.leader(TopicPartition(topic, 0)))
        server.call(lambda: server.server.stop_broker(old_leader))
        for i in range(50):
            producer.produce(topic, b"after-%d" % i, on_delivery=report)
        assert producer.flush(30) == 0
        new_leader = server.call(lambda: server.server.cluster.leader(TopicPartition(topic, 0)))
        assert new_leader not in (-1, old_leader)
        assert len(acked) == 100

        consumer = Consumer(
            {"bootstrap.servers": server.bootstrap_servers, "group.id": "f",
             "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )  # fmt: skip
        consumer.assign([CkTopicPartition(topic, 0, 0)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 20
        while not set(acked) <= set(seen) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(message.value())
        consumer.close()
        assert set(acked) <= set(seen)


def test_kafka_python_failover_and_coordinator_move() -> None:
    """Stopping the broker that leads both a topic and the group's offsets partition: the
    producer fails over with nothing acknowledged lost, and the offset committed before the
    coordinator moved is fetched after it."""
    with ServerThread(brokers=3, topics=[TopicSpec("moving", 1, 3)]) as server:
        bootstrap = server.bootstrap_servers
        cluster = server.server.cluster
        old_leader = server.call(lambda: cluster.leader(TopicPartition("moving", 0)))
        group = next(
            f"g{i}"
            for i in range(1000)
            if server.call(lambda i=i: cluster.coordinator(f"g{i}")) == old_leader
        )
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=20)
        acked = [producer.send("moving", b"a%d" % i).get(timeout=10).offset for i in range(10)]
        tp = KpTopicPartition("moving", 0)
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
        )
        consumer.commit({tp: OffsetAndMetadata(7, "", -1)})
        consumer.close()

        server.call(lambda: server.server.stop_broker(old_leader))
        assert server.call(lambda: cluster.coordinator(group)) not in (-1, old_leader)
        acked += [producer.send("moving", b"b%d" % i).get(timeout=30).offset for i in range(10)]
        producer.close()
        assert acked == list(range(20))

        after = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        assert after.committed(tp) == 7
        after.assign([tp])
        after.seek(tp, 0)
        values: list[bytes] = []
        deadline = time.monotonic() + 15
        while len(values) < 20 and time.monotonic() < deadline:
            values += [r.value for rs in after.poll(timeout_ms=200).values() for r in rs]
        after.close()
        assert values == [b"a%d" % i for i in range(10)] + [b"b%d" % i for i in range(10)]


# -- consumer groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) -------------------------------


def _poll_until(consumers: list[Any], done: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the group did not settle"
        for consumer in consumers:
            consumer.poll(timeout_ms=100)


def test_kafka_python_group_rebalances_on_join_and_leave() -> None:
    with ServerThread(brokers=3, topics=[TopicSpec("grouped", 4, 3)]) as server:
        bootstrap = server.bootstrap_servers
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for i in range(20):
            producer.send("grouped", b"%d" % i, partition=i % 4)
        producer.flush()
        producer.close()
        options = {"bootstrap_servers": bootstrap, "group_id": "members",
                   "auto_offset_reset": "earliest", "enable_auto_commit": False}  # fmt: skip
        first = KafkaConsumer("grouped", **options)
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 20 and time.monotonic() < deadline:
            values += [r.value for rs in first.poll(timeout_ms=200).values() for r in rs]
        assert sorted(values) == sorted(b"%d" % i for i in range(20))
        assert {tp.partition for tp in first.assignment()} == {0, 1, 2, 3}
        first.commit()

        second = KafkaConsumer("grouped", **options)
        _poll_until(
            [first, second],
            lambda: len(first.assignment()) == 2 and len(second.assignment()) == 2,
        )
        both = {tp.partition for tp in first.assignment() | second.assignment()}
        assert both == {0, 1, 2, 3}
        # the second member starts from the first one's commits: nothing is read again
        assert all(second.position(tp) == 5 for tp in second.assignment())

        second.close()  # LeaveGroup: its partitions move back to the first member
        _poll_until([first], lambda: len(first.assignment()) == 4)
        first.close()


def test_aiokafka_group_consume_and_commit(kafka_bootstrap: str) -> None:
    topic = _topic()

    async def main() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, b"g%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=kafka_bootstrap, group_id="aio-group",
            enable_auto_commit=False, auto_offset_reset="earliest",
        )  # fmt: skip
        await consumer.start()
        try:
            values: list[bytes] = []
            while len(values) < 5:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 30)
                values += [r.value for rs in batch.values() for r in rs]
            assert values == [b"g%d" % i for i in range(5)]
            await consumer.commit()
            assert await consumer.committed(AioTopicPartition(topic, 0)) == 5
        finally:
            await consumer.stop()

    asyncio.run(main())


def test_confluent_kafka_group_consume_and_commit(kafka_bootstrap: str) -> None:
    topic = _topic()
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all"})
    assert sorted(_delivered(producer, [(topic, b"s%d" % i) for i in range(5)])) == list(range(5))
    consumer = Consumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": "rd-group",
         "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    )  # fmt: skip
    consumer.subscribe([topic])
    values = []
    deadline = time.monotonic() + 30
    while len(values) < 5 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    assert values == [b"s%d" % i for i in range(5)]
    consumer.commit(asynchronous=False)
    assert consumer.committed([CkTopicPartition(topic, 0)], timeout=10)[0].offset == 5
    consumer.close()

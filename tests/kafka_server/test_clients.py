"""Real Kafka clients against the server, reading by assignment: kafka-python, aiokafka and
confluent-kafka (with each compression codec librdkafka writes).

Each test gets a cluster on loopback ephemeral ports from the ``kafka_bootstrap`` fixture of
:mod:`kafka_server.pytest_plugin` (as a user's test would) and commits under a group id
without joining the group. The scenarios of issue 11 (groups, rebalances, long polls,
fail-over, coordinator moves) run for every client in ``test_client_matrix.py``.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KpTopicPartition

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

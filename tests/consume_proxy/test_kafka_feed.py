"""KafkaFeed against the project's wire-protocol Kafka, in process: flow control (a paused
partition resumes from exactly where the proxy stands) and an eager assignor (a partition that
stays through a rebalance keeps its pending records; one that moves is served by its new owner
from the committed offset)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
import trio
from confluent_kafka import Producer

from apis.config import KafkaConfig
from consume_proxy import ConsumeProxy, Record, RecordState
from consume_proxy.kafka_feed import KafkaFeed
from coordinator.config import GroupConfig
from kafka_server import ServerThread
from kafka_server.server import TopicSpec
from purgatory.trio_reaper import open_trio_reaper, trio_clock
from replica.types import TopicPartition


@pytest.fixture
def kafka() -> Iterator[ServerThread]:
    group = GroupConfig(group_min_session_timeout_ms=500, group_initial_rebalance_delay_ms=0)
    topics = [TopicSpec("one", 1, 1), TopicSpec("two", 2, 1)]
    with ServerThread(brokers=1, topics=topics, config=KafkaConfig(group=group)) as server:
        yield server


def produce(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(count):
        producer.produce(topic, b"%d" % index, partition=index % partitions)
    assert producer.flush(10) == 0


@asynccontextmanager
async def feeding(bootstrap: str, topic: str, **options: object) -> AsyncIterator[KafkaFeed]:
    clock = trio_clock()
    proxy = ConsumeProxy(lease_duration=60_000)
    config = {"session.timeout.ms": 1000, "heartbeat.interval.ms": 200}
    config.update(options.pop("config", {}))  # type: ignore[call-overload]
    feed = KafkaFeed(
        proxy, clock, bootstrap=bootstrap, topic=topic, group_id="g", config=config, **options
    )  # type: ignore[arg-type]
    async with open_trio_reaper(proxy.purgatory, clock), trio.open_nursery() as nursery:
        await nursery.start(feed.run)
        yield feed
        nursery.cancel_scope.cancel()


async def read(feed: KafkaFeed) -> Record | None:
    got: list[Record | None] = []
    done = trio.Event()
    feed.proxy.advance(feed.clock())
    feed.proxy.read(2000, lambda record: (got.append(record), done.set()))
    await done.wait()
    return got[0]


async def until_served(feed: KafkaFeed, count: int) -> None:
    with trio.fail_after(20):
        while len(feed.proxy.served) != count:
            await trio.sleep(0.05)


async def test_a_paused_partition_resumes_where_the_proxy_stands(kafka: ServerThread) -> None:
    produce(kafka.bootstrap_servers, "one", 10)
    tp = TopicPartition("one", 0)
    async with feeding(kafka.bootstrap_servers, "one", window=4) as feed:
        await until_served(feed, 1)
        first = await read(feed)
        assert first is not None
        with trio.fail_after(10):
            while feed.proxy.partition(tp).end_offset < 10:
                await trio.sleep(0.05)
        # Ten records held, the window is four: fetching is paused, new records wait in Kafka.
        produce(kafka.bootstrap_servers, "one", 20)
        await trio.sleep(1)
        assert feed.proxy.partition(tp).end_offset == 10
        seen = [first.offset]
        feed.proxy.acknowledge(tp, first.offset)
        with trio.fail_after(30):
            while len(seen) < 30:
                record = await read(feed)
                if record is not None:
                    seen.append(record.offset)
                    feed.proxy.acknowledge(tp, record.offset)
        assert seen == list(range(30))  # resumed from the proxy's end: no gap, no repeat
        with trio.fail_after(5):
            while feed.high_watermarks.get(tp) != 30 or feed.proxy.partition(tp).start_offset != 30:
                await trio.sleep(0.05)


async def test_eager_rebalance_keeps_what_stays_and_hands_over_what_moves(
    kafka: ServerThread,
) -> None:
    produce(kafka.bootstrap_servers, "two", 10, partitions=2)
    eager = {"config": {"partition.assignment.strategy": "range"}}
    async with feeding(kafka.bootstrap_servers, "two", **eager) as first:
        await until_served(first, 2)
        pending = [await read(first) for _ in range(4)]
        assert all(record is not None for record in pending)
        async with feeding(kafka.bootstrap_servers, "two", **eager) as second:
            await until_served(first, 1)
            await until_served(second, 1)
            (kept,) = first.proxy.served
            (moved,) = second.proxy.served
            for record in pending:
                assert record is not None
                if record.partition == kept.partition:  # still pending, lease and all
                    assert first.proxy.state(kept, record.offset) is RecordState.PENDING
            # The moved partition starts over from its committed offset (nothing acked): its
            # records pending at the first server are handed out again by the second.
            assert second.proxy.partition(moved).start_offset == 0
            again = await read(second)
            assert again is not None and (again.partition, again.offset) == (moved.partition, 0)

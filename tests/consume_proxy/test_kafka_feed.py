"""KafkaFeed against the project's wire-protocol Kafka, in process: flow control (a paused
partition resumes from exactly where the proxy stands), an eager assignor (a partition that
stays through a rebalance keeps its pending records; one that moves is caught up by its new
owner from the state log, leases and all), requests forwarded from a server that does not own
the partition, dead letters produced before the commit passes them, and a server that still
believes it owns a partition fenced by the claim of another."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from itertools import count

import pytest
import trio
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaPartition

from apis.config import KafkaConfig
from consume_proxy import ConsumeProxy, LogEntryKind, Record, RecordState, decode_entry
from consume_proxy.kafka_feed import KafkaFeed
from coordinator.config import GroupConfig
from kafka_server import ServerThread
from kafka_server.server import TopicSpec
from purgatory.trio_reaper import open_trio_reaper, trio_clock
from replica.types import TopicPartition

_WRITERS = count(1)


@pytest.fixture
def kafka() -> Iterator[ServerThread]:
    group = GroupConfig(group_min_session_timeout_ms=500, group_initial_rebalance_delay_ms=0)
    topics = [
        TopicSpec("one", 1, 1),
        TopicSpec("one.state", 1, 1),
        TopicSpec("two", 2, 1),
        TopicSpec("two.state", 2, 1),
        TopicSpec("two.dead", 2, 1),
    ]
    with ServerThread(brokers=1, topics=topics, config=KafkaConfig(group=group)) as server:
        yield server


def produce(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(count):
        producer.produce(topic, b"%d" % index, partition=index % partitions)
    assert producer.flush(10) == 0


@asynccontextmanager
async def feeding(
    bootstrap: str,
    topic: str,
    *,
    group: str = "g",
    config: dict[str, str | int | float | bool] | None = None,
    limit: int = 5,
    window: int = 10_000,
    dead_letter_topic: str | None = None,
    reclaim_after_s: float | None = None,
    log_topic: str | None = None,
) -> AsyncIterator[KafkaFeed]:
    clock = trio_clock()
    proxy = ConsumeProxy(lease_duration=60_000, delivery_count_limit=limit, writer=next(_WRITERS))
    settings = {"consumer.session.timeout.ms": 1000, "consumer.heartbeat.interval.ms": 200}
    feed = KafkaFeed(
        proxy,
        clock,
        bootstrap=bootstrap,
        topic=topic,
        group_id=group,
        config={**settings, **(config or {})},
        log_topic=log_topic or f"{topic}.state",
        dead_letter_topic=dead_letter_topic,
        window=window,
        reclaim_after_s=reclaim_after_s,
    )
    async with open_trio_reaper(proxy.purgatory, clock), trio.open_nursery() as nursery:
        await nursery.start(feed.run)
        yield feed
        nursery.cancel_scope.cancel()


async def read(feed: KafkaFeed) -> Record | None:
    got: list[Record | None] = []
    done = trio.Event()

    def complete(record: Record | None) -> None:
        got.append(record)
        done.set()

    feed.proxy.advance(feed.clock())
    feed.proxy.read(2000, complete)
    await done.wait()
    return got[0]


async def until(condition: object, seconds: float = 20) -> None:
    assert callable(condition)
    with trio.fail_after(seconds):
        while not condition():
            await trio.sleep(0.05)


async def until_serving(feed: KafkaFeed, count: int) -> None:
    proxy = feed.proxy
    await until(lambda: len(proxy.served) == count and not proxy.catching_up())


def log_entries(bootstrap: str, topic: str, partition: int) -> list[object]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "inspector"})
    reader.assign([KafkaPartition(topic, partition, 0)])
    entries = []
    while (message := reader.poll(1.0)) is not None:
        entries.append(decode_entry(message.key(), message.value(), message.offset()))
    reader.close()
    return entries


async def test_a_paused_partition_resumes_where_the_proxy_stands(kafka: ServerThread) -> None:
    produce(kafka.bootstrap_servers, "one", 10)
    tp = TopicPartition("one", 0)
    async with feeding(kafka.bootstrap_servers, "one", window=4) as feed:
        await until_serving(feed, 1)
        first = await read(feed)
        assert first is not None
        await until(lambda: feed.proxy.partition(tp).end_offset >= 10, 10)
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
        share = feed.proxy.partition(tp)
        await until(lambda: feed.high_watermarks.get(tp) == 30 and share.start_offset == 30, 5)
    # The state log holds the claim, then each hand-out and acknowledgement, in order.
    entries = log_entries(kafka.bootstrap_servers, "one.state", 0)
    kinds = [entry.kind for entry in entries]  # type: ignore[attr-defined]
    assert kinds[0] is LogEntryKind.CLAIM
    assert kinds[1:] == [LogEntryKind.PENDING, LogEntryKind.ACKNOWLEDGED] * 30


async def test_eager_rebalance_keeps_what_stays_and_the_new_owner_keeps_the_leases(
    kafka: ServerThread,
) -> None:
    produce(kafka.bootstrap_servers, "two", 10, partitions=2)
    eager = {"consumer.partition.assignment.strategy": "range"}
    async with feeding(kafka.bootstrap_servers, "two", config=eager) as first:
        await until_serving(first, 2)
        pending = [await read(first) for _ in range(4)]
        assert all(record is not None for record in pending)
        await trio.sleep(0.5)  # the Pending entries reach the log
        async with feeding(kafka.bootstrap_servers, "two", config=eager) as second:
            await until_serving(first, 1)
            await until_serving(second, 1)
            (kept,) = first.proxy.served
            (moved,) = second.proxy.served
            for record in pending:
                assert record is not None
                tp = TopicPartition("two", record.partition)
                owner = first if tp == kept else second
                # Still pending, at the new owner too: it read the Pending entry's lease.
                assert owner.proxy.state(tp, record.offset) is RecordState.PENDING
                assert owner.proxy.partition(tp).lease_deadline(record.offset) == (
                    record.lease_deadline
                )
            again = await read(second)
            assert again is not None and (again.partition, again.offset) == (moved.partition, 2)


async def test_a_rebalance_logs_what_moved_and_nothing_for_an_empty_assignment(
    kafka: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "consume_proxy.kafka_feed")
    async with feeding(kafka.bootstrap_servers, "two") as first:
        await until_serving(first, 2)
        async with feeding(kafka.bootstrap_servers, "two") as second:
            await until_serving(first, 1)
            await until_serving(second, 1)
            (moved,) = second.proxy.served
            # cooperative-sticky: the first server loses one partition and gains none
            messages = [record.getMessage() for record in caplog.records]
    assert f"revoked {moved}" in messages
    assert messages.count(f"assigned {moved} from 0") == 1  # at the second server
    assert "assigned " not in messages


async def test_an_acknowledgement_at_any_server_reaches_the_owner(kafka: ServerThread) -> None:
    produce(kafka.bootstrap_servers, "two", 4, partitions=2)
    async with (
        feeding(kafka.bootstrap_servers, "two") as a,
        feeding(kafka.bootstrap_servers, "two") as b,
    ):
        await until_serving(a, 1)
        await until_serving(b, 1)
        await until(lambda: a.partitions == 2 and b.partitions == 2)
        record = await read(a)
        assert record is not None
        tp = TopicPartition("two", record.partition)
        # The reader acknowledges at b, which does not serve the partition: b forwards it.
        b.proxy.forward(LogEntryKind.ACKNOWLEDGE_REQUEST, tp, record.offset, 1)
        await until(lambda: a.proxy.partition(tp).start_offset == record.offset + 1)
        assert (a.proxy.counts.applied, b.proxy.counts.forwarded) == (1, 1)


async def test_archived_records_reach_the_dead_letter_topic(kafka: ServerThread) -> None:
    produce(kafka.bootstrap_servers, "two", 2, partitions=2)
    async with feeding(
        kafka.bootstrap_servers, "two", limit=1, dead_letter_topic="two.dead"
    ) as feed:
        await until_serving(feed, 2)
        record = await read(feed)
        assert record is not None
        tp = TopicPartition("two", record.partition)
        feed.proxy.reject(tp, record.offset)
        await until(lambda: feed.proxy.partition(tp).start_offset == 1)
    reader = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "inspector"})
    reader.assign([KafkaPartition("two.dead", record.partition, 0)])
    letter = reader.poll(5.0)
    reader.close()
    assert letter is not None and letter.value() == b"%d" % record.partition
    headers = dict(letter.headers() or [])
    assert headers["consume_proxy.offset"] == b"0"
    assert headers["consume_proxy.delivery_count"] == b"1"


async def test_a_server_that_still_believes_it_owns_a_partition_is_fenced(
    kafka: ServerThread,
) -> None:
    produce(kafka.bootstrap_servers, "one", 4)
    tp = TopicPartition("one", 0)
    # Two groups: each server is sure it owns one-0, as a server whose session ended unseen
    # would be; the log is the one they share.
    async with feeding(kafka.bootstrap_servers, "one", group="old", reclaim_after_s=3) as old:
        await until_serving(old, 1)
        held = await read(old)
        assert held is not None
        async with feeding(kafka.bootstrap_servers, "one", group="new") as new:
            await until_serving(new, 1)  # it claimed one-0 and caught up
            await until(lambda: old.proxy.served == [])  # the old one read the claim
            assert old.proxy.counts.fenced == 1
            # The new owner read the old one's Pending entry: the record keeps its lease.
            assert new.proxy.state(tp, held.offset) is RecordState.PENDING
            following = await read(new)
            assert following is not None and following.offset == held.offset + 1
        # The new server is gone; its group still gives one-0 to the old one, which claims it
        # again after a while and catches up: the new server's hand-out keeps its lease too.
        await until_serving(old, 1)
        await until(lambda: old.proxy.partition(tp).end_offset == 4)
        assert old.proxy.state(tp, following.offset) is RecordState.PENDING
        again = await read(old)
        assert again is not None and again.offset == following.offset + 1


async def test_a_partition_whose_log_cannot_be_read_waits_unserved_and_the_server_lives_on(
    kafka: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    produce(kafka.bootstrap_servers, "one", 2)
    async with feeding(kafka.bootstrap_servers, "one", log_topic="no.such.topic") as feed:
        await until(lambda: "cannot" in caplog.text)  # it says so, and tries again later
        await until(lambda: "cannot claim" in caplog.text)  # the retries, a second later
        assert feed.proxy.served == []


async def test_stopping_while_kafka_is_unreachable_says_what_was_not_produced(
    kafka: ServerThread, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("consume_proxy.kafka_feed._CLOSE_TIMEOUT_S", 1.0)  # the test's patience
    monkeypatch.setattr("consume_proxy.kafka_feed._FLUSH_S", 0.2)
    produce(kafka.bootstrap_servers, "one", 1)
    async with feeding(kafka.bootstrap_servers, "one") as feed:
        await until_serving(feed, 1)
        record = await read(feed)
        assert record is not None
        await until(lambda: not feed.feed.unproduced())  # its Pending entry is in the log
        await trio.to_thread.run_sync(kafka.call, lambda: kafka.server.stop_broker(0))
        feed.proxy.acknowledge(TopicPartition("one", 0), 0)  # its entry cannot be produced
    assert "stopped with 1 record not produced" in caplog.text

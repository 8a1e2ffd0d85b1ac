"""Every scenario of issue 11, once per real client (kafka-python, aiokafka, confluent-kafka).

Each test runs a fresh three-broker :class:`~kafka_server.ServerThread` on loopback and drives
the client through :mod:`tests.kafka_server.clients`; what the server did is read from the
cluster itself (through ``ServerThread.call``). The groups' initial rebalance delay is 100 ms
(Kafka's test configurations use 0; the default, 3 s, would only make the tests slower) and
the consumers heartbeat every 500 ms with 6 s sessions.

Scenario -> test (each test covers its rows, for every client):

* produce with acks=all and get offsets back; consume from the beginning in a group and
  commit: ``test_produce_then_consume_in_a_group_from_the_beginning_and_commit``
* a second member joins and partitions rebalance; a member leaves and its partitions move:
  ``test_a_second_member_joins_then_leaves_and_partitions_move``
* a long poll returns when data arrives, or empty at max wait:
  ``test_a_long_poll_returns_when_data_arrives_or_empty_at_max_wait``
* a broker of three stops, the clients fail over, nothing acknowledged is lost; an offset
  committed before a coordinator move is fetched after it:
  ``test_a_stopped_broker_loses_nothing_acknowledged_and_the_group_keeps_its_commits``
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest

from apis import KafkaConfig
from coordinator import GroupConfig
from kafka_server import ServerThread, TopicSpec
from replica import DelayedFetch, TopicPartition
from tests.kafka_server.clients import (
    CLIENTS,
    Client,
    ClientConsumer,
    ConsumerOptions,
    Message,
    poll_until,
)

CONFIG = KafkaConfig(group=GroupConfig(group_initial_rebalance_delay_ms=100))


@pytest.fixture(params=list(CLIENTS))
def client(request: pytest.FixtureRequest) -> Iterator[Client]:
    made = CLIENTS[request.param]()
    yield made
    close = getattr(made, "close", None)
    if close is not None:
        close()


def _server(*topics: TopicSpec) -> ServerThread:
    return ServerThread(brokers=3, topics=topics, config=CONFIG)


def _values(messages: list[Message]) -> list[tuple[int, int, bytes]]:
    return sorted((m.partition, m.offset, m.value) for m in messages)


def test_produce_then_consume_in_a_group_from_the_beginning_and_commit(client: Client) -> None:
    with _server(TopicSpec("orders", 2, 3)) as server:
        bootstrap = server.bootstrap_servers
        producer = client.producer(bootstrap)
        assert producer.send("orders", [b"a%d" % i for i in range(5)], partition=0) == [
            0,
            1,
            2,
            3,
            4,
        ]
        assert producer.send("orders", [b"b%d" % i for i in range(3)], partition=1) == [0, 1, 2]

        member = client.consumer(bootstrap, ConsumerOptions(group="billing", topics=["orders"]))
        read = poll_until([member], lambda read: len(read) >= 8)
        assert _values(read) == [(0, i, b"a%d" % i) for i in range(5)] + [
            (1, i, b"b%d" % i) for i in range(3)
        ]
        assert member.assignment() == {0, 1}
        member.commit("orders", {0: 5, 1: 3})
        assert (member.committed("orders", 0), member.committed("orders", 1)) == (5, 3)
        member.close()

        # The group's next member starts where the group committed: only the new record.
        assert producer.send("orders", [b"late"], partition=0) == [5]
        producer.close()
        successor = client.consumer(bootstrap, ConsumerOptions(group="billing", topics=["orders"]))
        read = poll_until([successor], lambda read: len(read) >= 1)
        read += successor.poll(0.5)
        assert _values(read) == [(0, 5, b"late")]
        successor.close()


def test_a_second_member_joins_then_leaves_and_partitions_move(client: Client) -> None:
    with _server(TopicSpec("grouped", 4, 3)) as server:
        bootstrap = server.bootstrap_servers
        producer = client.producer(bootstrap)
        for partition in range(4):
            producer.send("grouped", [b"%d-%d" % (partition, i) for i in range(5)], partition)
        options = ConsumerOptions(group="members", topics=["grouped"])
        first = client.consumer(bootstrap, options)
        read = poll_until([first], lambda read: len(read) >= 20)
        assert len(_values(read)) == 20 and first.assignment() == {0, 1, 2, 3}
        first.commit("grouped", dict.fromkeys(range(4), 5))

        second = client.consumer(bootstrap, options)
        poll_until(
            [first, second],
            lambda _: len(first.assignment()) == 2 and len(second.assignment()) == 2,
        )
        assert first.assignment() | second.assignment() == {0, 1, 2, 3}
        # Each member reads its own partitions, the second from the group's commits.
        for partition in range(4):
            producer.send("grouped", [b"new-%d" % partition], partition)
        owners = {p: "first" for p in first.assignment()} | {
            p: "second" for p in second.assignment()
        }
        read_by: dict[str, list[Message]] = {"first": [], "second": []}
        deadline = time.monotonic() + 60
        while sum(map(len, read_by.values())) < 4:
            assert time.monotonic() < deadline, read_by
            read_by["first"] += first.poll(0.2)
            read_by["second"] += second.poll(0.2)
        for name, messages in read_by.items():
            assert {m.partition for m in messages} == {p for p, o in owners.items() if o == name}
            assert all(m.offset == 5 and m.value == b"new-%d" % m.partition for m in messages)

        second.close()  # LeaveGroup: its partitions move back to the first member
        poll_until([first], lambda _: first.assignment() == {0, 1, 2, 3})
        first.close()
        producer.close()


def test_a_long_poll_returns_when_data_arrives_or_empty_at_max_wait(client: Client) -> None:
    """A consumer fetch with nothing to read waits in the leader's Fetch purgatory: with a
    short max wait it expires there and the client gets an empty answer (no records, no
    error); with a long one, a record arriving completes it at once."""
    with _server(TopicSpec("polled", 1, 3)) as server:
        bootstrap = server.bootstrap_servers
        tp = TopicPartition("polled", 0)
        producer = client.producer(bootstrap)
        producer.send("polled", [b"first"])
        leader = server.call(lambda: server.server.cluster.leader(tp))
        purgatory = server.server.cluster.broker(leader).replica_manager.fetch_purgatory

        def parked() -> list[DelayedFetch]:
            """The consumers' fetches waiting on the partition (not the followers')."""
            return server.call(
                lambda: [
                    op
                    for op in purgatory.watchers(tp)
                    if not op.is_completed and op.params.replica_id < 0
                ]
            )

        def first_parked(consumer: ClientConsumer) -> DelayedFetch:
            """Poll (reading nothing) until the consumer's fetch waits at the leader."""
            waiting: list[DelayedFetch] = []

            def found(_: list[Message]) -> bool:
                waiting[:] = parked()
                return bool(waiting)

            assert poll_until([consumer], found) == []
            return waiting[0]

        short = client.consumer(bootstrap, ConsumerOptions(fetch_max_wait_ms=300))
        short.assign("polled", 0, 1)
        fetch = first_parked(short)
        assert poll_until([short], lambda _: server.call(lambda: fetch.is_completed)) == []
        assert server.call(lambda: fetch.is_expired)  # answered at its max wait, empty
        short.close()

        patient = client.consumer(bootstrap, ConsumerOptions(fetch_max_wait_ms=20_000))
        patient.assign("polled", 0, 1)
        fetch = first_parked(patient)
        sent = time.monotonic()
        producer.send("polled", [b"second"])
        read = poll_until([patient], lambda read: bool(read))
        assert _values(read) == [(0, 1, b"second")]
        assert server.call(lambda: fetch.is_completed and not fetch.is_expired)
        assert time.monotonic() - sent < 10  # far below the 20 s max wait
        patient.close()
        producer.close()


def test_a_stopped_broker_loses_nothing_acknowledged_and_the_group_keeps_its_commits(
    client: Client,
) -> None:
    """Stop the broker that leads partition 0 and coordinates the group, while a producer
    (acks=all, idempotent) and a group member keep working: every acknowledged record is in
    the new leaders' logs exactly once, the member reads them all, and the offsets it
    committed before the coordinator moved are fetched from the new coordinator."""
    with _server(TopicSpec("moving", 2, 3)) as server:
        bootstrap = server.bootstrap_servers
        cluster = server.server.cluster
        tps = [TopicPartition("moving", p) for p in (0, 1)]
        old = server.call(lambda: cluster.leader(tps[0]))
        group = next(
            f"g{i}"
            for i in range(1000)
            if server.call(lambda i=i: cluster.coordinator(f"g{i}")) == old
        )
        producer = client.producer(bootstrap)
        acked = {
            p: producer.send("moving", [b"before-%d-%d" % (p, i) for i in range(20)], p)
            for p in (0, 1)
        }
        member = client.consumer(bootstrap, ConsumerOptions(group=group, topics=["moving"]))
        read = poll_until([member], lambda read: len(read) >= 40)
        member.commit("moving", {0: 20, 1: 20})

        server.call(lambda: server.server.stop_broker(old))
        assert server.call(lambda: cluster.leader(tps[0])) not in (-1, old)
        assert server.call(lambda: cluster.coordinator(group)) not in (-1, old)
        for p in (0, 1):
            acked[p] += producer.send("moving", [b"after-%d-%d" % (p, i) for i in range(20)], p)
        producer.close()
        assert acked == {0: list(range(40)), 1: list(range(40))}

        read += poll_until([member], lambda more: len(read) + len(more) >= 80)
        assert {(m.partition, m.value) for m in read} == {
            (p, b"%s-%d-%d" % (phase, p, i))
            for p in (0, 1)
            for phase in (b"before", b"after")
            for i in range(20)
        }
        assert (member.committed("moving", 0), member.committed("moving", 1)) == (20, 20)
        member.commit("moving", {0: 40, 1: 40})
        assert member.committed("moving", 0) == 40
        member.close()

        def logged(tp: TopicPartition) -> Counter[bytes]:
            log = cluster.broker(cluster.leader(tp)).replica_manager.partitions[tp].log
            return Counter(r.value for s in log.segments for b in s.batches for r in b.records)

        for tp in tps:
            copies = server.call(lambda tp=tp: logged(tp))
            assert sorted(copies.values()) == [1] * 40  # each acknowledged record once

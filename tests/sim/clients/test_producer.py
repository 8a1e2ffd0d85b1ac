"""The Sarama-style producer against the fake cluster: batching, in-flight bound, retries."""

from __future__ import annotations

import random
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.errors import ClientConfigError
from sim.clients.events import InMemoryRecorder, MessageAcked, MessagesAcked, MessageSent
from sim.clients.partitioner import Partitioner, fnv1a_32
from sim.clients.producer import Producer
from sim.clients.producer_config import ProducerConfig
from sim.clients.records import message_record_size, message_record_sizes
from sim.core.engine import Simulator
from tests.sim.clients.fake_cluster import FakeCluster, Fault, FaultKind

MS = 1000
T0 = TopicPartition("t", 0)


def make(
    config: ProducerConfig, *, partitions: int = 1, brokers: int = 1, **cluster_kwargs: object
) -> tuple[Simulator, FakeCluster, Producer, InMemoryRecorder]:
    sim = Simulator(seed=1)
    cluster = FakeCluster(sim, {"t": partitions}, brokers=brokers, **cluster_kwargs)  # type: ignore[arg-type]
    recorder = InMemoryRecorder()
    producer = Producer(sim, cluster, cluster, config, rng=sim.rng("producer"), recorder=recorder)
    return sim, cluster, producer, recorder


def request_sizes(cluster: FakeCluster) -> list[tuple[int, dict[int, int]]]:
    """(time, {partition: records}) of every produce request, in send order."""
    return [
        (t, {tp.partition: len(records) for tp, records in request.records.items()})
        for t, _, request in cluster.produce_requests()
    ]


def test_count_trigger_sends_full_batches_and_mutes_the_partition() -> None:
    config = ProducerConfig(flush_messages=3, linger_ms=1000, batch_size=1 << 20)
    sim, cluster, producer, recorder = make(config)
    for _ in range(7):
        producer.send("t", None, 10, partition=0)
    assert producer.queued_messages() == 4  # 3 went out at once
    sim.run()
    assert producer.queued_messages() == 0
    sizes = request_sizes(cluster)
    # First batch at once; the second waits for the first's response (partition muted);
    # the last message waits for its linger.
    assert sizes == [(0, {0: 3}), (200, {0: 3}), (1000 * MS, {0: 1})]
    acked = recorder.of_type(MessageAcked)
    assert [a.offset for a in acked] == list(range(7))
    assert all(a.error is Errors.NONE for a in acked)


def test_bytes_trigger_closes_a_batch_when_the_next_message_does_not_fit() -> None:
    # Each record is ~100 bytes + header; batch_size 400 holds 3 of them with the 61-byte header.
    config = ProducerConfig(batch_size=400, linger_ms=1000, max_in_flight_requests_per_connection=5)
    sim, cluster, producer, _ = make(config, partitions=2)
    for _ in range(4):
        producer.send("t", None, 80, partition=0)
    sim.run_until(0)
    assert request_sizes(cluster) == [(0, {0: 3})]
    sim.run()
    assert [s for _, s in request_sizes(cluster)] == [{0: 3}, {0: 1}]


def test_linger_holds_a_lone_message_for_linger_ms() -> None:
    config = ProducerConfig(linger_ms=7)
    sim, cluster, producer, recorder = make(config)
    sim.call_at(1 * MS, lambda: producer.send("t", b"k", 10, partition=0))
    sim.run()
    [(sent_at, _)] = request_sizes(cluster)
    assert sent_at == 8 * MS
    [ack] = recorder.of_type(MessageAcked)
    assert ack.time_us == 8 * MS + 2 * cluster.latency_us


def test_linger_zero_sends_at_once() -> None:
    sim, cluster, producer, _ = make(ProducerConfig(linger_ms=0))
    producer.send("t", None, 10, partition=0)
    sim.run_until(0)
    assert request_sizes(cluster) == [(0, {0: 1})]


def test_a_ready_request_also_carries_the_other_partitions_partial_batches() -> None:
    config = ProducerConfig(flush_messages=2, linger_ms=1000)
    sim, cluster, producer, _ = make(config, partitions=2)
    producer.send("t", None, 10, partition=1)  # partial batch, not ready on its own
    producer.send("t", None, 10, partition=0)
    producer.send("t", None, 10, partition=0)  # p0 full -> request drains p1 too
    sim.run_until(0)
    assert request_sizes(cluster) == [(0, {1: 1, 0: 2})]


def test_max_in_flight_requests_per_broker_is_respected() -> None:
    config = ProducerConfig(linger_ms=0, max_in_flight_requests_per_connection=3)
    sim, cluster, producer, recorder = make(config, partitions=12)
    for p in range(12):
        producer.send("t", None, 10, partition=p)
    sim.run_until(0)
    assert len(cluster.produce_requests()) == 3
    sim.run()
    assert cluster.max_outstanding[0] == 3
    # The nine partitions that waited went out together in one request.
    assert [len(r.records) for _, _, r in cluster.produce_requests()] == [1, 1, 1, 9]
    assert len(recorder.of_type(MessageAcked)) == 12


def test_retries_exhausted_report_the_error_per_message() -> None:
    config = ProducerConfig(linger_ms=0, retry_max=2, retry_backoff_ms=50)
    fault = Fault(FaultKind.REJECT, Errors.NOT_ENOUGH_REPLICAS)
    sim, cluster, producer, recorder = make(config, produce_fault=lambda tp, b: fault)
    ids = [producer.send("t", None, 10, partition=0) for _ in range(3)]
    sim.run()
    acked = recorder.of_type(MessageAcked)
    assert sorted(a.message_id for a in acked) == ids
    assert all(a.error is Errors.NOT_ENOUGH_REPLICAS and a.attempts == 3 for a in acked)
    assert all(a.offset == -1 for a in acked)
    assert producer.in_flight_messages == 0
    assert cluster.log_end_offset(T0) == 0
    # Each retry level waited its back-off.
    assert acked[-1].time_us >= 2 * 50 * MS


def test_non_retriable_error_is_reported_after_one_attempt() -> None:
    fault = Fault(FaultKind.REJECT, Errors.INVALID_REQUIRED_ACKS)
    sim, _, producer, recorder = make(
        ProducerConfig(linger_ms=0), produce_fault=lambda tp, b: fault
    )
    producer.send("t", None, 10, partition=0)
    sim.run()
    [ack] = recorder.of_type(MessageAcked)
    assert (ack.error, ack.attempts) == (Errors.INVALID_REQUIRED_ACKS, 1)


def test_request_timeout_retries_and_then_succeeds() -> None:
    drops = iter([Fault(FaultKind.DROP_REQUEST)])
    config = ProducerConfig(linger_ms=0, request_timeout_ms=300, retry_backoff_ms=10)
    sim, cluster, producer, recorder = make(config, produce_fault=lambda tp, b: next(drops, None))
    producer.send("t", None, 10, partition=0)
    sim.run()
    [ack] = recorder.of_type(MessageAcked)
    assert (ack.error, ack.attempts, ack.offset) == (Errors.NONE, 2, 0)
    # timeout, back-off, metadata refresh (one round trip), then the retry's round trip
    assert ack.time_us == 300 * MS + 10 * MS + 2 * 100 + 2 * 100
    assert cluster.metadata_refreshes == 1


def test_request_timeout_every_time_reports_request_timed_out() -> None:
    config = ProducerConfig(linger_ms=0, request_timeout_ms=300, retry_max=1)
    sim, _, producer, recorder = make(
        config, produce_fault=lambda tp, b: Fault(FaultKind.DROP_REQUEST)
    )
    producer.send("t", None, 10, partition=0)
    sim.run()
    [ack] = recorder.of_type(MessageAcked)
    assert (ack.error, ack.attempts) == (Errors.REQUEST_TIMED_OUT, 2)


def test_a_late_response_after_the_timeout_is_ignored_and_the_retry_duplicates() -> None:
    drops = iter([Fault(FaultKind.DROP_RESPONSE)])
    config = ProducerConfig(linger_ms=0, request_timeout_ms=300)
    sim, cluster, producer, recorder = make(config, produce_fault=lambda tp, b: next(drops, None))
    mid = producer.send("t", None, 10, partition=0)
    sim.run()
    assert cluster.message_ids(T0) == [mid, mid]
    [ack] = recorder.of_type(MessageAcked)
    assert (ack.error, ack.offset) == (Errors.NONE, 1)


def test_leader_move_is_followed_after_a_metadata_refresh() -> None:
    config = ProducerConfig(linger_ms=0, retry_backoff_ms=5)
    sim, cluster, producer, recorder = make(config, brokers=2)
    cluster.move_leader(T0)  # the producer has not looked it up yet: it will find broker 1
    producer.send("t", None, 10, partition=0)
    sim.run()
    cluster.move_leader(T0)  # now it is stale: broker 1 answers NOT_LEADER_OR_FOLLOWER
    producer.send("t", None, 10, partition=0)
    sim.run()
    acked = recorder.of_type(MessageAcked)
    assert [(a.error, a.attempts) for a in acked] == [(Errors.NONE, 1), (Errors.NONE, 2)]
    assert [b for _, b, _ in cluster.produce_requests()] == [1, 1, 0]


def test_acks_zero_acknowledges_on_send() -> None:
    sim, cluster, producer, recorder = make(ProducerConfig(acks=0, linger_ms=0))
    producer.send("t", None, 10, partition=0)
    sim.run_until(0)
    [ack] = recorder.of_type(MessageAcked)
    assert (ack.time_us, ack.error, ack.offset) == (0, Errors.NONE, -1)
    sim.run()
    assert cluster.log_end_offset(T0) == 1


def test_unknown_topic_fails_after_a_refresh() -> None:
    sim, cluster, producer, recorder = make(ProducerConfig())
    producer.send("nope", None, 10)
    sim.run()
    [ack] = recorder.of_type(MessageAcked)
    assert ack.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert cluster.metadata_refreshes == 1


def test_message_larger_than_a_request_is_refused() -> None:
    _, _, producer, recorder = make(ProducerConfig(max_request_size=1000))
    producer.send("t", None, 5000, partition=0)
    [ack] = recorder.of_type(MessageAcked)
    assert ack.error is Errors.MESSAGE_TOO_LARGE


def test_bad_arguments_raise() -> None:
    with pytest.raises(ClientConfigError, match="linger_ms"):
        ProducerConfig(linger_ms=-1)
    with pytest.raises(ClientConfigError, match="partitioner"):
        ProducerConfig(partitioner="sticky")  # type: ignore[arg-type]
    _, _, producer, _ = make(ProducerConfig())
    with pytest.raises(ClientConfigError, match="value_size"):
        producer.send("t", None, -1)


def test_fnv1a_and_hash_partitioner() -> None:
    assert fnv1a_32(b"") == 0x811C9DC5
    assert fnv1a_32(b"a") == 0xE40C292C
    assert fnv1a_32(b"foobar") == 0xBF9CF968
    partitioner = Partitioner("hash", random.Random(0))
    assert {partitioner.partition("t", b"user-7", 10) for _ in range(5)} == {
        partitioner.partition("t", b"user-7", 10)
    }
    rr = Partitioner("round_robin", random.Random(0))
    assert [rr.partition("t", b"k", 3) for _ in range(5)] == [0, 1, 2, 0, 1]


def test_hash_partitioner_spreads_keys() -> None:
    partitioner = Partitioner("hash", random.Random(0))
    counts = [0] * 4
    for i in range(4000):
        counts[partitioner.partition("t", f"key-{i}".encode(), 4)] += 1
    assert min(counts) > 800


@settings(max_examples=50, deadline=None)
@given(
    keys=st.lists(st.sampled_from([None, b"a", b"key-12"]), max_size=30),
    name=st.sampled_from(["hash", "round_robin"]),
)
def test_partitions_of_many_keys_are_those_chosen_one_by_one(
    keys: list[bytes | None], name: Any
) -> None:
    one_by_one = Partitioner(name, random.Random(5))
    at_once = Partitioner(name, random.Random(5))
    assert at_once.partitions("t", keys, 7) == [one_by_one.partition("t", k, 7) for k in keys]
    assert at_once.partition("t", None, 7) == one_by_one.partition("t", None, 7)  # same draws
    with pytest.raises(ClientConfigError, match="partition"):
        at_once.partitions("t", keys, 0)


@pytest.mark.parametrize("value_sizes", [[], [1024] * 64, [0, 1, 63, 64, 1024, 70_000, 64]])
def test_record_sizes_of_many_messages_are_those_computed_one_by_one(
    value_sizes: list[int],
) -> None:
    keyless: list[bytes | None] = [None] * len(value_sizes)
    assert message_record_sizes(keyless, value_sizes) == [
        message_record_size(None, v) for v in value_sizes
    ]
    keyed = [b"k" * (i % 100) if i % 3 else None for i in range(len(value_sizes))]
    assert message_record_sizes(keyed, value_sizes) == [
        message_record_size(k, v) for k, v in zip(keyed, value_sizes, strict=True)
    ]


FAULTS = [
    Fault(FaultKind.REJECT, Errors.NOT_LEADER_OR_FOLLOWER),
    Fault(FaultKind.REJECT, Errors.NOT_ENOUGH_REPLICAS),
    Fault(FaultKind.APPEND_THEN_ERROR, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    Fault(FaultKind.APPEND_THEN_ERROR, Errors.REQUEST_TIMED_OUT),
    Fault(FaultKind.DROP_RESPONSE),
    Fault(FaultKind.DROP_REQUEST),
]


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32),
    fault_rate=st.floats(0.0, 0.6),
    retry_max=st.integers(0, 6),
    in_flight=st.integers(1, 5),
    flush_messages=st.integers(0, 4),
)
def test_order_per_partition_survives_a_retry_storm(
    seed: int, fault_rate: float, retry_max: int, in_flight: int, flush_messages: int
) -> None:
    sim = Simulator(seed)
    rng = sim.rng("faults")

    def fault(tp: TopicPartition, broker: int) -> Fault | None:
        if rng.random() >= fault_rate:
            return None
        chosen = rng.choice(FAULTS)
        if chosen.error is Errors.NOT_LEADER_OR_FOLLOWER:
            cluster.move_leader(tp)  # a real leadership change: the old leader refuses
        return chosen

    cluster = FakeCluster(sim, {"t": 3}, brokers=3, produce_fault=fault)
    recorder = InMemoryRecorder()
    config = ProducerConfig(
        linger_ms=2,
        retry_max=retry_max,
        retry_backoff_ms=3,
        request_timeout_ms=20,
        max_in_flight_requests_per_connection=in_flight,
        flush_messages=flush_messages,
    )
    producer = Producer(sim, cluster, cluster, config, rng=sim.rng("p"), recorder=recorder)
    workload = sim.rng("workload")
    t = 0
    for _ in range(150):
        t += int(workload.expovariate(1 / 500))
        key = str(workload.randrange(20)).encode()
        sim.call_at(t, partial(producer.send, "t", key, 50))
    sim.run()

    sent = {e.message_id: e for e in recorder.of_type(MessageSent)}
    acked = recorder.of_type(MessageAcked)
    assert sorted(a.message_id for a in acked) == sorted(sent)  # exactly one outcome each
    assert producer.in_flight_messages == 0
    for p in range(3):
        tp = TopicPartition("t", p)
        log = cluster.message_ids(tp)
        first_seen = list(dict.fromkeys(log))
        assert first_seen == sorted(first_seen), f"partition {p} reordered: {first_seen}"
        for ack in acked:
            if ack.partition == p and ack.error is Errors.NONE:
                assert log[ack.offset] == ack.message_id  # the offset really holds it
    for ack in acked:
        assert 1 <= ack.attempts <= retry_max + 1
        assert ack.error is Errors.NONE or ack.error.is_retriable


def test_same_seed_same_events() -> None:
    def run() -> list[object]:
        sim = Simulator(7)
        rng = sim.rng("faults")
        cluster = FakeCluster(
            sim,
            {"t": 2},
            produce_fault=lambda tp, b: (
                Fault(FaultKind.REJECT, Errors.NOT_ENOUGH_REPLICAS) if rng.random() < 0.3 else None
            ),
        )
        recorder = InMemoryRecorder()
        producer = Producer(
            sim, cluster, cluster, ProducerConfig(), rng=sim.rng("p"), recorder=recorder
        )
        for i in range(50):
            sim.call_at(i * 300, lambda: producer.send("t", None, 10))
        sim.run()
        return list(recorder.events)

    assert run() == run()


def test_a_batch_event_splits_into_its_messages() -> None:
    event = MessagesAcked(5, "p", "t", 1, (7, 8), 40, Errors.NONE, (1, 2))
    assert event.expand() == [
        MessageAcked(5, "p", 7, "t", 1, 40, Errors.NONE, 1),
        MessageAcked(5, "p", 8, "t", 1, 41, Errors.NONE, 2),
    ]
    failed = MessagesAcked(5, "p", "t", 1, (7,), -1, Errors.NOT_ENOUGH_REPLICAS, (3,))
    assert [m.offset for m in failed.expand()] == [-1]
    recorder = InMemoryRecorder()
    recorder.record(event)
    assert recorder.events == event.expand()

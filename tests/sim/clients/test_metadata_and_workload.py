"""ClientMetadata over the network, the workload driver, the metrics adapter, record ids."""

from __future__ import annotations

import statistics

import pytest

from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.errors import ClientConfigError
from sim.clients.events import (
    CommitCompleted,
    InMemoryRecorder,
    MessageAcked,
    MessageCommitted,
    MessageDelivered,
    MessageProcessed,
    MessageSent,
    ProcessingOutcome,
)
from sim.clients.metadata import ClientMetadata
from sim.clients.metrics import MetricsAdapter
from sim.clients.producer import ArrivalSource, Producer
from sim.clients.producer_config import ProducerConfig
from sim.clients.records import make_record, message_id_of
from sim.clients.workload import ProducerWorkload, WorkloadDriver, arrival_times
from sim.core.distributions import Constant, Distribution, Exponential
from sim.core.draws import below
from sim.core.engine import Simulator
from tests.sim.clients.fake_cluster import FakeCluster

T0 = TopicPartition("t", 0)


def test_metadata_cache_learns_leaders_counts_and_coordinators() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 3}, brokers=2)
    cache = ClientMetadata(sim, cluster, [1], topics=["t", "missing"], groups=["g"])
    assert cache.leader_for(T0) is None and cache.partition_count("t") is None
    done: list[int] = []
    cache.refresh(lambda: done.append(sim.now))
    cache.refresh(lambda: done.append(sim.now))  # shares the refresh in progress
    sim.run()
    assert done == [200, 200] and cache.refreshes == 1
    assert cache.partition_count("t") == 3 and cache.partition_count("missing") is None
    assert [cache.leader_for(TopicPartition("t", p)) for p in range(3)] == [0, 1, 0]
    assert cache.coordinator_for("g") == 0
    cluster.leaders[T0] = None  # no leader any more
    cache.refresh(lambda: None)
    sim.run()
    assert cache.leader_for(T0) is None


def test_metadata_cache_completes_even_when_the_broker_is_silent() -> None:
    sim = Simulator(1)

    class Silent:
        def send(self, broker_id: int, request: object, on_response: object) -> None:
            pass

    cache = ClientMetadata(sim, Silent(), [0], topics=["t"], groups=["g"], request_timeout_ms=50)
    done: list[int] = []
    cache.refresh(lambda: done.append(sim.now))
    sim.run()
    assert done == [50_000] and cache.leader_for(T0) is None
    with pytest.raises(ClientConfigError, match="bootstrap"):
        ClientMetadata(sim, Silent(), [], topics=[])


def test_producer_with_a_metadata_cache_follows_a_leader_move() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1}, brokers=2)
    cache = ClientMetadata(sim, cluster, [0, 1], topics=["t"])
    recorder = InMemoryRecorder()
    producer = Producer(
        sim,
        cluster,
        cache,
        ProducerConfig(linger_ms=0, retry_backoff_ms=1),
        rng=sim.rng("p"),
        recorder=recorder,
    )
    producer.send("t", None, 10)  # topic unknown: refresh first
    sim.run()
    cluster.move_leader(T0)
    producer.send("t", None, 10)
    sim.run()
    acked = recorder.of_type(MessageAcked)
    assert [(a.error, a.attempts) for a in acked] == [(Errors.NONE, 1), (Errors.NONE, 2)]
    assert cluster.message_ids(T0) == [a.message_id for a in acked]


def test_poisson_and_constant_arrivals_have_the_requested_rate() -> None:
    sim = Simulator(1)
    times = arrival_times("poisson", 5000.0, sim.rng("a"), start_us=1000)
    sample = [next(times) for _ in range(20_000)]
    gaps = [b - a for a, b in zip([1000, *sample], sample, strict=False)]
    assert statistics.fmean(gaps) == pytest.approx(200, rel=0.03)
    assert statistics.stdev(gaps) == pytest.approx(200, rel=0.05)  # exponential: sd = mean
    constant = arrival_times("constant", 3000.0, sim.rng("b"))
    assert [next(constant) for _ in range(4)] == [333, 667, 1000, 1333]
    with pytest.raises(ClientConfigError, match="rate"):
        next(arrival_times("poisson", 0.0, sim.rng("c")))


def test_workload_driver_sends_keyed_messages_until_the_count() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 4})
    recorder = InMemoryRecorder()
    producer = Producer(
        sim, cluster, cluster, ProducerConfig(), rng=sim.rng("p"), recorder=recorder
    )
    workload = ProducerWorkload(
        topic="t",
        rate=10_000.0,
        message_size=Constant(value=100),
        key_space=3,
        message_count=300,
    )
    driver = WorkloadDriver(sim, producer, workload, rng=sim.rng("w"))
    driver.start()
    sim.run()
    sent = recorder.of_type(MessageSent)
    assert driver.sent == len(sent) == 300
    assert len({e.partition for e in sent}) <= 3  # three keys, at most three partitions
    assert all(a.error is Errors.NONE for a in recorder.of_type(MessageAcked))
    assert sum(cluster.log_end_offset(TopicPartition("t", p)) for p in range(4)) == 300


@pytest.mark.parametrize(
    ("key_space", "size"),
    [(0, Constant(value=1024)), (5, Constant(value=100)), (0, Exponential(mean=300))],
)
def test_workload_driver_draws_each_arrival_time_key_and_size_in_turn(
    key_space: int, size: Distribution
) -> None:
    """The chunks an arrival source hands over are the draws of one arrival after another
    (its time, then its key, then its size), whatever the chunk."""

    class Target:
        """Takes the arrival source a producer would be given."""

        def attach(self, source: ArrivalSource) -> None:
            self.source = source

        def detach(self) -> None:
            raise AssertionError("the driver was not stopped")

    workload = ProducerWorkload(
        topic="t", rate=5000.0, message_size=size, key_space=key_space, message_count=150
    )
    target = Target()
    sim = Simulator(1)
    WorkloadDriver(sim, target, workload, rng=sim.rng("w")).start(at=40)
    chunks = []
    while (chunk := target.source()) is not None:
        chunks.append(chunk)
    assert [len(chunk[1]) for chunk in chunks] == [64, 64, 22]

    rng = Simulator(1).rng("w")
    sizes = size.sampler(rng)
    times = arrival_times("poisson", 5000.0, rng, start_us=40)
    expected = []
    for _ in range(150):
        at = next(times)
        key = b"key-%d" % below(rng, key_space) if key_space else None
        expected.append((at, key, sizes.draw()))
    assert [a for _, *columns in chunks for a in zip(*columns, strict=True)] == expected


def test_records_carry_their_message_id() -> None:
    record = make_record(2**40 + 5, b"k", 100, 7)
    assert message_id_of(record) == 2**40 + 5
    assert len(record.value or b"") == 100 and record.timestamp == 7
    with pytest.raises(ValueError, match="message_id"):
        make_record(-1, None, 0)


def test_metrics_adapter_forwards_message_events() -> None:
    calls: list[tuple[object, ...]] = []

    class Metrics:
        def message_sent(self, message_id: int, t: int, producer: str, topic: str) -> None:
            calls.append(("sent", message_id, t, producer, topic))

        def message_acked(
            self, message_id: int, t: int, partition: int, offset: int, error: int = 0
        ) -> None:
            calls.append(("acked", message_id, t, partition, offset, error))

        def message_delivered(self, message_id: int, t: int) -> None:
            calls.append(("delivered", message_id, t))

        def message_processed(self, message_id: int, t: int) -> None:
            calls.append(("processed", message_id, t))

        def message_committed(self, message_id: int, t: int) -> None:
            calls.append(("committed", message_id, t))

    adapter = MetricsAdapter(Metrics())
    adapter.record(MessageSent(1, "p", 9, "t", 0, 100))
    adapter.record(MessageAcked(2, "p", 9, "t", 0, 5, Errors.NOT_ENOUGH_REPLICAS, 4))
    adapter.record(MessageDelivered(3, "c", 9, "t", 0, 5))
    adapter.record(MessageProcessed(4, "c", 9, "t", 0, 5, 3, 3, 0, ProcessingOutcome.RETRY))
    adapter.record(MessageProcessed(5, "c", 9, "t", 0, 5, 3, 4, 1, ProcessingOutcome.OK))
    adapter.record(MessageCommitted(6, "c", 9, "t", 0, 5))
    adapter.record(CommitCompleted(6, "c", "g", 5, (("t", 0, 6),), Errors.NONE, "interval"))
    assert calls == [
        ("sent", 9, 1, "p", "t"),
        ("acked", 9, 2, 0, 5, 19),
        ("delivered", 9, 3),
        ("processed", 9, 5),
        ("committed", 9, 6),
    ]

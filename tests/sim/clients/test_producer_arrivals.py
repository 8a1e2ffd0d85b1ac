"""Arrivals planned ahead (``Producer.attach``) give exactly what ``send`` at each arrival
time gives: the same requests at the same times with the same records, the same outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.events import InMemoryRecorder
from sim.clients.producer import Producer
from sim.clients.producer_config import ProducerConfig
from sim.clients.records import message_ids_of
from sim.core.engine import Simulator
from tests.sim.clients.fake_cluster import FakeCluster, Fault, FaultKind

Arrival = tuple[int, bytes | None, int]


def run(
    config: ProducerConfig,
    arrivals: Sequence[Arrival],
    faults: Sequence[int],
    *,
    bulk: bool,
    chunk: int = 5,
) -> tuple[list[Any], list[Any], list[tuple[int, int]]]:
    """Requests (time, broker, partition -> message ids), events and samples of the
    producer's counts (messages in flight, queued) of one run."""
    sim = Simulator(seed=3)
    calls = iter(range(1 << 30))
    failing = set(faults)

    def fault(tp: TopicPartition, broker: int) -> Fault | None:
        n = next(calls)
        if n not in failing:
            return None
        kind = [FaultKind.REJECT, FaultKind.APPEND_THEN_ERROR, FaultKind.DROP_RESPONSE][n % 3]
        return Fault(kind, Errors.NOT_LEADER_OR_FOLLOWER)

    cluster = FakeCluster(sim, {"t": 3}, brokers=2, latency_us=97, produce_fault=fault)
    recorder = InMemoryRecorder()
    producer = Producer(sim, cluster, cluster, config, rng=sim.rng("p"), recorder=recorder)
    if bulk:
        rest = list(arrivals)

        def source() -> tuple[str, list[int], list[bytes | None], list[int]] | None:
            if not rest:
                return None
            taken = rest[:chunk]
            del rest[:chunk]
            return "t", [a[0] for a in taken], [a[1] for a in taken], [a[2] for a in taken]

        producer.attach(source)
    else:
        # An arrival comes after the producer's other events of its instant.
        for at, key, size in arrivals:
            sim.call_at(
                at,
                lambda at=at, key=key, size=size: sim.call_at(
                    at, lambda: producer.send("t", key, size)
                ),
            )
    samples: list[tuple[int, int]] = []
    for at in range(0, 4000, 150):
        sim.call_at(
            at, lambda: samples.append((producer.in_flight_messages, producer.queued_messages()))
        )
    sim.run_until(10**9)
    requests = [
        (t, broker, {tp: list(message_ids_of(rs)) for tp, rs in request.records.items()})
        for t, broker, request in cluster.produce_requests()
    ]
    return requests, recorder.events, samples


arrival_lists = st.lists(
    st.tuples(
        st.integers(0, 3000),
        st.sampled_from([None, b"a", b"b", b"c"]),
        st.sampled_from([10, 100, 400, 2000, 2200]),  # 2200: larger than a request
    ),
    max_size=60,
).map(lambda xs: sorted(xs, key=lambda a: a[0]))


@settings(max_examples=150, deadline=None)
@given(
    arrivals=arrival_lists,
    faults=st.lists(st.integers(0, 40), max_size=6),
    acks=st.sampled_from([0, 1, -1]),
    batch_size=st.sampled_from([500, 1000, 5000]),
    flush=st.sampled_from([0, 2, 5]),
    linger_ms=st.sampled_from([0, 1, 2]),
    in_flight=st.sampled_from([1, 2]),
    partitioner=st.sampled_from(["hash", "round_robin"]),
    chunk=st.integers(1, 8),
)
def test_planned_arrivals_equal_sends_at_each_time(
    arrivals: list[Arrival],
    faults: list[int],
    acks: int,
    batch_size: int,
    flush: int,
    linger_ms: int,
    in_flight: int,
    partitioner: Any,
    chunk: int,
) -> None:
    config = ProducerConfig(
        acks=acks, batch_size=batch_size, flush_messages=flush, linger_ms=linger_ms,
        max_in_flight_requests_per_connection=in_flight, partitioner=partitioner,
        request_timeout_ms=3, retry_backoff_ms=1, max_request_size=2200,
    )  # fmt: skip
    by_send = run(config, arrivals, faults, bulk=False)
    planned = run(config, arrivals, faults, bulk=True, chunk=chunk)
    assert planned[0] == by_send[0]
    # Events of the same time may come in another order (arrivals are reported together).
    assert sorted(planned[1], key=_order) == sorted(by_send[1], key=_order)
    assert planned[2] == by_send[2]


def _order(event: Any) -> tuple[int, str, int]:
    return event.time_us, type(event).__name__, event.message_id


def test_an_arrival_at_the_end_of_a_run_step_is_sent() -> None:
    sim = Simulator(seed=3)
    cluster = FakeCluster(sim, {"t": 1})
    recorder = InMemoryRecorder()
    producer = Producer(
        sim, cluster, cluster, ProducerConfig(), rng=sim.rng("p"), recorder=recorder
    )
    arrivals = [("t", [1000, 2000], [None, None], [10, 10])]
    producer.attach(lambda: arrivals.pop() if arrivals else None)
    sim.run_until(1000)  # the first arrival is due exactly at the step's end
    assert producer.in_flight_messages == 1
    sim.run_until(10**7)
    assert [e.message_id for e in recorder.events if type(e).__name__ == "MessageAcked"] == [0, 1]

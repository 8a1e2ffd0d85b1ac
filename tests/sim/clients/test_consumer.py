"""The plain consumer against the fake cluster: start positions, fetch waits, commits."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.consumer import Consumer, ConsumerRecords
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.errors import ClientConfigError, ClientStateError
from sim.clients.events import (
    CommitCompleted,
    ConsumerHalted,
    InMemoryRecorder,
    MessageCommitted,
    MessageDelivered,
    MessageProcessed,
)
from sim.clients.records import make_record
from sim.core.distributions import Constant
from sim.core.engine import Simulator
from tests.sim.clients.fake_cluster import FakeCluster

MS = 1000
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
_ids = itertools.count(1000)


def produce(cluster: FakeCluster, tp: TopicPartition, n: int = 1, size: int = 10) -> list[int]:
    ids = [next(_ids) for _ in range(n)]
    cluster.append(tp, tuple(make_record(i, None, size) for i in ids))
    return ids


def make_consumer(
    sim: Simulator,
    cluster: FakeCluster,
    config: ConsumerConfig,
    recorder: InMemoryRecorder,
    partitions: tuple[TopicPartition, ...] = (T0,),
    on_records: object = None,
) -> Consumer:
    consumer = Consumer(
        sim,
        cluster,
        cluster,
        config,
        rng=sim.rng("consumer"),
        recorder=recorder,
        on_records=on_records,  # type: ignore[arg-type]
    )
    consumer.assign(partitions)
    return consumer


def delivered_ids(recorder: InMemoryRecorder) -> list[int]:
    return [e.message_id for e in recorder.of_type(MessageDelivered)]


def test_resumes_from_the_committed_position() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    ids = produce(cluster, T0, 10)
    cluster.committed[("g", T0)] = 4
    recorder = InMemoryRecorder()
    consumer = make_consumer(sim, cluster, ConsumerConfig(group_id="g"), recorder)
    consumer.start()
    sim.run_until(10 * MS)
    assert delivered_ids(recorder) == ids[4:]
    assert consumer.position(T0) == 10
    assert consumer.committed(T0) == 4


@pytest.mark.parametrize(("reset", "expected"), [("earliest", 5), ("latest", 0)])
def test_auto_offset_reset_without_a_committed_offset(reset: str, expected: int) -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    produce(cluster, T0, 5)
    recorder = InMemoryRecorder()
    config = ConsumerConfig(group_id="g", auto_offset_reset=reset)  # type: ignore[arg-type]
    make_consumer(sim, cluster, config, recorder).start()
    sim.run_until(10 * MS)
    assert len(delivered_ids(recorder)) == expected
    later = produce(cluster, T0, 2)
    sim.run_until(20 * MS)
    assert delivered_ids(recorder)[-2:] == later  # new records arrive in both cases


def test_fetch_min_bytes_waits_up_to_fetch_max_wait() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    recorder = InMemoryRecorder()
    config = ConsumerConfig(
        fetch_min_bytes=10_000, fetch_max_wait_ms=300, auto_offset_reset="earliest"
    )
    make_consumer(sim, cluster, config, recorder).start()
    sim.run_until(50 * MS)
    sim.call_at(50 * MS, lambda: produce(cluster, T0))  # far below fetch_min_bytes
    sim.run_until(2000 * MS)
    [delivery] = recorder.of_type(MessageDelivered)
    # The first fetch was sent at 0.2 ms (after ListOffsets), parked at the broker at 0.3 ms
    # for 300 ms, and its response took 0.1 ms back.
    assert delivery.time_us == 300 + 300 * MS + 100


def test_fetch_min_bytes_one_answers_as_soon_as_data_arrives() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    recorder = InMemoryRecorder()
    make_consumer(sim, cluster, ConsumerConfig(auto_offset_reset="earliest"), recorder).start()
    sim.call_at(50 * MS, lambda: produce(cluster, T0))
    sim.run_until(2000 * MS)
    [delivery] = recorder.of_type(MessageDelivered)
    assert delivery.time_us == 50 * MS + 100


def test_auto_commit_every_interval_and_on_close() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    recorder = InMemoryRecorder()
    consumer = make_consumer(
        sim, cluster, ConsumerConfig(group_id="g", auto_offset_reset="earliest"), recorder
    )
    consumer.start()
    for t in range(1, 12):
        sim.call_at(t * 1000 * MS, lambda: produce(cluster, T0))
    sim.run_until(12_000 * MS)
    autos = [e for e in recorder.of_type(CommitCompleted) if e.trigger == "auto"]
    assert [e.started_us for e in autos] == [5000 * MS, 10_000 * MS]
    # The record appended at exactly 5 s (10 s) is still on its way: not consumed yet.
    assert [e.offsets for e in autos] == [(("t", 0, 4),), (("t", 0, 9),)]
    assert cluster.committed[("g", T0)] == 9
    consumer.close()
    sim.run_until(13_000 * MS)
    assert cluster.committed[("g", T0)] == 11
    assert recorder.of_type(CommitCompleted)[-1].trigger == "final"
    assert recorder.of_type(ConsumerHalted)[-1].reason == "closed"
    committed = [e.offset for e in recorder.of_type(MessageCommitted)]
    assert committed == list(range(11))


def test_commit_sync_blocks_delivery_until_it_completes() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1}, commit_delay_us=500 * MS)
    recorder = InMemoryRecorder()
    config = ConsumerConfig(group_id="g", enable_auto_commit=False, auto_offset_reset="earliest")
    consumer = make_consumer(sim, cluster, config, recorder)
    consumer.start()
    results: list[Errors] = []
    sim.call_at(10 * MS, lambda: consumer.commit_sync(on_done=results.append))
    sim.call_at(20 * MS, lambda: produce(cluster, T0))
    sim.run_until(2000 * MS)
    [delivery] = recorder.of_type(MessageDelivered)
    assert results == [Errors.NONE]
    assert delivery.time_us == 10 * MS + 500 * MS + 200  # held until the commit returned


def test_commit_async_does_not_retry_but_commit_sync_does() -> None:
    sim = Simulator(1)
    faults = iter([Errors.NOT_COORDINATOR, Errors.NOT_COORDINATOR])
    cluster = FakeCluster(sim, {"t": 1}, commit_fault=lambda: next(faults, None))
    produce(cluster, T0, 3)
    recorder = InMemoryRecorder()
    config = ConsumerConfig(group_id="g", enable_auto_commit=False, auto_offset_reset="earliest")
    consumer = make_consumer(sim, cluster, config, recorder)
    consumer.start()
    outcomes: list[tuple[str, Errors]] = []
    sim.call_at(10 * MS, lambda: consumer.commit_async(on_done=lambda e: outcomes.append(("a", e))))
    sim.call_at(20 * MS, lambda: consumer.commit_sync(on_done=lambda e: outcomes.append(("s", e))))
    sim.run_until(2000 * MS)
    assert outcomes == [("a", Errors.NOT_COORDINATOR), ("s", Errors.NONE)]
    assert cluster.committed[("g", T0)] == 3
    assert cluster.metadata_refreshes == 1  # the sync commit refreshed before retrying


def test_commit_sync_gives_up_after_default_api_timeout() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1}, commit_fault=lambda: Errors.COORDINATOR_LOAD_IN_PROGRESS)
    produce(cluster, T0, 1)
    recorder = InMemoryRecorder()
    config = ConsumerConfig(
        group_id="g",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        default_api_timeout_ms=1000,
    )
    consumer = make_consumer(sim, cluster, config, recorder)
    consumer.start()
    outcomes: list[Errors] = []
    sim.call_at(10 * MS, lambda: consumer.commit_sync(on_done=outcomes.append))
    sim.run_until(5000 * MS)
    assert outcomes == [Errors.COORDINATOR_LOAD_IN_PROGRESS]
    [commit] = recorder.of_type(CommitCompleted)
    assert 1010 * MS <= commit.time_us < 1200 * MS


def test_leader_change_refreshes_metadata_and_follows() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1}, brokers=2)
    recorder = InMemoryRecorder()
    make_consumer(sim, cluster, ConsumerConfig(auto_offset_reset="earliest"), recorder).start()
    first = produce(cluster, T0, 2)
    sim.run_until(10 * MS)
    cluster.move_leader(T0)
    second = produce(cluster, T0, 2)  # the parked fetch at broker 0 wakes up: NOT_LEADER
    sim.run_until(1000 * MS)
    assert delivered_ids(recorder) == first + second
    assert cluster.metadata_refreshes >= 1


def test_offset_out_of_range_resets() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    ids = produce(cluster, T0, 3)
    cluster.committed[("g", T0)] = 50  # beyond the log end
    recorder = InMemoryRecorder()
    config = ConsumerConfig(group_id="g", auto_offset_reset="earliest", enable_auto_commit=False)
    make_consumer(sim, cluster, config, recorder).start()
    sim.run_until(1000 * MS)
    assert delivered_ids(recorder) == ids


def test_built_in_application_processes_then_commits_after_each_batch() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 2})
    recorder = InMemoryRecorder()
    config = ConsumerConfig(
        group_id="g",
        enable_auto_commit=False,
        manual_commit="sync",
        auto_offset_reset="earliest",
        processing_time=Constant(value=10 * MS),
    )
    consumer = make_consumer(sim, cluster, config, recorder, partitions=(T0, T1))
    consumer.start()
    ids = produce(cluster, T0, 3) + produce(cluster, T1, 2)
    sim.run_until(1000 * MS)
    processed = recorder.of_type(MessageProcessed)
    assert sorted(e.message_id for e in processed) == sorted(ids)
    gaps = [b.time_us - a.time_us for a, b in itertools.pairwise(processed)]
    assert all(gap >= 10 * MS for gap in gaps)  # one at a time
    assert cluster.committed[("g", T0)] == 3 and cluster.committed[("g", T1)] == 2
    done = {e.message_id: e.time_us for e in processed}
    for event in recorder.of_type(MessageCommitted):
        assert event.time_us >= done[event.message_id]  # never committed before processed


def test_auto_commit_falling_due_mid_batch_waits_for_the_next_poll() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    recorder = InMemoryRecorder()
    config = ConsumerConfig(
        group_id="g",
        auto_commit_interval_ms=100,
        auto_offset_reset="earliest",
        processing_time=Constant(value=40 * MS),
    )
    make_consumer(sim, cluster, config, recorder).start()
    # OffsetFetch, ListOffsets and Fetch round trips: one batch of 4 x 40 ms polled at 0.6 ms
    produce(cluster, T0, 4)
    sim.run_until(1000 * MS)
    [auto, *_] = [e for e in recorder.of_type(CommitCompleted) if e.trigger == "auto"]
    assert auto.started_us == 600 + 160 * MS  # due at 100 ms, made at the next poll
    assert auto.offsets == (("t", 0, 4),)


def test_crash_loses_uncommitted_progress_and_a_restart_redelivers() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    recorder = InMemoryRecorder()
    config = ConsumerConfig(
        group_id="g", auto_offset_reset="earliest", auto_commit_interval_ms=1000
    )
    first = make_consumer(sim, cluster, config, recorder)
    first.start()
    ids = produce(cluster, T0, 5)
    sim.run_until(1500 * MS)  # auto-committed 5 at 1 s
    more = produce(cluster, T0, 3)
    sim.run_until(1600 * MS)
    first.crash()
    second = Consumer(sim, cluster, cluster, config, rng=sim.rng("c2"), recorder=recorder,
                      client_id="second")  # fmt: skip
    second.assign([T0])
    second.start()
    sim.run_until(3000 * MS)
    by_client = [(e.client_id, e.message_id) for e in recorder.of_type(MessageDelivered)]
    assert by_client == [("consumer", i) for i in ids + more] + [("second", i) for i in more]


def test_state_errors() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    consumer = Consumer(sim, cluster, cluster, rng=sim.rng("c"), recorder=InMemoryRecorder())
    with pytest.raises(ClientStateError, match="assign"):
        consumer.start()
    consumer.assign([T0, T0])
    assert consumer.assignment == (T0,)
    consumer.start()
    with pytest.raises(ClientStateError):
        consumer.assign([T1])
    with pytest.raises(ClientStateError, match="group_id"):
        consumer.commit_async()
    with pytest.raises(ClientConfigError, match="fetch_max_wait_ms"):
        ConsumerConfig(fetch_max_wait_ms=40_000)


def test_on_records_receives_consumer_records() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    seen = ConsumerRecords()
    consumer = make_consumer(
        sim,
        cluster,
        ConsumerConfig(auto_offset_reset="earliest"),
        InMemoryRecorder(),
        on_records=seen.extend,
    )
    consumer.start()
    ids = produce(cluster, T0, 3)
    sim.run_until(10 * MS)
    assert seen == ConsumerRecords([T0] * 3, [0, 1, 2], ids)


def test_a_failing_broker_is_retried_after_a_backoff_not_in_a_loop() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    down_fetches: list[int] = []

    class Flaky:
        """The cluster, until ``down``: then every request is answered NETWORK_EXCEPTION."""

        down = False

        def send(self, broker_id: int, request: Any, on_response: Callable[[Any], None]) -> None:
            if not self.down:
                cluster.send(broker_id, request, on_response)
                return
            down_fetches.append(sim.now)
            response = request.error_response(Errors.NETWORK_EXCEPTION)
            sim.call_later(100, lambda: on_response(response))

    network = Flaky()
    recorder = InMemoryRecorder()
    consumer = Consumer(
        sim, network, cluster, ConsumerConfig(auto_offset_reset="earliest"),
        rng=sim.rng("c"), recorder=recorder,
    )  # fmt: skip
    consumer.assign([T0])
    consumer.start()
    sim.run_until(10 * MS)
    network.down = True
    produce(cluster, T0, 1)  # completes the parked fetch; the next ones fail
    sim.run_until(1010 * MS)
    assert len(recorder.of_type(MessageDelivered)) == 1
    # One failing fetch per retry_backoff_ms (100 ms) plus its round trip, not a busy loop.
    assert 9 <= len(down_fetches) <= 10
    assert all(b - a >= 100 * MS for a, b in itertools.pairwise(down_fetches))

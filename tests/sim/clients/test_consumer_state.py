"""The consumer's lifecycle: the transition table itself, and real consumers walking it."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from apis.offset_fetch import OffsetFetchRequest
from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.consumer import Consumer
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_state import (
    TRANSITIONS,
    ConsumerState,
    IllegalTransitionError,
    LifecycleEvent,
    next_state,
)
from sim.clients.errors import ClientStateError
from sim.clients.events import CommitCompleted, ConsumerHalted, InMemoryRecorder
from sim.clients.network import ClientNetwork
from sim.clients.records import make_record
from sim.core.engine import Simulator
from tests.sim.clients.fake_cluster import FakeCluster

MS = 1000
T0 = TopicPartition("t", 0)
S = ConsumerState
E = LifecycleEvent
GROUP = ConsumerConfig(group_id="g", auto_offset_reset="earliest", enable_auto_commit=False)

ALLOWED = {
    (S.NEW, E.START_IN_GROUP): S.LOOKING_UP_COORDINATOR,
    (S.NEW, E.START_WITHOUT_GROUP): S.CONSUMING,
    (S.NEW, E.START_SUBSCRIBED): S.JOINING_GROUP,
    (S.JOINING_GROUP, E.ASSIGNED): S.LOOKING_UP_COORDINATOR,
    (S.LOOKING_UP_COORDINATOR, E.REVOKED): S.JOINING_GROUP,
    (S.FETCHING_COMMITTED_OFFSETS, E.REVOKED): S.JOINING_GROUP,
    (S.CONSUMING, E.REVOKED): S.JOINING_GROUP,
    (S.JOINING_GROUP, E.CLOSE): S.CLOSING,
    (S.JOINING_GROUP, E.CRASH): S.STOPPED,
    (S.LOOKING_UP_COORDINATOR, E.COORDINATOR_FOUND): S.FETCHING_COMMITTED_OFFSETS,
    (S.LOOKING_UP_COORDINATOR, E.COORDINATOR_NEEDED): S.LOOKING_UP_COORDINATOR,
    (S.FETCHING_COMMITTED_OFFSETS, E.COORDINATOR_FOUND): S.FETCHING_COMMITTED_OFFSETS,
    (S.FETCHING_COMMITTED_OFFSETS, E.COORDINATOR_NEEDED): S.LOOKING_UP_COORDINATOR,
    (S.FETCHING_COMMITTED_OFFSETS, E.COMMITTED_OFFSETS_FETCHED): S.CONSUMING,
    (S.NEW, E.CLOSE): S.CLOSING,
    (S.LOOKING_UP_COORDINATOR, E.CLOSE): S.CLOSING,
    (S.FETCHING_COMMITTED_OFFSETS, E.CLOSE): S.CLOSING,
    (S.CONSUMING, E.CLOSE): S.CLOSING,
    (S.CLOSING, E.CLOSE): S.CLOSING,
    (S.CLOSING, E.CLOSED): S.STOPPED,
    (S.NEW, E.CRASH): S.STOPPED,
    (S.LOOKING_UP_COORDINATOR, E.CRASH): S.STOPPED,
    (S.FETCHING_COMMITTED_OFFSETS, E.CRASH): S.STOPPED,
    (S.CONSUMING, E.CRASH): S.STOPPED,
    (S.CLOSING, E.CRASH): S.STOPPED,
}
ILLEGAL = [pair for pair in itertools.product(S, E) if pair not in ALLOWED]


def make_consumer(
    sim: Simulator,
    network: ClientNetwork,
    cluster: FakeCluster,
    config: ConsumerConfig = GROUP,
    recorder: InMemoryRecorder | None = None,
) -> Consumer:
    consumer = Consumer(
        sim, network, cluster, config, rng=sim.rng("c"),
        recorder=recorder if recorder is not None else InMemoryRecorder(),
    )  # fmt: skip
    consumer.assign([T0])
    return consumer


def states_at(sim: Simulator, consumer: Consumer, times_us: list[int]) -> list[ConsumerState]:
    """Run the simulation, reading the consumer's state at each of ``times_us``."""
    seen = []
    for t in times_us:
        sim.run_until(t)
        seen.append(consumer.state)
    return seen


# -- the table ----------------------------------------------------------------------------------


def test_the_table_is_exactly_the_documented_transitions() -> None:
    assert dict(TRANSITIONS) == ALLOWED


@pytest.mark.parametrize(("state", "event"), sorted(ALLOWED, key=repr))
def test_every_allowed_transition(state: ConsumerState, event: LifecycleEvent) -> None:
    assert next_state(state, event) is ALLOWED[state, event]


@pytest.mark.parametrize(("state", "event"), ILLEGAL)
def test_every_other_transition_raises(state: ConsumerState, event: LifecycleEvent) -> None:
    with pytest.raises(IllegalTransitionError) as raised:
        next_state(state, event)
    assert (raised.value.state, raised.value.event) == (state, event)
    assert isinstance(raised.value, ClientStateError)


def test_nothing_leaves_stopped() -> None:
    assert not [pair for pair in TRANSITIONS if pair[0] is S.STOPPED]


def test_the_consumer_refuses_an_illegal_transition_and_keeps_its_state() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    consumer = make_consumer(sim, cluster, cluster)
    with pytest.raises(IllegalTransitionError, match="COMMITTED_OFFSETS_FETCHED in state NEW"):
        consumer._transition(E.COMMITTED_OFFSETS_FETCHED)
    assert consumer.state is S.NEW


# -- real consumers walking the table --------------------------------------------------------
# FakeCluster: 100 us each way, a metadata refresh takes 200 us; retry_backoff_ms is 100.


def test_a_group_consumer_looks_up_the_coordinator_then_fetches_committed_offsets() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1}, brokers=2)
    cluster.coordinator = None
    consumer = make_consumer(sim, cluster, cluster)
    consumer.start()
    assert consumer.state is S.LOOKING_UP_COORDINATOR
    sim.call_at(150 * MS, lambda: setattr(cluster, "coordinator", 0))
    # The retry at 200.4 ms finds broker 0 and sends the OffsetFetch; broker 1 takes over
    # before it arrives, so broker 0 answers NOT_COORDINATOR at 200.6 ms; the retry at
    # 300.8 ms asks broker 1, whose answer at 301 ms ends the start-up.
    sim.call_at(200_450, lambda: setattr(cluster, "coordinator", 1))
    times = [50 * MS, 150 * MS, 200_500, 250 * MS, 300_900, 301_100]
    assert states_at(sim, consumer, times) == [
        S.LOOKING_UP_COORDINATOR,
        S.LOOKING_UP_COORDINATOR,  # the retry at 100.2 ms found no coordinator either
        S.FETCHING_COMMITTED_OFFSETS,
        S.LOOKING_UP_COORDINATOR,
        S.FETCHING_COMMITTED_OFFSETS,
        S.CONSUMING,
    ]


def test_an_offset_fetch_error_is_retried_in_the_same_state() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    offset_fetches: list[int] = []

    class LoadingOnce:
        """The cluster, but the first OffsetFetch is answered COORDINATOR_LOAD_IN_PROGRESS."""

        def send(self, broker_id: int, request: Any, on_response: Callable[[Any], None]) -> None:
            if isinstance(request, OffsetFetchRequest):
                offset_fetches.append(sim.now)
                if len(offset_fetches) == 1:
                    response = request.error_response(Errors.COORDINATOR_LOAD_IN_PROGRESS)
                    sim.call_later(200, lambda: on_response(response))
                    return
            cluster.send(broker_id, request, on_response)

    consumer = make_consumer(sim, LoadingOnce(), cluster)
    consumer.start()
    assert consumer.state is S.FETCHING_COMMITTED_OFFSETS
    assert states_at(sim, consumer, [50 * MS, 100_300, 101 * MS]) == [
        S.FETCHING_COMMITTED_OFFSETS,
        S.FETCHING_COMMITTED_OFFSETS,  # the retry at 100.2 ms, answered at 100.4 ms
        S.CONSUMING,
    ]
    assert offset_fetches == [0, 100_200]


def test_a_consumer_without_a_group_consumes_at_once() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    consumer = make_consumer(sim, cluster, cluster, ConsumerConfig(auto_offset_reset="earliest"))
    consumer.start()
    assert consumer.state is S.CONSUMING


def test_closing_lasts_until_the_final_commit_completes() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1}, commit_delay_us=500 * MS)
    cluster.append(T0, (make_record(1, None, 10),))
    recorder = InMemoryRecorder()
    config = ConsumerConfig(group_id="g", auto_offset_reset="earliest")
    consumer = make_consumer(sim, cluster, cluster, config, recorder)
    consumer.start()
    sim.run_until(10 * MS)
    closed: list[int] = []
    consumer.close(lambda: closed.append(sim.now))
    assert consumer.state is S.CLOSING and not consumer.stopped
    assert states_at(sim, consumer, [400 * MS, 600 * MS]) == [S.CLOSING, S.STOPPED]
    assert consumer.stopped and closed == [10 * MS + 500 * MS + 200]
    assert recorder.of_type(CommitCompleted)[-1].trigger == "final"
    assert [e.reason for e in recorder.of_type(ConsumerHalted)] == ["closed"]


def test_a_crash_while_closing_stops_without_waiting_for_the_final_commit() -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1}, commit_delay_us=500 * MS)
    cluster.append(T0, (make_record(1, None, 10),))
    recorder = InMemoryRecorder()
    config = ConsumerConfig(group_id="g", auto_offset_reset="earliest")
    consumer = make_consumer(sim, cluster, cluster, config, recorder)
    consumer.start()
    sim.run_until(10 * MS)
    closed: list[int] = []
    consumer.close(lambda: closed.append(sim.now))
    sim.run_until(100 * MS)
    consumer.crash()
    sim.run_until(1000 * MS)
    assert consumer.state is S.STOPPED and closed == []
    assert [e.reason for e in recorder.of_type(ConsumerHalted)] == ["crashed"]
    assert not recorder.of_type(CommitCompleted)  # its answer came after the crash


@pytest.mark.parametrize("stop", ["close", "crash"])
def test_a_consumer_stopped_before_it_started_stays_stopped(stop: str) -> None:
    sim = Simulator(1)
    cluster = FakeCluster(sim, {"t": 1})
    consumer = make_consumer(sim, cluster, cluster)
    if stop == "close":
        consumer.close()
    else:
        consumer.crash()
    assert consumer.state is S.STOPPED
    with pytest.raises(ClientStateError, match="stopped"):
        consumer.start()
    with pytest.raises(ClientStateError, match="stopped"):
        consumer.assign([T0])
    assert not cluster.requests

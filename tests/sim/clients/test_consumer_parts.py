"""Contracts of the consumer's parts on their own: positions, request plumbing, the records
handed over and the commit ledger."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from replica.types import TopicPartition
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_fetcher import ConsumerRecords
from sim.clients.consumer_positions import Positions
from sim.clients.consumer_requests import ConsumerRequests
from sim.clients.ledger import CommitLedger
from sim.core.engine import Simulator
from tests.sim.clients.fake_cluster import FakeCluster

MS = 1000
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
CONFIG = ConsumerConfig(request_timeout_ms=1000, retry_backoff_ms=100)


class HeldNetwork:
    """Keeps every request's ``on_response`` for the test to call when it likes."""

    def __init__(self) -> None:
        self.sent: list[Callable[[Any], None]] = []

    def send(self, broker_id: int, request: Any, on_response: Callable[[Any], None]) -> None:
        self.sent.append(on_response)


Plumbing = tuple[Simulator, HeldNetwork, FakeCluster, ConsumerRequests]


def plumbing(stopped: list[bool] | None = None) -> Plumbing:
    """Request plumbing over a HeldNetwork, with FakeCluster as the metadata view;
    ``stopped[0]`` is the consumer's stopped flag."""
    sim = Simulator(1)
    network = HeldNetwork()
    cluster = FakeCluster(sim, {"t": 1})
    flag = stopped if stopped is not None else [False]
    requests = ConsumerRequests(sim, network, cluster, CONFIG, stopped=lambda: flag[0])
    return sim, network, cluster, requests


def test_positions_start_move_and_forget() -> None:
    positions = Positions()
    positions.assign([T1, T0, T1])
    assert positions.assigned == (T1, T0)
    assert positions.fetch_position(T0) is None
    positions.start_at(T0, 5)
    positions.resume_from_committed(T1, 7)
    positions.fetched_up_to(T0, 9)
    positions.polled(T0, 5)
    assert (positions.consumed(T0), positions.fetch_position(T0)) == (6, 9)
    assert positions.consumed_positions() == {T0: 6, T1: 7}
    assert (positions.committed(T0), positions.committed(T1)) == (None, 7)
    positions.forget(T0)
    assert positions.consumed(T0) is None and positions.fetch_position(T0) is None
    assert list(positions.consumed_positions()) == [T1]


def test_the_committed_position_never_moves_back() -> None:
    positions = Positions()
    positions.commit_succeeded(T0, 10)
    positions.commit_succeeded(T0, 4)  # a late answer of an older commit
    assert positions.committed(T0) == 10


def test_a_request_is_settled_by_its_answer_once() -> None:
    sim, network, _, requests = plumbing()
    answers: list[Any] = []
    requests.send(0, "request", answers.append)
    sim.run_until(10 * MS)
    network.sent[0]("response")
    network.sent[0]("again")
    sim.run_until(5000 * MS)  # the timeout was cancelled
    assert answers == ["response"]


def test_a_request_times_out_and_its_late_answer_is_dropped() -> None:
    sim, network, _, requests = plumbing()
    answers: list[tuple[int, Any]] = []
    requests.send(0, "request", lambda response: answers.append((sim.now, response)))
    sim.run_until(2000 * MS)
    network.sent[0]("late")
    assert answers == [(1000 * MS, None)]


def test_nothing_is_called_back_once_stopped() -> None:
    stopped = [False]
    sim, network, _, requests = plumbing(stopped)
    calls: list[str] = []
    requests.send(0, "request", lambda _response: calls.append("answer"))
    requests.later(lambda: calls.append("later"))
    requests.after_refresh(lambda: calls.append("refreshed"))
    stopped[0] = True
    network.sent[0]("response")
    sim.run_until(5000 * MS)
    assert calls == []


def test_one_metadata_refresh_at_a_time() -> None:
    sim, _, cluster, requests = plumbing()
    ran: list[tuple[str, int]] = []
    requests.after_refresh(lambda: ran.append(("first", sim.now)))
    requests.after_refresh(lambda: ran.append(("second", sim.now)))  # only backs off
    sim.run_until(1000 * MS)
    assert cluster.metadata_refreshes == 1
    # FakeCluster's refresh takes 200 us; then the back-off of 100 ms.
    assert ran == [("second", 100 * MS), ("first", 100 * MS + 200)]
    requests.after_refresh(lambda: ran.append(("third", sim.now)))
    sim.run_until(2000 * MS)
    assert cluster.metadata_refreshes == 2


def test_consumer_records_group_their_columns_by_partition() -> None:
    records = ConsumerRecords()
    assert len(records) == 0 and records.spans == []
    records.add(T0, 5, [50, 51])
    records.add(T0, 7, (52,))  # the same partition goes on: one span
    records.add(T1, 0, [60])
    assert records == ConsumerRecords([T0, T0, T0, T1], [5, 6, 7, 0], [50, 51, 52, 60])
    assert records.spans == [(T0, 0, 3), (T1, 3, 4)]
    later = ConsumerRecords()
    later.add(T0, 8, [53])
    records.extend(later)  # after T1: T0 has a second span
    assert records.spans == [(T0, 0, 3), (T1, 3, 4), (T0, 4, 5)]
    assert len(records) == 5 and records.offsets == [5, 6, 7, 0, 8]


def test_consumer_records_from_columns_find_their_spans() -> None:
    records = ConsumerRecords([T1, T0, T0, T1], [3, 1, 2, 4], [-1, 7, 8, 9])
    assert records.spans == [(T1, 0, 1), (T0, 1, 3), (T1, 3, 4)]
    assert records != ConsumerRecords([T1, T0, T0, T1], [3, 1, 2, 4], [-1, 7, 8, 10])
    assert repr(ConsumerRecords([T0], [1], [2])) == (
        "ConsumerRecords(tps=[TopicPartition(topic='t', partition=0)], offsets=[1], "
        "message_ids=[2])"
    )


def test_the_ledger_hands_out_what_a_commit_covers_once() -> None:
    ledger = CommitLedger()
    ledger.delivered(T0, [3, 4], [30, 40])
    ledger.delivered(T1, [0], [7])
    ledger.delivered(T0, [5], [50])
    assert ledger.committed(T0, 5) == ([3, 4], [30, 40])  # offsets below the position
    assert ledger.committed(T0, 5) == ([], [])
    assert ledger.committed(T0, 9) == ([5], [50])
    ledger.clear()
    assert ledger.committed(T1, 1) == ([], [])

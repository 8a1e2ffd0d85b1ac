"""ReplicaFetcherManager: one fetcher per leader, in leader id order, behind a live view."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import pytest

from purgatory import TimingWheel
from replica import (
    BrokerConfig,
    InitialFetchState,
    Partition,
    PartitionState,
    ReplicaFetcherManager,
    ReplicaManager,
    TopicPartition,
)
from tests.replica.harness import ManualClock

TP0, TP1, TP2 = (TopicPartition("t", p) for p in range(3))
START = InitialFetchState(0, 1)
CONFIG = BrokerConfig(replica_fetch_backoff_ms=300)


@attrs.frozen
class FakeBroker:
    """A follower broker hosting nothing: all a fetcher needs (``LocalBroker``)."""

    broker_id: int = 7
    config: BrokerConfig = CONFIG
    partitions: Mapping[TopicPartition, Partition] = attrs.field(factory=dict)
    scheduler: TimingWheel = attrs.field(factory=TimingWheel)

    def get_partition(self, topic_partition: TopicPartition) -> Partition | None:
        """The hosted partition (never any here)."""
        return self.partitions.get(topic_partition)

    def note_producer_state(self) -> None:
        """Nothing: it hosts no log."""


@pytest.fixture
def manager() -> ReplicaFetcherManager:
    return ReplicaFetcherManager(FakeBroker())


def _wake_up(manager: ReplicaFetcherManager) -> int | None:
    """When the fetchers wake their broker: its scheduler's next deadline."""
    scheduler: TimingWheel = manager._broker.scheduler  # type: ignore[attr-defined]
    return scheduler.next_deadline()


def test_partitions_are_grouped_by_leader_in_leader_id_order(
    manager: ReplicaFetcherManager,
) -> None:
    manager.add_fetcher_for_partitions({TP0: (2, START), TP1: (0, START), TP2: (2, START)})
    fetchers = manager.fetchers
    assert list(fetchers) == [0, 2]
    assert [f.leader_id for f in fetchers.values()] == [0, 2]
    assert set(fetchers[2].partition_states) == {TP0, TP2}
    assert set(fetchers[0].partition_states) == {TP1}
    assert fetchers[0].build_fetch_request(0) is not None
    assert fetchers[0].in_flight is not None and fetchers[0].in_flight.replica_id == 7


def test_adding_to_a_fetcher_keeps_it_and_restarts_the_partition(
    manager: ReplicaFetcherManager,
) -> None:
    manager.add_fetcher_for_partitions({TP0: (3, START)})
    fetcher = manager.fetchers[3]
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_failure(0)  # TP0 backs off until 300
    manager.add_fetcher_for_partitions({TP0: (3, InitialFetchState(5, 2)), TP1: (1, START)})
    assert list(manager.fetchers) == [1, 3]  # a new leader with a smaller id goes first
    assert manager.fetchers[3] is fetcher
    state = fetcher.partition_states[TP0]
    assert (state.fetch_offset, state.current_leader_epoch, state.ready_at_ms) == (5, 2, 0)


def test_adding_does_not_remove_from_another_leader(manager: ReplicaFetcherManager) -> None:
    manager.add_fetcher_for_partitions({TP0: (0, START)})
    manager.add_fetcher_for_partitions({TP0: (1, START)})
    assert TP0 in manager.fetchers[0].partition_states
    assert TP0 in manager.fetchers[1].partition_states


def test_remove_drops_only_the_fetchers_left_without_partitions(
    manager: ReplicaFetcherManager,
) -> None:
    manager.add_fetcher_for_partitions({TP0: (0, START), TP1: (0, START), TP2: (1, START)})
    dropped = manager.fetchers[1]
    manager.remove_fetcher_for_partitions(iter([TP0, TP2, TopicPartition("unknown", 0)]))
    assert list(manager.fetchers) == [0]
    assert set(manager.fetchers[0].partition_states) == {TP1}
    manager.add_fetcher_for_partitions({TP2: (1, START)})
    assert manager.fetchers[1] is not dropped  # a dropped fetcher is not reused


def test_the_view_is_live_and_read_only(manager: ReplicaFetcherManager) -> None:
    view = manager.fetchers
    manager.add_fetcher_for_partitions({TP0: (2, START)})
    manager.add_fetcher_for_partitions({TP1: (1, START)})  # re-sorted in place
    assert list(view) == [1, 2]
    manager.remove_fetcher_for_partitions([TP1])
    assert list(view) == [2]
    manager.shutdown()
    assert list(view) == []
    with pytest.raises(TypeError):
        view[0] = None  # type: ignore[index]


def test_replica_manager_delegates_to_its_fetcher_manager() -> None:
    broker = ReplicaManager(1, BrokerConfig(), ManualClock())
    view = broker.replica_fetchers
    broker.become_leader_or_follower(
        {
            TP0: PartitionState(2, 0, (1, 2), (1, 2)),
            TP1: PartitionState(0, 0, (0, 1), (0, 1)),
            TP2: PartitionState(-1, 0, (1, 2), (1, 2)),  # no leader: nothing to fetch from
        }
    )
    assert list(view) == [0, 2]
    assert view[0].replica_manager is broker
    broker.become_leader_or_follower({TP1: PartitionState(1, 1, (0, 1), (0, 1))})
    assert list(view) == [2]
    broker.stop_replica(TP0, delete=False)
    assert list(view) == []
    broker.become_leader_or_follower({TP0: PartitionState(2, 1, (1, 2), (1, 2))})
    broker.shutdown()
    assert list(view) == []


def test_a_fetcher_wakes_its_broker_when_its_next_fetch_is_due(
    manager: ReplicaFetcherManager,
) -> None:
    manager.add_fetcher_for_partitions({TP0: (0, START), TP1: (0, START)})
    fetcher = manager.fetchers[0]
    assert _wake_up(manager) == 0 == fetcher.next_fetch_time_ms()  # ready now
    fetcher.build_fetch_request(10)
    assert _wake_up(manager) is None  # in flight: the response wakes it
    fetcher.handle_fetch_failure(10)
    assert _wake_up(manager) == 310 == fetcher.next_fetch_time_ms()  # back-off ends
    manager.add_fetcher_for_partitions({TP1: (0, START)})  # TP1 restarts: ready at once
    assert _wake_up(manager) == 0


def test_paused_and_dropped_fetchers_do_not_wake_the_broker(
    manager: ReplicaFetcherManager,
) -> None:
    manager.add_fetcher_for_partitions({TP0: (0, START)})
    fetcher = manager.fetchers[0]
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_failure(0)
    manager.paused = True
    assert manager.paused and _wake_up(manager) is None
    manager.add_fetcher_for_partitions({TP1: (1, START)})  # created while paused
    assert _wake_up(manager) is None
    manager.paused = False
    assert _wake_up(manager) == 0  # TP1 is ready; TP0 backs off until 300
    manager.remove_fetcher_for_partitions([TP1])
    assert _wake_up(manager) == 300
    manager.shutdown()
    assert _wake_up(manager) is None
    fetcher.add_partitions({TP2: START})  # a dropped fetcher never wakes the broker again
    assert _wake_up(manager) is None


def test_ready_fetches_are_the_due_fetchers_requests_in_leader_id_order(
    manager: ReplicaFetcherManager,
) -> None:
    manager.add_fetcher_for_partitions({TP0: (2, START), TP1: (0, START), TP2: (1, START)})
    fetchers = manager.fetchers
    fetchers[1].build_fetch_request(0)
    fetchers[1].handle_fetch_failure(0)  # backs off until 300
    ready = manager.ready_fetches(10)
    assert [(f.leader_id, r is f.in_flight) for f, r in ready] == [(0, True), (2, True)]
    assert manager.ready_fetches(10) == []  # both in flight
    manager.paused = True
    assert manager.ready_fetches(300) == []
    manager.paused = False
    assert [f.leader_id for f, _ in manager.ready_fetches(300)] == [1]

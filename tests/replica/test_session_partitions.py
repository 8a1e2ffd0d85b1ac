"""SessionPartitions: a fetch session's partitions, active or idle, in the order they joined."""

from __future__ import annotations

from replica.config import BrokerConfig
from replica.partition import Partition
from replica.replica import Replica
from replica.session_partitions import SessionPartitions
from replica.types import LogOffsetMetadata, PartitionFetchInfo, TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))
INFO = PartitionFetchInfo(0, 100)


def test_in_order_copies_a_fetch_in_joining_order_and_sorts_one_that_is_not() -> None:
    session = SessionPartitions({A: INFO, B: INFO, C: INFO})
    ordered = {A: INFO, C: INFO}
    copy = session.in_order(ordered)
    assert copy == ordered and copy is not ordered
    assert list(session.in_order({C: INFO, A: INFO, B: INFO})) == [A, B, C]
    session.forget([A])
    session.put(A, INFO)  # joins again, last
    assert list(session.in_order({A: INFO, B: INFO})) == [B, A]
    assert list(session.in_order({A: INFO})) == [A]


def test_an_idle_entry_keeps_the_followers_replica_until_woken_or_refreshed() -> None:
    session = SessionPartitions({A: INFO, B: INFO})
    partition = Partition(A, 0, BrokerConfig())
    replica = Replica(1)
    end = LogOffsetMetadata(0, 0, 0)
    session.rest(A, partition, 5, end, replica)
    session.rest(B, partition, 5, end)  # a consumer's read: no replica
    assert session.idle[A].replica is replica and session.idle[B].replica is None
    assert session.wake(A) is INFO and A in session.active and A not in session.idle
    session.put(B, PartitionFetchInfo(3, 100))  # new fetch data: active again
    assert not session.idle and len(session) == 2
    replica.record_idle_fetch(42)
    assert (replica.last_fetch_time_ms, replica.last_caught_up_time_ms) == (42, 42)

"""ConsumeProxy: long-polling reads, their wake-ups, and the log topic's commit rule."""

from __future__ import annotations

import pytest

from consume_proxy import (
    ConsumeProxy,
    InvalidProxyConfigError,
    LogEntryKind,
    Progress,
    Record,
    RecordState,
    UnknownPartitionError,
)
from replica.types import TopicPartition

A = TopicPartition("data", 0)
B = TopicPartition("data", 1)


def proxy(*partitions: TopicPartition, lease: int = 10) -> ConsumeProxy:
    p = ConsumeProxy(lease_duration=lease, delivery_count_limit=3)
    for tp in partitions:
        p.assign(tp, 0)
    return p


def offsets(got: list[Record | None]) -> list[int | None]:
    return [None if r is None else r.offset for r in got]


def test_a_waiting_read_completes_on_new_data() -> None:
    p = proxy(A)
    got: list[Record | None] = []
    p.read(100, got.append)
    p.advance(5)
    assert got == []
    p.append(A, 0, None, b"x")
    assert offsets(got) == [0]
    assert got[0] is not None and got[0].lease_deadline == 15


def test_a_waiting_read_ends_empty_at_its_timeout() -> None:
    p = proxy(A)
    got: list[Record | None] = []
    p.read(100, got.append)
    p.advance(99)
    assert got == []
    p.advance(100)
    assert got == [None]


def test_each_record_goes_to_exactly_one_of_many_waiting_reads_in_arrival_order() -> None:
    p = proxy(A, lease=1000)
    got: list[tuple[int, Record | None]] = []
    for reader in range(3):
        p.read(100, lambda r, reader=reader: got.append((reader, r)))
    p.append(A, 0, None, b"x")
    p.append(A, 1, None, b"y")
    assert [(reader, r.offset) for reader, r in got if r is not None] == [(0, 0), (1, 1)]
    p.advance(100)
    assert got[-1] == (2, None)


def test_a_cancel_wakes_a_waiting_read() -> None:
    p = proxy(A)
    p.append(A, 0, None, b"x")
    first: list[Record | None] = []
    p.read(0, first.append)
    waiting: list[Record | None] = []
    p.read(100, waiting.append)
    assert waiting == []
    p.cancel(A, 0)
    assert [(r.offset, r.delivery_count) for r in waiting if r] == [(0, 2)]


def test_a_lease_expiry_wakes_a_waiting_read_at_the_deadline() -> None:
    p = proxy(A, lease=10)
    p.append(A, 0, None, b"x")
    p.read(0, lambda r: None)
    waiting: list[Record | None] = []
    p.read(100, waiting.append)
    p.advance(9)
    assert waiting == []
    p.advance(10)
    assert offsets(waiting) == [0]
    assert p.next_deadline() == 20  # the new lease (the read is done)


def test_reads_take_the_partitions_round_robin() -> None:
    p = proxy(A, B)
    for offset in range(2):
        p.append(A, offset, None, None)
        p.append(B, offset, None, None)
    got: list[Record | None] = []
    for _ in range(4):
        p.read(0, got.append)
    assert [(r.partition, r.offset) for r in got if r] == [(0, 0), (1, 0), (0, 1), (1, 1)]


def test_a_dropped_read_gets_no_callback_and_takes_nothing() -> None:
    p = proxy(A)
    got: list[Record | None] = []
    p.read(100, got.append).cancel()
    p.append(A, 0, None, None)
    assert got == []
    assert p.partition(A).has_available


def test_every_pending_and_acknowledge_is_written_to_the_log() -> None:
    p = proxy(A)
    p.append(A, 0, None, None)
    p.read(0, lambda r: None)
    p.acknowledge(A, 0)
    assert [(e.position, e.kind, e.offset, e.delivery) for e in p.poll_log()] == [
        (0, LogEntryKind.PENDING, 0, 1),
        (1, LogEntryKind.ACKNOWLEDGED, 0, 1),
    ]
    assert p.poll_log() == []


def test_the_log_commit_waits_for_pending_deliveries_to_end() -> None:
    p = proxy(A, lease=10)
    p.append(A, 0, None, None)
    p.append(A, 1, None, None)
    p.read(0, lambda r: None)  # log 0: pending offset 0
    p.read(0, lambda r: None)  # log 1: pending offset 1
    p.cancel(A, 1)  # delivery of offset 1 ended
    assert p.log.commit() == {}  # log 0's delivery is still pending
    p.advance(10)  # offset 0's lease expires
    assert p.log.commit() == {A: 2}


def test_the_log_commit_waits_for_acknowledged_records_to_be_committed() -> None:
    p = proxy(A)
    p.append(A, 0, None, None)
    p.append(A, 1, None, None)
    p.read(0, lambda r: None)  # log 0: pending 0
    p.read(0, lambda r: None)  # log 1: pending 1
    p.acknowledge(A, 1)  # log 2: ack 1 (ends log 1's delivery)
    assert p.commit() == {}  # offset 0 is pending: the data topic cannot pass it
    assert p.log.commit() == {}
    p.acknowledge(A, 0)  # log 3: ack 0
    assert p.log.commit() == {A: 2}  # both pendings ended; the acks wait for the data commit
    assert p.commit() == {A: 2}
    assert p.log.commit() == {A: 4}


def test_revoke_forgets_the_partition_and_its_leases() -> None:
    p = proxy(A, B)
    p.append(A, 0, None, b"x")
    p.append(A, 1, None, b"y")
    got: list[Record | None] = []
    p.read(0, got.append)
    waiting: list[Record | None] = []
    p.read(100, waiting.append)  # takes offset 1
    p.read(100, waiting.append)  # waits on A and B
    p.revoke(A)
    assert p.served == [B]
    assert p.next_deadline() == 100  # the leases of offsets 0 and 1 are gone, the read stays
    with pytest.raises(UnknownPartitionError):
        p.acknowledge(A, 0)
    p.append(B, 0, None, b"z")
    assert offsets(waiting) == [1, 0]
    p.assign(A, 0)  # served again from its committed position: the records come back
    p.append(A, 0, None, b"x")
    assert p.state(A, 0) is RecordState.AVAILABLE


def test_count_by_state() -> None:
    p = proxy(A)
    for offset in range(3):
        p.append(A, offset, None, b"x")
    p.read(0, lambda r: None)
    share = p.partition(A)
    assert (share.count(RecordState.AVAILABLE), share.count(RecordState.PENDING)) == (2, 1)


def locked(limit: int, lease: int = 10) -> ConsumeProxy:
    p = ConsumeProxy(lease_duration=lease, delivery_count_limit=1, max_record_locks=limit)
    p.assign(A, 0)
    for offset in range(5):
        p.append(A, offset, None, b"x")
    return p


def test_a_partition_at_its_record_lock_bound_hands_out_nothing_until_one_finishes() -> None:
    p = locked(2)
    got: list[Record | None] = []
    for _ in range(3):
        p.read(100, got.append)
    assert offsets(got) == [0, 1]  # the third read waits: two records are locked
    assert p.partition(A).full and p.state(A, 2) is RecordState.AVAILABLE
    p.acknowledge(A, 0)
    assert offsets(got) == [0, 1, 2]  # a lock freed: the waiting read takes the next record
    p.read(0, got.append)
    assert got[-1] is None  # full again: a read that cannot wait gets nothing


@pytest.mark.parametrize("end", ["reject", "expire", "cancel"])
def test_every_end_of_a_delivery_frees_its_lock(end: str) -> None:
    p = locked(1)  # the delivery-count limit is 1: a cancel or expiry archives
    got: list[Record | None] = []
    p.read(0, got.append)
    p.read(100, got.append)
    assert offsets(got) == [0]
    if end == "expire":
        p.advance(10)
    else:
        getattr(p, end)(A, 0)
    assert offsets(got) == [0, 1] and p.state(A, 0) is RecordState.ARCHIVED


def test_a_merge_that_ends_a_locked_delivery_frees_its_lock() -> None:
    p = ConsumeProxy(lease_duration=10, max_record_locks=1)
    p.assign(A, 0)
    p.append(A, 0, None, b"x")
    p.append(A, 1, None, b"y")
    got: list[Record | None] = []
    p.read(0, got.append)
    p.read(100, got.append)
    p.partition(A).merge(0, Progress(1, RecordState.ACKNOWLEDGED))  # another copy knew
    assert offsets(got) == [0, 1]


def test_max_record_locks_must_be_positive() -> None:
    with pytest.raises(InvalidProxyConfigError):
        ConsumeProxy(max_record_locks=0)

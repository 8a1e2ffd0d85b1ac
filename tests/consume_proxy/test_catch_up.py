"""Catch-up: a server taking a partition over rebuilds its state from the state log (the
entries from the log's committed position on) merged with the records it fetches, and serves
only once caught up: acknowledged and archived records are not handed out again, pending ones
stay pending until their logged deadline."""

from __future__ import annotations

from consume_proxy import ConsumeProxy, LogEntry, LogEntryKind, Record, RecordState
from replica.types import TopicPartition

A = TopicPartition("data", 0)
LEASE = 10


def first_server(records: int) -> tuple[ConsumeProxy, list[LogEntry]]:
    proxy = ConsumeProxy(lease_duration=LEASE, delivery_count_limit=2)
    proxy.assign(A, 0, log_start=0)
    proxy.caught_up(A, 0)  # an empty log
    for offset in range(records):
        proxy.append(A, offset, None, b"%d" % offset)
    return proxy, []


def hand_out(proxy: ConsumeProxy, log: list[LogEntry]) -> Record:
    got: list[Record | None] = []
    proxy.read(0, got.append)
    log.extend(proxy.poll_log())
    assert got[0] is not None
    return got[0]


def take_over(
    log: list[LogEntry], data_start: int, log_start: int, records: int, *, now: int
) -> ConsumeProxy:
    """A fresh server: catch up from ``log_start``, then fetch the data from ``data_start``."""
    proxy = ConsumeProxy(lease_duration=LEASE, delivery_count_limit=2, start=now)
    proxy.assign(A, data_start, log_start=log_start)
    for entry in log[log_start:]:
        proxy.replay(entry)
    for offset in range(data_start, records):
        proxy.append(A, offset, None, b"%d" % offset)
    proxy.caught_up(A, len(log))
    return proxy


def test_acknowledged_records_are_not_handed_out_again_and_pending_ones_keep_their_lease() -> None:
    a, log = first_server(4)
    for _ in range(3):
        hand_out(a, log)  # 0, 1, 2 pending until 10
    a.acknowledge(A, 1)
    log.extend(a.poll_log())
    a.advance(4)
    # a crashes; b takes over at time 4 from the log's start (nothing was committed)
    b = take_over(log, 0, 0, 4, now=4)
    assert [b.state(A, o) for o in range(4)] == [
        RecordState.PENDING,
        RecordState.ACKNOWLEDGED,
        RecordState.PENDING,
        RecordState.AVAILABLE,
    ]
    assert b.partition(A).lease_deadline(0) == 10  # the logged lease, not a new one
    record = hand_out(b, [])
    assert (record.offset, record.delivery_count) == (3, 1)
    b.advance(10)  # the leases logged by a end: 0 and 2 come back, as delivery 2
    assert hand_out(b, []).delivery_count == 2
    b.acknowledge(A, 0)
    assert b.commit() == {A: 2}


def test_reads_wait_during_catch_up_and_are_served_once_caught_up() -> None:
    b = ConsumeProxy(lease_duration=LEASE)
    b.assign(A, 0, log_start=0)
    b.append(A, 0, None, b"x")
    got: list[Record | None] = []
    b.read(100, got.append)
    assert got == [] and b.catching_up() == [A]
    b.caught_up(A, 0)
    assert [r.offset for r in got if r] == [0]
    assert b.catching_up() == []


def test_the_log_commit_after_a_takeover_passes_superseded_entries_only() -> None:
    a, log = first_server(3)
    hand_out(a, log)  # log 0: pending 0 (delivery 1)
    a.advance(LEASE)
    hand_out(a, log)  # log 1: pending 0 (delivery 2)
    hand_out(a, log)  # log 2: pending 1
    a.acknowledge(A, 1)  # log 3: ack 1
    log.extend(a.poll_log())
    b = take_over(log, 0, 0, 3, now=LEASE)
    assert b.log.commit() == {A: 1}  # log 0's delivery ended; log 1's is still leased
    b.advance(2 * LEASE)  # it expires: archived, at the limit of 2
    assert b.state(A, 0) is RecordState.ARCHIVED
    assert b.log.commit() == {A: 3}  # the ack of offset 1 waits for the data commit
    # b writes on where the log ended: its archive entry for offset 0 is at 4
    assert [(e.position, e.kind.value) for e in b.poll_log()] == [(4, "archived")]
    assert b.commit() == {A: 2}
    assert b.log.commit() == {A: 5}


def test_archived_records_stay_archived_without_a_second_dead_letter() -> None:
    a, log = first_server(2)
    hand_out(a, log)
    a.reject(A, 0)
    log.extend(a.poll_log())
    letters: list[Record] = []
    b = ConsumeProxy(lease_duration=LEASE, dead_letter=letters.append)
    b.assign(A, 0, log_start=0)
    for entry in log:
        b.replay(entry)
    b.caught_up(A, len(log))  # progress for records not fetched yet waits for them
    b.append(A, 0, None, None)
    b.append(A, 1, None, None)
    assert b.state(A, 0) is RecordState.ARCHIVED and letters == []
    assert hand_out(b, []).offset == 1
    assert b.commit() == {A: 1}


def test_a_renewal_is_logged_and_survives_a_takeover() -> None:
    a, log = first_server(1)
    hand_out(a, log)
    a.advance(8)
    assert a.renew(A, 0) == 18
    log.extend(a.poll_log())
    b = take_over(log, 0, 0, 1, now=12)
    assert b.partition(A).lease_deadline(0) == 18


def test_replayed_entries_of_records_committed_already_are_settled_at_once() -> None:
    a, log = first_server(2)
    hand_out(a, log)  # log 0: pending 0
    hand_out(a, log)  # log 1: pending 1
    a.acknowledge(A, 0)  # log 2: ack 0
    log.extend(a.poll_log())
    assert a.commit() == {A: 1}
    assert a.log.commit() == {A: 1}  # log 1's delivery is open
    b = take_over(log, 1, 1, 2, now=0)  # replays log 1 and log 2 (the ack of committed 0)
    b.advance(LEASE)  # offset 1's lease ends: nothing is open
    assert b.log.commit() == {A: 3}


def test_progress_merged_for_an_offset_that_turns_out_a_hole_is_dropped() -> None:
    b = ConsumeProxy(lease_duration=LEASE)
    b.assign(A, 0, log_start=0)
    b.replay(LogEntry(0, LogEntryKind.PENDING, A, 1, 1, 5))
    b.caught_up(A, 1)
    b.append(A, 0, None, None)
    b.append(A, 2, None, None)  # offset 1 was compacted away
    assert sorted(b.partition(A).state_map().progress) == []
    assert b.log.commit() == {A: 1}  # its Pending entry is moot: the delivery cannot be open


def test_a_partition_revoked_while_catching_up_can_be_assigned_again() -> None:
    b = ConsumeProxy(lease_duration=LEASE)
    b.assign(A, 0, log_start=3)
    b.replay(LogEntry(3, LogEntryKind.PENDING, A, 0, 1, 5))
    b.revoke(A)
    assert b.catching_up() == [] and b.log.commit() == {}
    b.assign(A, 0, log_start=5)
    b.caught_up(A, 6)
    b.append(A, 0, None, None)
    written: list[LogEntry] = []
    assert hand_out(b, written).delivery_count == 1  # nothing of the first assignment is left
    assert [e.position for e in written] == [6]

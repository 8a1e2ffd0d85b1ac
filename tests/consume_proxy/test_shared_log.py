"""A shared state log (``assign(..., tail=True)``): catch-up ends when a server reads its own
claim back, requests forwarded by servers that do not own the partition are applied by the
owner (a record not fetched yet waits for it), a previous owner's late entries are merged, a
newer owner's claim fences the old one, copies written twice by a producer's retry are read
once, and the log's commit counts an entry only once it is read back."""

from __future__ import annotations

import attrs
import pytest

from consume_proxy import (
    UNPLACED,
    ConsumeProxy,
    InvalidProxyConfigError,
    LogEntry,
    LogEntryKind,
    Record,
    RecordState,
    UnknownPartitionError,
)
from replica.types import TopicPartition

K = LogEntryKind
A = TopicPartition("data", 0)
LEASE = 10


class SharedLog:
    """One log partition in memory: whatever the proxies produce lands at the end, in the
    order produced; each reader reads on from where it stopped."""

    def __init__(self) -> None:
        self.entries: list[LogEntry] = []
        self.read_to: dict[int, int] = {}

    def produce(self, *proxies: ConsumeProxy) -> None:
        for proxy in proxies:
            for entry in proxy.poll_log():
                self.entries.append(attrs.evolve(entry, position=len(self.entries)))

    def follow(self, proxy: ConsumeProxy, start: int = 0) -> None:
        """``proxy`` reads what it has not read yet (from ``start`` the first time)."""
        position = self.read_to.get(proxy.log.writer, start)
        for entry in self.entries[position:]:
            if entry.tp in proxy.served:
                proxy.replay(entry)
        self.read_to[proxy.log.writer] = len(self.entries)


def server(writer: int, log: SharedLog, records: int = 4, *, now: int = 0) -> ConsumeProxy:
    """A server taking ``A`` over from the log's start, data from 0: caught up."""
    proxy = ConsumeProxy(lease_duration=LEASE, delivery_count_limit=3, writer=writer, start=now)
    take(proxy, log, records)
    return proxy


def take(proxy: ConsumeProxy, log: SharedLog, records: int, start: int = 0) -> None:
    proxy.assign(A, 0, log_start=start, tail=True)
    for offset in range(records):
        proxy.append(A, offset, None, b"%d" % offset)
    log.read_to.pop(proxy.log.writer, None)
    log.produce(proxy)
    log.follow(proxy, start)


def hand_out(proxy: ConsumeProxy) -> Record:
    got: list[Record | None] = []
    proxy.read(0, got.append)
    assert got[0] is not None
    return got[0]


def test_a_partition_serves_once_its_own_claim_is_read_back() -> None:
    log = SharedLog()
    proxy = ConsumeProxy(lease_duration=LEASE, writer=7)
    proxy.assign(A, 0, log_start=0, tail=True)
    proxy.append(A, 0, None, b"x")
    waiting: list[Record | None] = []
    proxy.read(100, waiting.append)
    (claim,) = proxy.poll_log()
    assert (claim.kind, claim.position, claim.writer, claim.offset) == (K.CLAIM, UNPLACED, 7, 0)
    assert proxy.catching_up() == [A] and waiting == []
    log.entries.append(attrs.evolve(claim, position=0))
    log.follow(proxy)
    assert proxy.catching_up() == [] and [r.offset for r in waiting if r] == [0]


def test_the_log_before_the_claim_is_caught_up_on_and_its_requests_applied() -> None:
    log = SharedLog()
    a = server(1, log)
    first, second = hand_out(a), hand_out(a)
    a.acknowledge(A, first.offset)
    log.produce(a)  # Pending 0, Pending 1, Acknowledged 0
    b = ConsumeProxy(lease_duration=LEASE, writer=2)
    b.forward(K.ACKNOWLEDGE_REQUEST, A, second.offset, second.delivery_count)
    log.produce(b)  # a crashes before reading the request
    c = ConsumeProxy(lease_duration=LEASE, writer=3, start=1)
    take(c, log, 4)
    assert [c.state(A, o) for o in range(3)] == [
        RecordState.ACKNOWLEDGED,
        RecordState.ACKNOWLEDGED,  # the forwarded acknowledgement, applied after the merge
        RecordState.AVAILABLE,
    ]
    assert c.counts.applied == 1 and c.commit() == {A: 2}


def test_an_acknowledgement_forwarded_from_any_server_is_applied_by_the_owner() -> None:
    log = SharedLog()
    owner = server(1, log)
    record = hand_out(owner)
    other = ConsumeProxy(lease_duration=LEASE, writer=2)
    with pytest.raises(UnknownPartitionError):
        other.acknowledge(A, record.offset)  # not served there: it forwards instead
    other.forward(K.ACKNOWLEDGE_REQUEST, A, record.offset, record.delivery_count)
    (request,) = other.poll_log()
    assert (request.kind, request.writer, request.delivery) == (K.ACKNOWLEDGE_REQUEST, 2, 1)
    log.entries.append(attrs.evolve(request, position=len(log.entries)))
    log.follow(owner)
    assert owner.state(A, record.offset) is RecordState.ACKNOWLEDGED
    assert [e.kind for e in owner.poll_log()][-1] is K.ACKNOWLEDGED  # the owner's own fact
    assert (owner.counts.applied, other.counts.forwarded) == (1, 1)


def test_a_forwarded_request_that_fails_changes_nothing() -> None:
    log = SharedLog()
    owner = server(1, log)
    record = hand_out(owner)
    owner.advance(LEASE)  # the lease ended: the record is available again
    other = ConsumeProxy(lease_duration=LEASE, writer=2)
    other.forward(K.ACKNOWLEDGE_REQUEST, A, record.offset, record.delivery_count)
    other.forward(K.CANCEL_REQUEST, A, 3)  # never handed out
    log.produce(owner, other)
    log.follow(owner)
    assert owner.state(A, record.offset) is RecordState.AVAILABLE
    assert owner.state(A, 3) is RecordState.AVAILABLE
    assert (owner.counts.applied, owner.counts.refused) == (0, 2)


def test_a_request_for_a_record_not_fetched_yet_waits_for_it() -> None:
    log = SharedLog()
    owner = server(1, log, records=1)
    other = ConsumeProxy(lease_duration=LEASE, writer=2)
    other.forward(K.REJECT_REQUEST, A, 1)  # offset 1 is not fetched at the owner yet
    log.produce(other)
    log.follow(owner)
    assert owner.counts.applied + owner.counts.refused == 0
    owner.append(A, 1, None, b"1")  # applied now: never handed out, so refused
    assert owner.counts.refused == 1


def test_forwarding_is_refused_for_a_partition_served_here_or_a_bad_kind() -> None:
    proxy = ConsumeProxy(writer=1)
    proxy.assign(A, 0)
    with pytest.raises(InvalidProxyConfigError, match="served here"):
        proxy.forward(K.ACKNOWLEDGE_REQUEST, A, 0)
    with pytest.raises(InvalidProxyConfigError, match="only a request"):
        proxy.forward(K.PENDING, TopicPartition("data", 1), 0)
    with pytest.raises(InvalidProxyConfigError, match="bad offset"):
        proxy.forward(K.CANCEL_REQUEST, TopicPartition("data", 1), -1)
    with pytest.raises(InvalidProxyConfigError, match="writer id"):
        ConsumeProxy().assign(A, 0, log_start=0, tail=True)  # writer 0 cannot share a log


def test_a_newer_claim_fences_the_old_owner_and_its_late_entries_are_merged() -> None:
    log = SharedLog()
    a = server(1, log)
    hand_out(a)
    log.produce(a)
    b = ConsumeProxy(lease_duration=LEASE, writer=2)
    take(b, log, 4)  # b is assigned A while a, alive, has not noticed: b claims it
    late = hand_out(a)  # a hands out offset 1 before it reads b's claim
    log.produce(a)
    log.follow(a)  # a reads b's claim: fenced
    assert a.served == [] and a.counts.fenced == 1
    with pytest.raises(UnknownPartitionError):
        a.acknowledge(A, late.offset)
    log.follow(b)  # b merges a's late Pending entry: offset 1 keeps a's lease
    assert b.state(A, 1) is RecordState.PENDING
    assert b.partition(A).lease_deadline(1) == late.lease_deadline
    assert hand_out(b).offset == 2
    b.acknowledge(A, late.offset, late.delivery_count)  # a's reader acknowledges at b


def test_an_earlier_claim_read_during_catch_up_does_not_fence() -> None:
    log = SharedLog()
    a = ConsumeProxy(lease_duration=LEASE, writer=1)
    b = ConsumeProxy(lease_duration=LEASE, writer=2)
    a.assign(A, 0, log_start=0, tail=True)
    b.assign(A, 0, log_start=0, tail=True)
    log.produce(a, b)  # both claim; b's claim is the later one
    log.follow(a)
    log.follow(b)
    assert (a.served, b.served) == ([], [A])  # a read b's claim after its own: fenced
    assert b.catching_up() == [] and b.counts.fenced == 0


def test_a_copy_written_twice_by_a_retry_is_read_once() -> None:
    log = SharedLog()
    owner = server(1, log)
    other = ConsumeProxy(lease_duration=LEASE, writer=2)
    first = hand_out(owner)
    log.produce(owner)
    other.forward(K.CANCEL_REQUEST, A, first.offset)  # the current delivery
    (cancel,) = other.poll_log()
    log.entries += [attrs.evolve(cancel, position=len(log.entries) + i) for i in range(2)]
    log.follow(owner)
    again = hand_out(owner)  # cancelled once: offset 0 is on delivery 2, still pending
    assert (again.offset, again.delivery_count) == (0, 2)
    assert owner.state(A, 0) is RecordState.PENDING and owner.counts.applied == 1


def test_the_log_commits_an_entry_only_once_it_is_read_back() -> None:
    log = SharedLog()
    owner = server(1, log)
    assert owner.log.commit() == {A: 1}  # past the claim
    record = hand_out(owner)
    owner.acknowledge(A, record.offset)
    assert owner.commit() == {A: 1}
    assert owner.log.commit() == {}  # the Pending and Acknowledged entries are not read yet
    log.produce(owner)
    log.follow(owner)
    assert owner.log.commit() == {A: 3}  # read back: settled (ended, and committed)
    other = ConsumeProxy(lease_duration=LEASE, writer=2)
    second = hand_out(owner)
    other.forward(K.ACKNOWLEDGE_REQUEST, A, second.offset)
    log.produce(owner, other)
    log.follow(owner)  # Pending 1, then the request, applied: it ends that delivery
    assert owner.log.commit() == {A: 4}  # the request is open until the data commit passes 1
    assert owner.commit() == {A: 2}
    assert owner.log.commit() == {A: 5}
    log.produce(owner)
    log.follow(owner)  # the owner's own Acknowledged entry for offset 1
    assert owner.log.commit() == {A: 6}


def test_a_late_entry_ending_a_delivery_of_a_record_not_fetched_yet_settles_it() -> None:
    log = SharedLog()
    owner = server(1, log, records=0)  # nothing fetched yet
    zombie = ConsumeProxy(lease_duration=LEASE, writer=2)
    zombie.assign(A, 0)  # it hands out and acknowledges offset 0 before it is fenced
    zombie.append(A, 0, None, b"0")
    zombie.acknowledge(A, hand_out(zombie).offset)
    for entry in zombie.poll_log():
        log.entries.append(attrs.evolve(entry, position=len(log.entries), writer=2))
    log.follow(owner)  # the Pending entry, then the Acknowledged: both about offset 0
    owner.append(A, 0, None, b"0")
    assert owner.state(A, 0) is RecordState.ACKNOWLEDGED
    assert owner.commit() == {A: 1}
    assert owner.log.commit() == {A: 3}  # the Pending entry settled with its delivery


def test_a_writer_id_is_given_once_and_before_anything_is_written() -> None:
    proxy = ConsumeProxy()
    with pytest.raises(InvalidProxyConfigError, match="int 0 to"):
        proxy.writer = -1
    proxy.writer = 4
    proxy.assign(A, 0, log_start=0, tail=True)  # writes its claim
    with pytest.raises(InvalidProxyConfigError, match="once entries are written"):
        proxy.writer = 5
    assert proxy.writer == 4 and proxy.poll_log()[0].writer == 4

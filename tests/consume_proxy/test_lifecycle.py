"""A hypothesis state machine over the consume proxy: random reads (waiting or not), appends,
acknowledgements (current and stale), cancels, rejects, renews, commits and time advancing,
against a model of who holds which record until when.

Invariants: each record is handed to one reader at a time (a record is handed out again only
once the previous lease has ended); nothing acknowledged or archived is handed out again;
delivery counts go up by one per hand-out; the data commit never passes a record that is not
acknowledged or archived, nor the log commit an open delivery or an uncommitted
acknowledgement; leases expire exactly at their deadline (pending before it,
not after); a read never waits while a record it could take is available.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from consume_proxy import (
    ConsumeProxy,
    InvalidRecordStateError,
    LeaseExpiredError,
    LogEntry,
    LogEntryKind,
    Record,
    RecordState,
)
from replica.types import TopicPartition

PARTITIONS = (TopicPartition("data", 0), TopicPartition("data", 1))
LEASE = 10
LIMIT = 3

Key = tuple[TopicPartition, int]


class ProxyMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.archived: set[Key] = set()
        self.proxy = ConsumeProxy(
            lease_duration=LEASE, delivery_count_limit=LIMIT, dead_letter=self._dead
        )
        for tp in PARTITIONS:
            self.proxy.assign(tp, 0)
        self.now = 0
        self.ends = dict.fromkeys(PARTITIONS, 0)
        self.holder: dict[Key, tuple[int, int]] = {}  # current delivery and its deadline
        self.deliveries: dict[Key, int] = {}
        self.acked: set[Key] = set()
        self.stale: list[tuple[Key, int]] = []  # deliveries that ended
        self.waiting: dict[int, int] = {}  # read id -> its deadline
        self.reads = 0
        self.commits = dict.fromkeys(PARTITIONS, 0)
        self.log: list[LogEntry] = []

    def _dead(self, record: Record) -> None:
        key = (TopicPartition(record.topic, record.partition), record.offset)
        assert key not in self.archived
        self.archived.add(key)

    def _handed(self, read_id: int, record: Record | None) -> None:
        deadline = self.waiting.pop(read_id)
        if record is None:
            assert self.proxy.now() >= deadline  # an empty answer only at the timeout
            return
        key = (TopicPartition(record.topic, record.partition), record.offset)
        assert key not in self.acked and key not in self.archived
        previous = self.holder.get(key)
        if previous is not None:  # handed out again: the previous lease must have ended
            assert previous[1] <= self.proxy.now()
            self.stale.append((key, previous[0]))
        assert record.delivery_count == self.deliveries.get(key, 0) + 1
        assert record.lease_deadline == self.proxy.now() + LEASE
        self.deliveries[key] = record.delivery_count
        self.holder[key] = (record.delivery_count, record.lease_deadline)

    def _ended(self, key: Key) -> None:
        self.stale.append((key, self.holder.pop(key)[0]))

    @rule(tp=st.sampled_from(PARTITIONS), gap=st.integers(0, 2))
    def append(self, tp: TopicPartition, gap: int) -> None:
        offset = self.ends[tp] + gap
        self.proxy.append(tp, offset, None, b"%d" % offset)
        self.ends[tp] = offset + 1

    @rule(timeout=st.integers(0, 25))
    def read(self, timeout: int) -> None:
        read_id = self.reads
        self.reads += 1
        self.waiting[read_id] = self.now + timeout
        self.proxy.read(timeout, lambda record: self._handed(read_id, record))

    @rule(dt=st.integers(0, 12))
    def advance(self, dt: int) -> None:
        self.now += dt
        self.proxy.advance(self.now)
        for key, (delivery, deadline) in list(self.holder.items()):
            if deadline <= self.now:
                self._ended(key)
                if delivery >= LIMIT:
                    assert key in self.archived

    @precondition(lambda self: self.holder)
    @rule(data=st.data(), action=st.sampled_from(["acknowledge", "cancel", "reject", "renew"]))
    def act_on_a_held_record(self, data: st.DataObject, action: str) -> None:
        key = data.draw(st.sampled_from(sorted(self.holder)))
        delivery = self.holder[key][0] if data.draw(st.booleans()) else None
        if action == "renew":
            assert self.proxy.renew(*key, delivery) == self.now + LEASE
            self.holder[key] = (self.holder[key][0], self.now + LEASE)
            return
        # The model first: a cancel hands the record to a waiting read inside the call.
        ended = self.holder[key][0]
        self._ended(key)
        if action == "acknowledge":
            self.acked.add(key)
        getattr(self.proxy, action)(*key, delivery)
        if action == "reject" or (action == "cancel" and ended >= LIMIT):
            assert key in self.archived

    @precondition(lambda self: self.stale)
    @rule(data=st.data(), action=st.sampled_from(["acknowledge", "cancel", "renew"]))
    def act_on_an_ended_delivery(self, data: st.DataObject, action: str) -> None:
        key, delivery = data.draw(st.sampled_from(self.stale))
        with pytest.raises(InvalidRecordStateError) as raised:
            getattr(self.proxy, action)(*key, delivery)
        if key not in self.acked and key not in self.archived:
            assert isinstance(raised.value, LeaseExpiredError)

    @rule()
    def commit(self) -> None:
        for tp, position in self.proxy.commit().items():
            assert position > self.commits[tp]
            for offset in range(self.commits[tp], position):
                key = (tp, offset)
                assert key in self.acked or key in self.archived or key not in self.deliveries
                assert self.proxy.state(tp, offset) is RecordState.COMMITTED
            self.commits[tp] = position
        self.log.extend(self.proxy.poll_log())
        committed = self.proxy.log.commit()
        for entry in self.log:  # what the log commit passes is settled
            if entry.position >= committed.get(entry.tp, 0):
                continue
            key = (entry.tp, entry.offset)
            if entry.kind is LogEntryKind.PENDING:
                assert self.holder.get(key, (None,))[0] != entry.delivery
            else:
                assert entry.offset < self.commits[entry.tp]

    @invariant()
    def leases_are_pending_until_their_deadline(self) -> None:
        for (tp, offset), (_, deadline) in self.holder.items():
            assert deadline > self.now
            assert self.proxy.state(tp, offset) is RecordState.PENDING
            assert self.proxy.partition(tp).lease_deadline(offset) == deadline

    @invariant()
    def no_read_waits_while_a_record_is_available(self) -> None:
        if self.waiting:
            assert not any(self.proxy.partition(tp).has_available for tp in PARTITIONS)


ProxyMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=60)
TestProxyLifecycle = ProxyMachine.TestCase

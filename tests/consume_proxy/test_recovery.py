"""A hypothesis state machine over two proxy servers sharing a durable world (the data
partitions, the state log and the group's commits): random reads, acknowledgements, cancels,
rejects, renewals, lease expiries, commits, server crashes after which the other server
takes the crashed server's partitions over by catching up from the log, and partitions moved
while both servers are alive (the owner commits and stops serving it, as on a revocation; the
other catches up and serves it; it may move back later).

The driver writes ahead: a request's log entries are durable before the next step (as a
server answering its client only once its entries are produced). Commits of the data and of
the log are made together, when the commit rule runs, so a crash loses whatever moved since.

Invariants (issue 12): no record is acknowledged twice; nothing is committed, in the data or
the log, before everything before it is settled (acknowledged or archived records; ended
deliveries); a record is pending with at most one reader at a time, across takeovers too (a
new owner keeps a logged lease until its deadline); and no record is lost: at the end, reading
and acknowledging until nothing is left commits every partition to its end.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from consume_proxy import (
    ConsumeProxy,
    InvalidRecordStateError,
    LogEntry,
    LogEntryKind,
    Record,
    RecordState,
)
from replica.types import TopicPartition

PARTITIONS = (TopicPartition("data", 0), TopicPartition("data", 1))
SERVERS = (0, 1)
LEASE = 10
LIMIT = 3

Key = tuple[TopicPartition, int]


class RecoveryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.data = dict.fromkeys(PARTITIONS, 0)  # records in each data partition
        self.log: dict[TopicPartition, list[LogEntry]] = {tp: [] for tp in PARTITIONS}
        self.data_commit = dict.fromkeys(PARTITIONS, 0)
        self.log_commit = dict.fromkeys(PARTITIONS, 0)
        self.owner = dict.fromkeys(PARTITIONS, 0)
        self.servers = {s: self._server() for s in SERVERS}
        for tp in PARTITIONS:
            self._take_over(0, tp)
        self.holder: dict[Key, tuple[int, int]] = {}  # delivery, lease deadline
        self.acked: set[Key] = set()
        self.archived: set[Key] = set()

    # -- the driver -------------------------------------------------------------------------

    def _server(self) -> ConsumeProxy:
        return ConsumeProxy(
            lease_duration=LEASE, delivery_count_limit=LIMIT, dead_letter=self._dead, start=self.now
        )

    def _take_over(self, server: int, tp: TopicPartition) -> None:
        """``server`` is assigned ``tp``: it catches up from the log, fetches the data."""
        proxy = self.servers[server]
        proxy.assign(tp, self.data_commit[tp], log_start=self.log_commit[tp])
        for entry in self.log[tp][self.log_commit[tp] :]:
            proxy.replay(entry)
        for offset in range(self.data_commit[tp], self.data[tp]):
            proxy.append(tp, offset, None, b"%d" % offset)
        proxy.caught_up(tp, len(self.log[tp]))
        self.owner[tp] = server

    def _flush(self) -> None:
        for proxy in self.servers.values():
            for entry in proxy.poll_log():
                assert entry.position == len(self.log[entry.tp])  # positions are log offsets
                self.log[entry.tp].append(entry)

    def _dead(self, record: Record) -> None:
        key = (TopicPartition(record.topic, record.partition), record.offset)
        assert key not in self.archived and key not in self.acked
        self.archived.add(key)
        self.holder.pop(key, None)

    def _handed(self, record: Record | None) -> None:
        if record is None:
            return
        key = (TopicPartition(record.topic, record.partition), record.offset)
        assert key not in self.acked and key not in self.archived
        previous = self.holder.get(key)
        assert previous is None or previous[1] <= self.now  # one reader at a time
        self.holder[key] = (record.delivery_count, record.lease_deadline)

    def _owner_of(self, key: Key) -> ConsumeProxy:
        return self.servers[self.owner[key[0]]]

    # -- rules ------------------------------------------------------------------------------

    @rule(tp=st.sampled_from(PARTITIONS), count=st.integers(1, 3))
    def append(self, tp: TopicPartition, count: int) -> None:
        for _ in range(count):
            self.servers[self.owner[tp]].append(tp, self.data[tp], None, b"x")
            self.data[tp] += 1
        self._flush()  # new data may complete a waiting read

    @rule(server=st.sampled_from(SERVERS), timeout=st.integers(0, 15))
    def read(self, server: int, timeout: int) -> None:
        if server in self.owner.values():
            self.servers[server].read(timeout, self._handed)
            self._flush()

    @rule(dt=st.integers(1, 12))
    def advance(self, dt: int) -> None:
        self.now += dt
        for proxy in self.servers.values():
            proxy.advance(self.now)
        for key, (_, deadline) in list(self.holder.items()):
            if deadline <= self.now:
                del self.holder[key]
        self._flush()

    @precondition(lambda self: self.holder)
    @rule(data=st.data(), action=st.sampled_from(["acknowledge", "cancel", "reject", "renew"]))
    def act_on_a_held_record(self, data: st.DataObject, action: str) -> None:
        key = data.draw(st.sampled_from(sorted(self.holder)))
        delivery, _ = self.holder[key]
        proxy = self._owner_of(key)  # any reader's request goes to the partition's owner
        if action == "renew":
            self.holder[key] = (delivery, proxy.renew(*key, delivery))
        else:
            del self.holder[key]
            if action == "acknowledge":
                self.acked.add(key)
            getattr(proxy, action)(*key, delivery)
        self._flush()

    @precondition(lambda self: self.acked)
    @rule(data=st.data())
    def acknowledge_again(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.acked)))
        with pytest.raises(InvalidRecordStateError):
            self._owner_of(key).acknowledge(*key)

    @rule()
    def commit(self) -> None:
        for proxy in self.servers.values():
            self._commit(proxy)

    def _commit(self, proxy: ConsumeProxy) -> None:
        """The commit rule of one server: the data positions, then the log's."""
        for tp, position in proxy.commit().items():
            for offset in range(self.data_commit[tp], position):
                assert (tp, offset) in self.acked or (tp, offset) in self.archived
            self.data_commit[tp] = position
        self._flush()
        for tp, position in proxy.log.commit().items():
            for entry in self.log[tp][self.log_commit[tp] : position]:
                key = (tp, entry.offset)
                if entry.kind is LogEntryKind.PENDING:
                    assert self.holder.get(key, (0, 0))[0] != entry.delivery
                else:
                    assert entry.offset < self.data_commit[tp]
            self.log_commit[tp] = position

    @rule(tp=st.sampled_from(PARTITIONS))
    def move(self, tp: TopicPartition) -> None:
        """The group moves ``tp`` to the other server while both are alive: its owner commits
        what it may and stops serving it (a revocation); the other takes it over."""
        old = self.owner[tp]
        self._commit(self.servers[old])
        self.servers[old].revoke(tp)
        self._take_over(1 - old, tp)
        self._flush()

    @rule(server=st.sampled_from(SERVERS))
    def crash(self, server: int) -> None:
        """``server`` dies; the other takes its partitions over; it restarts empty."""
        self.servers[server] = self._server()
        for tp in PARTITIONS:
            if self.owner[tp] == server:
                self._take_over(1 - server, tp)
        self._flush()  # caught up, the other server may answer its waiting reads

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def a_held_record_is_pending_at_its_owner_under_its_lease(self) -> None:
        for key, (delivery, deadline) in self.holder.items():
            partition = self._owner_of(key).partition(key[0])
            assert partition.state(key[1]) is RecordState.PENDING
            assert partition.progress(key[1]).delivery == delivery
            assert partition.lease_deadline(key[1]) == deadline

    def teardown(self) -> None:
        """No record lost: read and acknowledge until every partition is committed."""
        for _ in range(LIMIT * 4):
            self.advance(LEASE)
            for server in SERVERS:
                for _ in range(sum(self.data.values())):
                    self.read(server, 0)
            for key in sorted(self.holder):
                self.act_on_a_held_record_now(key)
            self.commit()
        assert self.data_commit == self.data
        assert self.log_commit == {tp: len(entries) for tp, entries in self.log.items()}

    def act_on_a_held_record_now(self, key: Key) -> None:
        delivery, _ = self.holder.pop(key)
        self.acked.add(key)
        self._owner_of(key).acknowledge(*key, delivery)
        self._flush()


RecoveryMachine.TestCase.settings = settings(max_examples=120, stateful_step_count=50)
TestRecovery = RecoveryMachine.TestCase

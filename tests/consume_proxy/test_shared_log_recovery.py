"""A hypothesis state machine over three proxy servers sharing a state log the way the feeds
use it (``assign(..., tail=True)``): each server produces its entries and reads the log of the
partitions it holds at its own pace, and a reader's request may go to any server (one that
does not serve the partition forwards it through the log). Besides reads, acknowledgements,
cancels, rejects, renewals, expiries, fetches, commits and crashes (the outbox not produced
yet is lost), a partition moves while its owner is alive in two ways: a *revocation* (the
owner is told: it produces what it wrote, commits and stops) and a *steal* (it is not told,
as when its session ended unseen: it is a zombie until it reads the new owner's claim). A
zombie whose claim lands after the owner's (it was catching up when the partition moved)
fences the owner in turn; the owner, still the group's, claims the partition again
(*reclaim*, what the real feed does after a session timeout, by when a real zombie has
learned from the group that it lost the partition).

The group's coordinator takes commits from the partition's current owner only (the classic
protocol's generation check).

Invariants:
- the data commit passes only records some server acknowledged or archived;
- the log commit passes a Pending entry only if its delivery ended (no reader holds it under a
  running lease, or the record is finished), and an Acknowledged, Archived or applied request
  only for a record the data commit passed;
- fencing: a server never serves a partition past another server's later claim in what it
  has read;
- a record is held by two readers under running leases only if one of them got it from a
  zombie (a server the group no longer gives the partition), or from a server that lost the
  partition (crashed, or had it stolen) before that Pending entry reached the log (an
  orphan), or an orphan's request ended the other's delivery (the new owner numbers its
  deliveries of such a record afresh, so the orphan's delivery number can name its own);
- a record finished at its owner is never handed out again (but by a zombie), unless the
  owner lost the partition before the Acknowledged or Archived entry reached the log;
- nothing is lost: once zombies have read the log and readers acknowledge everything, every
  partition's data and log are committed to their ends.
"""

from __future__ import annotations

import contextlib

import attrs
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from consume_proxy import (
    FACTS,
    FINISHED,
    REQUESTS,
    ConsumeProxy,
    InvalidRecordStateError,
    LogEntry,
    LogEntryKind,
    Record,
)
from replica.types import TopicPartition

K = LogEntryKind
PARTITIONS = (TopicPartition("data", 0), TopicPartition("data", 1))
SERVERS = (0, 1, 2)
LEASE = 10
LIMIT = 3
_REQUEST = {"acknowledge": K.ACKNOWLEDGE_REQUEST, "cancel": K.CANCEL_REQUEST}
_REQUEST["reject"] = K.REJECT_REQUEST

Key = tuple[TopicPartition, int]


@attrs.define
class Holder:
    """A reader holding a record: from which server (writer), which delivery, until when,
    whether the hand-out came from a zombie, and whether its server lost the partition before
    its Pending entry reached the log (an orphan)."""

    writer: int
    delivery: int
    deadline: int
    zombie: bool
    orphan: bool = False


class SharedLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.writers = iter(range(1, 10_000))
        self.data = dict.fromkeys(PARTITIONS, 3)
        self.log: dict[TopicPartition, list[LogEntry]] = {tp: [] for tp in PARTITIONS}
        self.data_commit = dict.fromkeys(PARTITIONS, 0)
        self.log_commit = dict.fromkeys(PARTITIONS, 0)
        self.servers = {s: self._server() for s in SERVERS}
        self.read_to: dict[int, dict[TopicPartition, int]] = {s: {} for s in SERVERS}
        self.owner = dict.fromkeys(PARTITIONS, 0)
        self.holders: dict[Key, list[Holder]] = {}
        self.finished: set[Key] = set()
        self.at_owner: dict[Key, set[int]] = {}  # finished at the group's owner: its writers
        self.orphan_requests: set[tuple[Key, int]] = set()  # requests orphans sent
        for tp in PARTITIONS:
            self._assign(0, tp)
        self.settle(0)

    # -- the driver -------------------------------------------------------------------------

    def _server(self) -> ConsumeProxy:
        return ConsumeProxy(
            lease_duration=LEASE,
            delivery_count_limit=LIMIT,
            writer=next(self.writers),
            start=self.now,
        )

    def _assign(self, server: int, tp: TopicPartition) -> None:
        """The group gives ``tp`` to ``server`` (if it still holds it as a zombie, the
        revocation reaches it first)."""
        if tp in self.servers[server].served:
            self.servers[server].revoke(tp)
        self.servers[server].assign(
            tp, self.data_commit[tp], log_start=self.log_commit[tp], tail=True
        )
        self.read_to[server][tp] = self.log_commit[tp]
        self.owner[tp] = server

    def _orphan(self, server: int, tp: TopicPartition | None = None) -> None:
        """``server`` loses ``tp`` (None: everything) unseen: the deliveries it handed out
        whose Pending entries are not in the log are orphans, and the records it finished
        whose entries are not there are not known finished any more."""
        writer = self.servers[server].log.writer
        for key, writers in list(self.at_owner.items()):
            if (tp is None or key[0] == tp) and writer in writers:
                logged = any(
                    e.writer == writer and e.offset == key[1] and e.kind in FACTS
                    for e in self.log[key[0]]
                    if e.kind is not K.PENDING
                )
                if not logged:
                    writers.discard(writer)
                    if not writers:
                        del self.at_owner[key]
        for key, holders in self.holders.items():
            if tp is not None and key[0] != tp:
                continue
            logged = {
                e.delivery for e in self.log[key[0]] if e.writer == writer and e.offset == key[1]
            }
            for holder in holders:
                if holder.writer == writer and holder.delivery not in logged:
                    holder.orphan = True

    def _handed(self, server: int) -> object:
        proxy = self.servers[server]

        def got(record: Record | None) -> None:
            if record is None:
                return
            tp = TopicPartition(record.topic, record.partition)
            key = (tp, record.offset)
            zombie = self.owner[tp] != server
            assert zombie or key not in self.at_owner, (key, self.at_owner[key])
            orphan = (key, record.delivery_count) in self.orphan_requests
            holder = Holder(
                proxy.log.writer, record.delivery_count, record.lease_deadline, zombie, orphan
            )
            for other in self.holders.get(key, []):
                if other.deadline > self.now:  # two readers at once: someone is to blame
                    blamed = zombie or orphan or other.zombie or other.orphan
                    assert blamed, (key, other, holder)
            self.holders.setdefault(key, []).append(holder)

        return got

    def _observe(self) -> None:
        """What the servers finished (acknowledged or archived) joins the ground truth."""
        for server, proxy in self.servers.items():
            for tp in proxy.served:
                share = proxy.partition(tp)
                for offset in range(share.start_offset, share.end_offset):
                    if share.state(offset) in FINISHED:
                        self.finished.add((tp, offset))
                        if self.owner[tp] == server:
                            self.at_owner.setdefault((tp, offset), set()).add(proxy.log.writer)

    def _serving(self, server: int) -> list[TopicPartition]:
        proxy = self.servers[server]
        return [tp for tp in proxy.served if tp not in proxy.catching_up()]

    # -- rules ------------------------------------------------------------------------------

    @rule(tp=st.sampled_from(PARTITIONS), count=st.integers(1, 3))
    def append(self, tp: TopicPartition, count: int) -> None:
        self.data[tp] += count

    @rule(server=st.sampled_from(SERVERS))
    def fetch(self, server: int) -> None:
        proxy = self.servers[server]
        for tp in proxy.served:
            for offset in range(proxy.partition(tp).end_offset, self.data[tp]):
                proxy.append(tp, offset, None, b"%d" % offset)

    @rule(server=st.sampled_from(SERVERS))
    def produce(self, server: int) -> None:
        for entry in self.servers[server].poll_log():
            log = self.log[entry.tp]
            log.append(attrs.evolve(entry, position=len(log)))

    @rule(server=st.sampled_from(SERVERS))
    def follow(self, server: int) -> None:
        proxy = self.servers[server]
        reading = self.read_to[server]
        for tp in list(reading):
            for entry in self.log[tp][reading[tp] :]:
                if tp not in proxy.served:
                    break
                reading[tp] = entry.position + 1
                proxy.replay(entry)
            if tp not in proxy.served:  # fenced
                del reading[tp]
        self._observe()

    @rule(server=st.sampled_from(SERVERS))
    def settle(self, server: int) -> None:
        """The three above in a row: what a server's loops do when nothing is in the way."""
        self.produce(server)
        self.follow(server)
        self.fetch(server)

    @rule(server=st.sampled_from(SERVERS), timeout=st.integers(0, 15))
    def read(self, server: int, timeout: int) -> None:
        if self.servers[server].served:
            self.servers[server].read(timeout, self._handed(server))  # type: ignore[arg-type]

    @rule(dt=st.integers(1, 12))
    def advance(self, dt: int) -> None:
        self.now += dt
        for proxy in self.servers.values():
            proxy.advance(self.now)
        for key, holders in list(self.holders.items()):
            holders[:] = [h for h in holders if h.deadline > self.now]
            if not holders:
                del self.holders[key]
        self._observe()

    @precondition(lambda self: self.holders)
    @rule(
        data=st.data(),
        action=st.sampled_from(["acknowledge", "cancel", "reject", "renew"]),
        via=st.sampled_from(SERVERS),
    )
    def act(self, data: st.DataObject, action: str, via: int) -> None:
        """A reader's request, sent to ``via``: applied there if it serves the partition, else
        forwarded to the owner (a renew is not forwarded)."""
        key = data.draw(st.sampled_from(sorted(self.holders)))
        holder = data.draw(st.sampled_from(self.holders[key]))
        tp, offset = key
        if holder.orphan and action != "renew":  # it may end a delivery of the same number,
            self.orphan_requests.add((key, holder.delivery))  # now or when it arrives
            for other in self.holders[key]:
                other.orphan |= other.delivery == holder.delivery
        proxy = self.servers[via]
        if action == "renew":
            if tp in self._serving(via):
                with contextlib.suppress(InvalidRecordStateError, LookupError):
                    holder.deadline = proxy.renew(tp, offset, holder.delivery)
            return
        self._drop(key, holder)  # the reader is done with it, whatever the answer
        if tp not in self._serving(via):
            proxy.forward(_REQUEST[action], tp, offset, holder.delivery)
            return
        with contextlib.suppress(InvalidRecordStateError, LookupError):
            getattr(proxy, action)(tp, offset, holder.delivery)  # refused: lease over, ...
        self._observe()

    def _drop(self, key: Key, holder: Holder) -> None:
        self.holders[key].remove(holder)
        if not self.holders[key]:
            del self.holders[key]

    @rule(server=st.sampled_from(SERVERS))
    def commit(self, server: int) -> None:
        self._commit(server)

    def _commit(self, server: int) -> None:
        """The server's commit rules; the coordinator takes only its owned partitions."""
        proxy = self.servers[server]
        self._observe()
        for tp, position in proxy.commit().items():
            if self.owner[tp] != server or position <= self.data_commit[tp]:
                continue
            for offset in range(self.data_commit[tp], position):
                assert (tp, offset) in self.finished
            self.data_commit[tp] = position
        for tp, position in proxy.log.commit().items():
            if self.owner[tp] != server or position <= self.log_commit[tp]:
                continue
            for entry in self.log[tp][self.log_commit[tp] : position]:
                key = (tp, entry.offset)
                if entry.kind is K.PENDING:
                    held = any(
                        (h.writer, h.delivery) == (entry.writer, entry.delivery)
                        for h in self.holders.get(key, [])
                    )
                    assert not held or key in self.finished, entry
                elif entry.kind in REQUESTS and entry.kind is not K.CANCEL_REQUEST:
                    continue  # applied (open until committed past) or refused (settled)
                elif entry.kind is not K.CLAIM and entry.kind is not K.CANCEL_REQUEST:
                    assert entry.offset < self.data_commit[tp], entry
            self.log_commit[tp] = position

    def _move_to(self, tp: TopicPartition) -> int:
        return (self.owner[tp] + 1) % len(SERVERS)

    @rule(tp=st.sampled_from(PARTITIONS))
    def revoke(self, tp: TopicPartition) -> None:
        """The group moves ``tp`` and its owner is told: it produces what it wrote, commits
        and stops serving it; the next server takes it over."""
        old = self.owner[tp]
        self.produce(old)
        self._commit(old)
        if tp in self.servers[old].served:
            self.servers[old].revoke(tp)
        self.read_to[old].pop(tp, None)
        self._assign(self._move_to(tp), tp)

    @rule(tp=st.sampled_from(PARTITIONS))
    def steal(self, tp: TopicPartition) -> None:
        """The group moves ``tp`` and its owner is not told: it serves on, a zombie."""
        self._orphan(self.owner[tp], tp)
        self._assign(self._move_to(tp), tp)

    @rule(server=st.sampled_from(SERVERS))
    def reclaim(self, server: int) -> None:
        """The group's owner of a partition it was fenced from claims it again."""
        for tp in PARTITIONS:
            if self.owner[tp] == server and tp not in self.servers[server].served:
                self._assign(server, tp)

    @rule(server=st.sampled_from(SERVERS))
    def crash(self, server: int) -> None:
        """``server`` dies (what it had not produced is lost) and restarts empty; the group
        gives its partitions to the next server."""
        self._orphan(server)
        self.servers[server] = self._server()
        self.read_to[server] = {}
        for tp in PARTITIONS:
            if self.owner[tp] == server:
                self._assign((server + 1) % len(SERVERS), tp)

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def no_server_serves_past_a_later_claim_it_has_read(self) -> None:
        for server in SERVERS:
            writer = self.servers[server].log.writer
            for tp in self._serving(server):
                read = self.log[tp][: self.read_to[server][tp]]
                claims = [e.writer for e in read if e.kind is K.CLAIM]
                assert claims and claims[-1] == writer

    def teardown(self) -> None:
        """No record lost: every server reads the log (zombies are fenced), readers take and
        acknowledge everything, and the owners commit it all, data and log."""
        for _ in range(LIMIT * 6):
            for server in SERVERS:
                self.produce(server)
                self.follow(server)
                self.reclaim(server)
                self.fetch(server)
            for server in SERVERS:
                for _ in range(sum(self.data.values())):
                    self.read(server, 0)
            for key in sorted(self.holders):
                for holder in list(self.holders.get(key, [])):
                    owner = self.owner[key[0]]
                    if key[0] in self._serving(owner):
                        with contextlib.suppress(InvalidRecordStateError, LookupError):
                            self.servers[owner].acknowledge(*key, holder.delivery)
                    self._drop(key, holder)
            for server in SERVERS:
                self.produce(server)
                self.follow(server)
                self._commit(server)
            self.advance(LEASE)
        assert self.data_commit == self.data
        assert self.log_commit == {tp: len(entries) for tp, entries in self.log.items()}


SharedLogMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=60)
TestSharedLogRecovery = SharedLogMachine.TestCase

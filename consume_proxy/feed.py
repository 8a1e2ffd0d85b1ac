"""Feed: the Kafka side of one proxy server, sans-IO; what both feeds drive.

A proxy server reads two topics and writes two or three. It is assigned partitions of the
*data topic* by its consumer group; for each it reads the partition's log partition of the
*state log topic* (``log_topic``, partitioned like the data topic: data partition ``p`` keeps
its state in log partition ``p``) for as long as it owns the partition (a shared log, see
:mod:`consume_proxy.proxy`). It writes the state log (its own entries, and requests forwarded
to other servers' partitions), the group's committed offsets of both topics, and, when
``dead_letter_topic`` is set, each record archived by the delivery-count limit or a Reject (to
partition ``p`` of that topic, which needs at least as many partitions as the data topic).

This class is what a driver does with a Kafka client, minus the client. The driver (the
in-process :class:`~consume_proxy.cluster_feed.ClusterFeed`, the real
:class:`~consume_proxy.kafka_feed.KafkaFeed`) moves bytes and calls:

* :meth:`Feed.assign` with a partition's committed data and log offsets, then reads the log
  partition from :meth:`Feed.log_position` and fetches the data from
  :meth:`Feed.fetch_position`, passing what it gets to :meth:`Feed.log` and
  :meth:`Feed.data`; :meth:`Feed.revoke` (it returns the last commit, to be sent at once) or
  :meth:`Feed.lose` when the group takes the partition away. A partition can also be taken
  away by the log: a newer owner's claim fences it (:meth:`Feed.take_fenced` says which, so
  that the driver stops reading them).
* :meth:`Feed.batches`: what to produce now, each batch to one partition, in order, with
  acks=all; at most one batch per partition is in flight, and one that failed is sent again
  before anything later (:meth:`Feed.produced`), so each writer's entries land in the order
  written.
* :meth:`Feed.commits`: the offsets to commit now for the group, data and log positions in
  ONE OffsetCommit, so that the log's commit (which relies on the data's, the seed's second
  condition) never lands without it; one commit in flight (:meth:`Feed.committed`), positions
  a failed commit carried are sent again. A partition's commit does not pass a record whose
  dead letter has not been produced yet (its data and log positions are held back together,
  at the last pair computed before that record was archived). So a record the log says was
  archived, at or past the committed position, may not have its dead letter yet: a server
  catching up produces it again once it has the record (dead letters are at least once).
* :meth:`Feed.flow`: the data fetches to pause (a partition holding ``window`` fetched,
  uncommitted records) and to resume (down to half, from the proxy's end).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection, Iterable, Mapping

import attrs

from consume_proxy.errors import LogFormatError
from consume_proxy.log_format import decode_entry, encode_entry
from consume_proxy.proxy import ConsumeProxy
from consume_proxy.record_state import Record
from consume_proxy.state_log import LogEntryKind
from replica.types import TopicPartition

__all__ = [
    "DEAD_LETTER_HEADERS",
    "DEFAULT_LOG_TOPIC",
    "DEFAULT_WINDOW",
    "Batch",
    "Feed",
    "Flow",
    "OutRecord",
]

DEFAULT_LOG_TOPIC = "__consume_proxy_state"
"""The state log topic's name unless one is given."""
DEFAULT_WINDOW = 10_000
"""Records a partition may have in the proxy (fetched, not committed) before its fetching is
paused."""
DEAD_LETTER_HEADERS = (
    "consume_proxy.topic",
    "consume_proxy.partition",
    "consume_proxy.offset",
    "consume_proxy.delivery_count",
)
"""The headers of a dead letter: where the record came from and how often it was delivered,
as ASCII decimal strings (the topic as UTF-8)."""

Fetched = Iterable[tuple[int, bytes | None, bytes | None]]
"""Records as a driver passes them: (offset, key, value), in offset order."""


@attrs.frozen
class OutRecord:
    """A record to produce."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


@attrs.frozen(eq=False)
class Batch:
    """Records to produce, in this order, to ``tp`` with acks=all; tell the feed how it went
    (:meth:`Feed.produced`). Batches compare by identity."""

    tp: TopicPartition
    records: tuple[OutRecord, ...]


@attrs.frozen
class Flow:
    """The data fetches to pause, and those to resume from the given offset."""

    pause: list[TopicPartition]
    resume: dict[TopicPartition, int]


@attrs.define
class _Outgoing:
    """What waits to be produced to one partition: records, and for each the dead letter it
    is (the data partition and offset), if it is one."""

    unsent: list[tuple[OutRecord, tuple[TopicPartition, int] | None]] = attrs.Factory(list)
    in_flight: Batch | None = None
    sent: list[tuple[OutRecord, tuple[TopicPartition, int] | None]] = attrs.Factory(list)


class Feed:
    """The Kafka side of ``proxy`` (see the module docstring). ``proxy`` must have a writer
    id (servers sharing a log need distinct ones). With ``dead_letter_topic`` the feed wraps
    ``proxy.dead_letter``: archived records are produced there, then passed on to the sink
    the proxy had."""

    def __init__(
        self,
        proxy: ConsumeProxy,
        *,
        log_topic: str = DEFAULT_LOG_TOPIC,
        dead_letter_topic: str | None = None,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self.proxy = proxy
        self.log_topic = log_topic
        self.dead_letter_topic = dead_letter_topic
        self.window = window
        self.bad_log_records = 0
        """Records of the log topic that were not state-log entries (skipped)."""
        self._log_next: dict[TopicPartition, int] = {}  # owned partitions: next log position
        self._fenced: list[TopicPartition] = []
        self._paused: set[TopicPartition] = set()
        self._outgoing: dict[TopicPartition, _Outgoing] = {}
        self._dead: dict[TopicPartition, list[int]] = {}  # dead letters not produced yet
        self._archived_before: dict[TopicPartition, dict[int, int]] = {}  # -> delivery
        self._snapshots: dict[TopicPartition, list[tuple[int, int]]] = {}  # (data, log)
        self._confirmed: dict[TopicPartition, int] = {}  # positions the group has
        self._committing: dict[TopicPartition, int] | None = None
        if dead_letter_topic is not None:
            self._sink: Callable[[Record], object] | None = proxy.dead_letter
            proxy.dead_letter = self._archived

    def log_partition(self, tp: TopicPartition) -> TopicPartition:
        """The log partition holding the state of data partition ``tp``."""
        return TopicPartition(self.log_topic, tp.partition)

    @property
    def owned(self) -> list[TopicPartition]:
        """The data partitions this feed reads (catching up or served)."""
        return list(self._log_next)

    # -- assignment -------------------------------------------------------------------------

    def assign(self, tp: TopicPartition, committed: int, log_committed: int) -> None:
        """``tp`` was assigned; the group has committed ``committed`` for it and
        ``log_committed`` for its log partition (each the log's start offset, >= 0, when
        nothing is committed). The proxy catches up on the log from there (see
        :meth:`ConsumeProxy.assign <consume_proxy.ConsumeProxy.assign>`, ``tail``)."""
        self.proxy.assign(tp, committed, log_start=log_committed, tail=True)
        self._log_next[tp] = log_committed
        self._confirmed[tp] = committed
        self._confirmed[self.log_partition(tp)] = log_committed

    def revoke(self, tp: TopicPartition) -> dict[TopicPartition, int]:
        """The group moved ``tp`` away: the proxy stops serving it; returns the positions of
        ``tp`` and its log partition to commit now (the driver sends them before the
        partition is reassigned). Its log entries and dead letters are still produced."""
        if tp not in self._log_next:
            return {}
        due = self.positions(tp)
        self.proxy.revoke(tp)
        self._forget(tp)
        return due

    def positions(self, tp: TopicPartition) -> dict[TopicPartition, int]:
        """The positions of ``tp`` and its log partition that may be committed now (empty
        while it catches up), whether or not the group has them already."""
        if tp not in self._log_next:
            return {}
        self._refresh()
        chosen = self._chosen(tp)
        return {} if chosen is None else {tp: chosen[0], self.log_partition(tp): chosen[1]}

    def lose(self, tp: TopicPartition) -> None:
        """``tp`` was lost (the group's session ended): the proxy stops serving it, nothing
        is committed."""
        if tp in self._log_next:
            self.proxy.revoke(tp)
            self._forget(tp)

    def take_fenced(self) -> list[TopicPartition]:
        """The partitions fenced by a newer owner's claim since the last call: the proxy no
        longer serves them; the driver stops reading their data and log."""
        fenced, self._fenced = self._fenced, []
        return fenced

    @property
    def paused(self) -> frozenset[TopicPartition]:
        """The partitions whose data fetching is paused (:meth:`flow`)."""
        return frozenset(self._paused)

    def log_position(self, tp: TopicPartition) -> int:
        """The next position to read of ``tp``'s log partition."""
        return self._log_next[tp]

    def fetch_position(self, tp: TopicPartition) -> int:
        """The next data offset to fetch for ``tp``: the end of what the proxy has."""
        return self.proxy.partition(tp).end_offset

    # -- input ------------------------------------------------------------------------------

    def data(self, tp: TopicPartition, records: Fetched) -> int:
        """Records fetched from data partition ``tp``: appended to the proxy (those it has
        already, and any of a partition not owned here, are skipped). Returns how many were
        appended."""
        if tp not in self._log_next:
            return 0
        partition = self.proxy.partition(tp)
        again = self._archived_before.get(tp)
        appended = 0
        for offset, key, value in records:
            if offset >= partition.end_offset:
                self.proxy.append(tp, offset, key, value)
                appended += 1
                if again and offset in again:
                    self._dead_letter(tp, offset, key, value, again.pop(offset))
        if again:  # what the data skipped (holes) has no dead letter
            for offset in [o for o in again if o < partition.end_offset]:
                del again[offset]
        return appended

    def log(self, tp: TopicPartition, records: Fetched) -> None:
        """Records read from the log partition of ``tp``, with their positions: each entry is
        replayed into the proxy (positions read already are skipped; a record that is not an
        entry about ``tp`` is counted in :attr:`bad_log_records` and skipped). If an entry
        fences ``tp``, the rest is dropped."""
        for position, key, value in records:
            if tp not in self._log_next:
                return
            if position < self._log_next[tp]:
                continue
            self._log_next[tp] = position + 1
            try:
                entry = decode_entry(key, value, position)
            except LogFormatError:
                self.bad_log_records += 1
                continue
            if entry.tp != tp:
                self.bad_log_records += 1
                continue
            if entry.kind is LogEntryKind.ARCHIVED and tp in self.proxy.catching_up():
                self._archived_earlier(tp, entry.offset, entry.delivery)
            self.proxy.replay(entry)
            if tp not in self.proxy.served:
                self._forget(tp)
                self._fenced.append(tp)

    # -- output -----------------------------------------------------------------------------

    def batches(self) -> list[Batch]:
        """What to produce now: per partition, what waits there, unless a batch to it is in
        flight."""
        self._take_log()
        batches = []
        for tp, out in self._outgoing.items():
            if out.unsent and out.in_flight is None:
                out.in_flight = Batch(tp, tuple(record for record, _ in out.unsent))
                out.sent, out.unsent = out.unsent, []
                batches.append(out.in_flight)
        return batches

    def produced(self, batch: Batch, ok: bool) -> None:
        """The outcome of producing ``batch``: all of it acknowledged, or not (then all of it
        is sent again, before anything queued since)."""
        out = self._outgoing[batch.tp]
        if out.in_flight is not batch:
            raise ValueError(f"{batch.tp}: this batch is not the one in flight")
        out.in_flight = None
        sent, out.sent = out.sent, []
        if not ok:
            out.unsent[:0] = sent
            return
        for _, dead in sent:
            if dead is not None:
                self._dead[dead[0]].remove(dead[1])

    def unproduced(self) -> int:
        """How many records, to every destination together, wait to be produced (the proxy's
        new log entries included: this queues them) or are in flight: what a server stopping
        now leaves unwritten."""
        self._take_log()
        return sum(len(out.unsent) + len(out.sent) for out in self._outgoing.values())

    def _take_log(self) -> None:
        """Queue the proxy's new log entries, each for its log partition."""
        for entry in self.proxy.poll_log():
            key, value = encode_entry(entry)
            self._queue(self.log_partition(entry.tp), OutRecord(key, value), None)

    def waiting(self, tp: TopicPartition) -> bool:
        """True while records for partition ``tp`` (a destination: a log or dead-letter
        partition) wait to be produced or are in flight (the proxy's new entries count once
        :meth:`batches` has taken them)."""
        out = self._outgoing.get(tp)
        return out is not None and (bool(out.unsent) or out.in_flight is not None)

    def commits(self) -> dict[TopicPartition, int]:
        """The data and log positions to commit now in one OffsetCommit (empty when nothing
        moved, or while a commit is in flight); report the outcome with :meth:`committed`."""
        self._refresh()
        if self._committing is not None:
            return {}
        due = {}
        for tp in self._snapshots:
            chosen = self._chosen(tp)
            if chosen is None:
                continue
            for target, position in ((tp, chosen[0]), (self.log_partition(tp), chosen[1])):
                if position > self._confirmed.get(target, 0):
                    due[target] = position
        if due:
            self._committing = due
        return due

    def committed(
        self, offsets: Mapping[TopicPartition, int], failed: Collection[TopicPartition] = ()
    ) -> None:
        """The OffsetCommit of ``offsets`` (what :meth:`commits` or :meth:`revoke` returned)
        was answered; the partitions in ``failed`` were refused (if the whole request failed,
        pass them all)."""
        if offsets == self._committing:
            self._committing = None
        for tp, position in offsets.items():
            if tp not in failed and tp in self._confirmed:
                self._confirmed[tp] = max(self._confirmed[tp], position)

    def flow(self) -> Flow:
        """Fetches to pause (``window`` records held) and to resume (half of it), see the
        module docstring."""
        pause, resume = [], {}
        for tp in self._log_next:
            partition = self.proxy.partition(tp)
            held = partition.end_offset - partition.start_offset
            if tp not in self._paused and held >= self.window:
                self._paused.add(tp)
                pause.append(tp)
            elif tp in self._paused and held <= self.window // 2:
                self._paused.discard(tp)
                resume[tp] = partition.end_offset
        return Flow(pause, resume)

    # -- internals ----------------------------------------------------------------------------

    def _archived(self, record: Record) -> None:
        """The proxy archived ``record``: its dead letter."""
        tp = TopicPartition(record.topic, record.partition)
        self._dead_letter(tp, record.offset, record.key, record.value, record.delivery_count)
        if self._sink is not None:
            self._sink(record)

    def _archived_earlier(self, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Catching up, the log says ``offset`` was archived; unless the data commit passed
        it, its dead letter may not have been produced: again, once the record is here."""
        if self.dead_letter_topic is None:
            return
        partition = self.proxy.partition(tp)
        if offset < partition.start_offset:
            return
        fetched = partition.fetched(offset)
        if fetched is not None:
            self._dead_letter(tp, offset, *fetched, delivery)
        elif offset >= partition.end_offset:
            self._archived_before.setdefault(tp, {})[offset] = delivery

    def _dead_letter(
        self,
        tp: TopicPartition,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        delivery: int,
    ) -> None:
        """Queue the dead letter of record ``offset`` of ``tp``; hold its commit back."""
        assert self.dead_letter_topic is not None
        values = (tp.topic, tp.partition, offset, delivery)
        named = zip(DEAD_LETTER_HEADERS, values, strict=True)
        headers = tuple((name, str(value).encode()) for name, value in named)
        dead_tp = TopicPartition(self.dead_letter_topic, tp.partition)
        self._queue(dead_tp, OutRecord(key, value, headers), (tp, offset))
        self._dead.setdefault(tp, []).append(offset)

    def _queue(
        self, tp: TopicPartition, record: OutRecord, dead: tuple[TopicPartition, int] | None
    ) -> None:
        self._outgoing.setdefault(tp, _Outgoing()).unsent.append((record, dead))

    def _refresh(self) -> None:
        """Run the proxy's two commit rules; remember each served partition's new (data, log)
        pair."""
        proxy = self.proxy
        proxy.commit()
        proxy.log.commit()
        catching_up = set(proxy.catching_up())
        for tp in self._log_next:
            if tp in catching_up:
                continue
            pair = (proxy.partition(tp).start_offset, proxy.log.committed(tp))
            pairs = self._snapshots.setdefault(tp, [])
            if not pairs or pairs[-1] != pair:
                pairs.append(pair)

    def _chosen(self, tp: TopicPartition) -> tuple[int, int] | None:
        """The latest (data, log) pair of ``tp`` that passes no dead letter still unsent;
        older pairs are dropped."""
        pairs = self._snapshots.get(tp)
        if not pairs:
            return None
        dead = self._dead.get(tp)
        hold = min(dead) if dead else None
        count = len(pairs) if hold is None else bisect.bisect_right(pairs, (hold, 2**63))
        if not count:
            return None
        del pairs[: count - 1]
        return pairs[0]

    def _forget(self, tp: TopicPartition) -> None:
        """``tp`` is no longer served here: stop reading and committing it (what waits to be
        produced for it still is)."""
        del self._log_next[tp]
        self._paused.discard(tp)
        self._archived_before.pop(tp, None)
        self._snapshots.pop(tp, None)
        self._confirmed.pop(tp, None)
        self._confirmed.pop(self.log_partition(tp), None)

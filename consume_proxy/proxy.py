"""ConsumeProxy: Read / Acknowledge / Cancel over the partitions one server serves.

The sans-IO core of the consume proxy (seed 001, after KIP-932's share groups). The driver
feeds it records fetched from the data topic (:meth:`ConsumeProxy.append`), passes client
requests in, moves time with :meth:`ConsumeProxy.advance`, and takes out what must go to
Kafka: data-topic commits (:meth:`ConsumeProxy.commit`), log entries
(:meth:`ConsumeProxy.poll_log`) and the log's commit position.

A Read is a :class:`DelayedRead` in the proxy's purgatory, watched under each partition the
proxy serves when it arrives (as a Kafka fetch names its partitions). It completes with the
lowest available record of one of them, or with None at its timeout. Whatever makes a record
available checks the waiting reads of its partition: new data, a Cancel, a lease expiring.
The purgatory tries waiting reads in arrival order and the first one satisfied takes the
record in its completion, so exactly one reader gets each delivery. A read tries the
partitions round-robin, starting after the one the previous read was served from.

Leases are timers on the purgatory's own timing wheel (as KIP-932's acquisition locks are on
the broker's timer): one wheel, one :meth:`advance`, one :meth:`next_deadline` for the
driver to sleep on.

**Catch-up.** A partition assigned with a ``log_start`` (the committed offset of its log
partition) is in catch-up mode, the seed's start-up: the driver reads the log partition from
there to its end and passes each entry to :meth:`ConsumeProxy.replay`, which joins it into the
consumer's copy of the state (a :class:`~consume_proxy.state_map.StateMap`); records fetched
meanwhile are appended as usual. :meth:`ConsumeProxy.caught_up` merges that copy into the
server's (the CRDT join), settles the replayed entries it supersedes, and starts serving the
partition: records the log says were acknowledged or archived are never handed out again, and
pending ones stay pending under their logged lease until its deadline. Reads wait while no
partition serves, and wake when one is caught up.

**A shared log** (``assign(..., tail=True)``, what the feeds use). The log partition then has
other writers besides its owner, and the owner reads it for as long as it owns the partition,
passing every entry to :meth:`ConsumeProxy.replay`, its own included:

* *Catch-up ends at the claim.* Assigning writes a CLAIM entry; catch-up is over when the
  proxy reads its own claim back (everything before it has been read), with no need for the
  driver to know where the log ends.
* *Requests from any server.* A server asked to acknowledge, cancel or reject a record of a
  partition it does not serve forwards the request through the log
  (:meth:`ConsumeProxy.forward`); the owner reads it and applies it as if its client had
  asked, with the delivery the client named (a request for a record not fetched yet waits for
  it). A request that fails (the lease ended, the record is finished) changes nothing.
* *Fencing.* After its claim the owner follows the log: another writer's facts (a previous
  owner that has not noticed the move) are merged into its copy, and another writer's CLAIM
  means the partition has a newer owner: the proxy revokes it at once (it is *fenced*) and
  hands nothing more out from it. The newer owner merges the late entries of the fenced one,
  so a record it handed out before noticing keeps its lease.

Servers sharing a log need distinct writer ids (``writer``), which tell their claims apart.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import attrs

from consume_proxy.errors import (
    InvalidProxyConfigError,
    InvalidRecordStateError,
    UnknownPartitionError,
)
from consume_proxy.record_state import Record, RecordState
from consume_proxy.share_partition import SharePartition
from consume_proxy.state_log import REQUESTS, LogEntry, LogEntryKind, StateLog
from consume_proxy.state_map import StateMap
from purgatory.delayed_operation import DelayedOperation
from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from replica.types import TopicPartition

__all__ = [
    "DEFAULT_DELIVERY_COUNT_LIMIT",
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_MAX_RECORD_LOCKS",
    "MAX_WRITER",
    "ConsumeProxy",
    "DelayedRead",
    "ProxyCounts",
]

DEFAULT_LEASE_DURATION = 30_000
"""The ack timeout in time units (KIP-932's group.share.record.lock.duration.ms)."""

DEFAULT_DELIVERY_COUNT_LIMIT = 5
"""Deliveries before a record is archived (KIP-932's group.share.delivery.count.limit)."""

DEFAULT_MAX_RECORD_LOCKS = 200
"""The real server's bound on a partition's PENDING records (KIP-932's
group.share.partition.max.record.locks, 200 in Kafka 4.0); the core has none unless given."""

MAX_WRITER = 2**63 - 1
"""The largest writer id (an int64 in the log's bytes)."""

_K = LogEntryKind


@attrs.define
class ProxyCounts:
    """What a proxy did with the shared log: requests it forwarded to other servers, requests
    forwarded to it that it applied or refused, and partitions it was fenced from."""

    forwarded: int = 0
    applied: int = 0
    refused: int = 0
    fenced: int = 0


class DelayedRead(DelayedOperation):
    """A waiting Read(timeout): completes with a record, or with None at its timeout, and
    calls ``callback`` with it exactly once."""

    __slots__ = ("_callback", "_partitions", "_proxy", "_source")

    def __init__(
        self,
        proxy: ConsumeProxy,
        partitions: list[SharePartition],
        timeout: int,
        callback: Callable[[Record | None], object],
    ) -> None:
        super().__init__(timeout)
        self._proxy = proxy
        self._partitions = partitions
        self._callback = callback
        self._source: SharePartition | None = None

    def try_complete(self) -> bool:
        for partition in self._partitions:
            if partition.has_available:
                self._source = partition
                return self.force_complete()
        return False

    def try_complete_for_key(self, key: Hashable) -> bool:
        partition = self._proxy._partitions.get(key)
        if partition is None or not partition.has_available:
            return False
        self._source = partition
        return self.force_complete()

    def on_complete(self) -> None:
        source = self._source
        record = None
        if source is not None and not self.is_expired:
            record = source.acquire()
            if record is not None:
                self._proxy._handed_out(source, record)
        self._callback(record)


class ConsumeProxy:
    """The consume proxy of one server (see the module docstring).

    Time is an integer in the caller's units (milliseconds by default), starting at
    ``start``. ``dead_letter`` receives each archived record (KIP-932 archives; SQS moves to
    a dead-letter queue); it is an attribute a driver may wrap. ``max_record_locks`` bounds
    the PENDING records of each partition (KIP-932's group.share.partition.max.record.locks;
    None: no bound). ``writer`` is the id this proxy's log entries carry (0 to
    :data:`MAX_WRITER`; servers sharing a log need distinct non-zero ids). Raises
    InvalidProxyConfigError unless ``lease_duration``, ``delivery_count_limit`` and
    ``max_record_locks`` are ints >= 1 and ``writer`` is in range.
    """

    def __init__(
        self,
        *,
        lease_duration: int = DEFAULT_LEASE_DURATION,
        delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT,
        dead_letter: Callable[[Record], object] | None = None,
        max_record_locks: int | None = None,
        writer: int = 0,
        start: int = 0,
    ) -> None:
        for name, value in (
            ("lease_duration", lease_duration),
            ("delivery_count_limit", delivery_count_limit),
            ("max_record_locks", 1 if max_record_locks is None else max_record_locks),
        ):
            if type(value) is not int or value < 1:
                raise InvalidProxyConfigError(f"{name} must be an int >= 1, got {value!r}")
        if type(writer) is not int or not 0 <= writer <= MAX_WRITER:
            raise InvalidProxyConfigError(f"writer must be an int 0 to 2**63-1, got {writer!r}")
        self.lease_duration = lease_duration
        self.delivery_count_limit = delivery_count_limit
        self.max_record_locks = max_record_locks
        self.dead_letter = dead_letter
        self._reads: DelayedOperationPurgatory[DelayedRead] = DelayedOperationPurgatory(
            "Read", start=start
        )
        self._partitions: dict[Hashable, SharePartition] = {}
        self._order: list[SharePartition] = []  # round-robin order of the served partitions
        self._next = 0
        self._consumer: dict[TopicPartition, StateMap] = {}  # the copies read while catching up
        self._requests: dict[TopicPartition, list[LogEntry]] = {}  # read while catching up
        self._deferred: dict[TopicPartition, list[LogEntry]] = {}  # for records not fetched
        self._claims: dict[TopicPartition, int] = {}  # shared-log partitions: own claim's sequence
        self.log = StateLog(writer)
        self.counts = ProxyCounts()

    # -- assignment and data ----------------------------------------------------------------

    def assign(
        self,
        tp: TopicPartition,
        start_offset: int,
        *,
        log_start: int | None = None,
        tail: bool = False,
    ) -> None:
        """Serve ``tp`` from its committed position ``start_offset`` (an int >= 0).

        With ``log_start``, the committed offset of ``tp``'s log partition, the partition
        catches up first (see the module docstring): it serves after :meth:`caught_up`, or,
        with ``tail`` (a shared log, read for as long as ``tp`` is served), once its claim,
        written now, is read back. Without, there is no log to read: it serves at once and
        its log starts at 0. Raises InvalidProxyConfigError for a bad offset, a partition
        served already, or ``tail`` without ``log_start`` or with writer 0."""
        for name, value in (("start_offset", start_offset), ("log_start", log_start)):
            if value is not None and (type(value) is not int or value < 0):
                raise InvalidProxyConfigError(f"{name} must be an int >= 0, got {value!r}")
        if tp in self._partitions:
            raise InvalidProxyConfigError(f"{tp} is served already")
        if tail and (log_start is None or not self.log.writer):
            raise InvalidProxyConfigError("a shared log needs a log_start and a writer id > 0")
        partition = SharePartition(
            tp,
            start_offset,
            timer=self._reads.timer,
            now=self.now,
            lease_duration=self.lease_duration,
            delivery_count_limit=self.delivery_count_limit,
            on_available=self._reads.check_and_complete,
            on_archive=self._archived,
            on_delivery_end=self.log.delivery_ended,
            max_record_locks=self.max_record_locks,
        )
        self._partitions[tp] = partition
        self._order.append(partition)
        self.log.open(tp, 0 if log_start is None else log_start, tail=tail)
        if log_start is not None:
            partition.serving = False
            self._consumer[tp] = StateMap.of(start_offset)
            self._requests[tp] = []
        if tail:
            self._claims[tp] = self.log.claim(tp, start_offset).sequence

    def replay(self, entry: LogEntry) -> None:
        """An entry read from the log partition of ``entry.tp``.

        While the partition catches up, a fact is joined into the consumer's copy of the
        state and a request kept until it is caught up; on a shared log the partition is
        caught up when this is its own claim. After that (shared logs only) the entry is
        followed: another writer's fact is merged into the server's copy, a request applied,
        another writer's claim fences the partition (see the module docstring). A copy of an
        entry read before is ignored. Raises UnknownPartitionError unless the partition is
        catching up or served on a shared log."""
        tp = entry.tp
        consumer = self._consumer.get(tp)
        claim = self._claims.get(tp)
        if consumer is None and claim is None:
            raise UnknownPartitionError(f"{tp} is not catching up here")
        if not self.log.read(entry):
            return
        if consumer is None:
            self._follow(self._partitions[tp], entry)
        elif entry.kind is _K.CLAIM:
            if (entry.writer, entry.sequence) == (self.log.writer, claim):
                self._serve(tp, entry.position + 1)
        elif entry.kind in REQUESTS:
            self._requests[tp].append(entry)
        else:
            consumer.add(entry.offset, entry.progress)
            self.log.replayed(entry)

    def caught_up(self, tp: TopicPartition, log_end: int) -> None:
        """The log partition of ``tp`` has been read to ``log_end``: merge the consumer's
        copy into the server's, apply the requests read, and serve ``tp`` (new log entries go
        at ``log_end``). Raises UnknownPartitionError unless ``tp`` catches up, and not on a
        shared log (which is caught up at its claim)."""
        if tp not in self._consumer or tp in self._claims:
            raise UnknownPartitionError(f"{tp} is not catching up here (or its log is shared)")
        self._serve(tp, log_end)

    def forward(
        self, kind: LogEntryKind, tp: TopicPartition, offset: int, delivery: int | None = None
    ) -> None:
        """Forward a client's request (``kind``: ACKNOWLEDGE_REQUEST, CANCEL_REQUEST or
        REJECT_REQUEST) for a partition this proxy does not serve to its owner, through the
        log (:meth:`poll_log`); ``delivery`` as in :meth:`acknowledge`. Whether the owner
        applies it is not known here. A partition this proxy is catching up on on a shared
        log may be forwarded to as well: the request lands after its claim, and it applies
        the request itself once caught up. Raises InvalidProxyConfigError if ``tp`` is served
        here otherwise (ask directly), ``kind`` is not a request, or the offset or delivery
        is out of range."""
        if tp in self._partitions and not (tp in self._claims and tp in self._consumer):
            raise InvalidProxyConfigError(f"{tp} is served here: no need to forward")
        if kind not in REQUESTS:
            raise InvalidProxyConfigError(f"only a request can be forwarded, not {kind}")
        if not (0 <= offset < 2**63 and (delivery is None or 1 <= delivery < 2**31)):
            raise InvalidProxyConfigError(f"bad offset {offset!r} or delivery {delivery!r}")
        self.log.forward(kind, tp, offset, delivery or 0)
        self.counts.forwarded += 1

    def catching_up(self) -> list[TopicPartition]:
        """The partitions assigned but not caught up yet."""
        return list(self._consumer)

    def revoke(self, tp: TopicPartition) -> None:
        """Stop serving ``tp`` (its partition moved to another server): its state map is
        forgotten, its leases cancelled without ending their deliveries, and requests naming
        it get UnknownPartitionError. Reads already waiting on it and on nothing else wait for
        their timeout. Its log stream is closed (entries already written stay in the outbox;
        the new owner commits the log). Raises UnknownPartitionError if ``tp`` is not
        served."""
        partition = self.partition(tp)
        partition.close()
        del self._partitions[tp]
        self._order.remove(partition)
        for state in (self._consumer, self._requests, self._deferred, self._claims):
            state.pop(tp, None)
        self.log.close(tp)

    def append(
        self, tp: TopicPartition, offset: int, key: bytes | None, value: bytes | None
    ) -> None:
        """A record fetched from the data topic; wakes a waiting read of ``tp`` and applies
        the forwarded requests that waited for it."""
        self.partition(tp).append(offset, key, value)
        deferred = self._deferred.get(tp)
        if deferred and deferred[0].offset <= offset:
            self._deferred[tp] = [r for r in deferred if r.offset > offset]
            for request in deferred:
                if request.offset <= offset:
                    self._apply(self._partitions[tp], request)
        self._reads.check_and_complete(tp)

    def partition(self, tp: TopicPartition) -> SharePartition:
        """The state map of ``tp``; raises UnknownPartitionError if it is not served."""
        partition = self._partitions.get(tp)
        if partition is None:
            served = ", ".join(map(str, self._partitions)) or "none"
            raise UnknownPartitionError(f"{tp} is not served here (served: {served})")
        return partition

    # -- the client requests ----------------------------------------------------------------

    def read(self, timeout: int, callback: Callable[[Record | None], object]) -> DelayedRead:
        """Read(timeout): ``callback`` gets the next eligible record of a served partition as
        soon as there is one, or None after ``timeout`` time units (0: answer at once).
        Partitions catching up give nothing until caught up (the read waits for them too).
        Returns the waiting operation (``cancel()`` drops it without a callback). Raises
        UnknownPartitionError if no partition is assigned, and purgatory's InvalidTimeoutError
        unless ``timeout`` is an int >= 0."""
        count = len(self._order)
        if not count:
            raise UnknownPartitionError("this proxy serves no partition yet: nothing to read")
        first = self._next % count
        partitions = self._order[first:] + self._order[:first]
        read = DelayedRead(self, partitions, timeout, callback)
        if timeout == 0:
            if not read.try_complete():
                read.force_complete()
            return read
        self._reads.try_complete_else_watch(read, [p.tp for p in partitions])
        return read

    def acknowledge(self, tp: TopicPartition, offset: int, delivery: int | None = None) -> None:
        """Acknowledge(topic, partition, offset): the record may be committed. From any reader;
        ``delivery`` (the count the reader was given) pins the delivery meant. Raises
        LeaseExpiredError, RecordNotHandedOutError, InvalidRecordStateError,
        OffsetOutOfRangeError or UnknownPartitionError, changing nothing."""
        record = self.partition(tp).acknowledge(offset, delivery)
        self.log.acknowledged(tp, offset, record.delivery_count)

    def cancel(self, tp: TopicPartition, offset: int, delivery: int | None = None) -> None:
        """Cancel(topic, partition, offset): the record is eligible again at once (archived
        instead at the delivery-count limit). Errors as :meth:`acknowledge`."""
        self.partition(tp).release(offset, delivery)

    def reject(self, tp: TopicPartition, offset: int, delivery: int | None = None) -> None:
        """KIP-932's Reject: archive the record now (to ``dead_letter``). Errors as
        :meth:`acknowledge`."""
        self.partition(tp).reject(offset, delivery)

    def renew(self, tp: TopicPartition, offset: int, delivery: int | None = None) -> int:
        """Restart the record's lease from now (a Pending entry with the new deadline goes to
        the log); returns the new deadline. Errors as :meth:`acknowledge`."""
        partition = self.partition(tp)
        deadline = partition.renew(offset, delivery)
        self.log.pending(tp, offset, partition.progress(offset).delivery, deadline)
        return deadline

    @property
    def writer(self) -> int:
        """The id this proxy's log entries carry (0: none given)."""
        return self.log.writer

    @writer.setter
    def writer(self, writer: int) -> None:
        """Give the proxy its writer id, before it writes anything (a driver that owns the
        choice: see :class:`~consume_proxy.cluster_feed.ClusterFeed`). Raises
        InvalidProxyConfigError if it is out of range or entries were written already."""
        if type(writer) is not int or not 0 <= writer <= MAX_WRITER:
            raise InvalidProxyConfigError(f"writer must be an int 0 to 2**63-1, got {writer!r}")
        if self.log.written:
            raise InvalidProxyConfigError("the writer id cannot change once entries are written")
        self.log.writer = writer

    # -- time and output --------------------------------------------------------------------

    @property
    def purgatory(self) -> DelayedOperationPurgatory[DelayedRead]:
        """The purgatory of reads, whose wheel also holds the leases: what a real-time driver
        gives its reaper (``purgatory.trio_reaper``)."""
        return self._reads

    @property
    def served(self) -> list[TopicPartition]:
        """The partitions served, in assignment order."""
        return [partition.tp for partition in self._order]

    def now(self) -> int:
        """The proxy's current time: the last :meth:`advance`."""
        return self._reads.timer.now

    def advance(self, now: int) -> int:
        """Move time to ``now``: expire leases and reads that are due (leases exactly at their
        deadline). Returns how many timers fired."""
        return self._reads.advance_clock(now)

    def next_deadline(self) -> int | None:
        """The earliest lease or read deadline, for the driver to sleep until."""
        return self._reads.next_deadline()

    def commit(self) -> dict[TopicPartition, int]:
        """Move each partition's data-topic commit to the end of its contiguous finished
        prefix; returns the positions that moved, for the driver's OffsetCommit."""
        moved = {}
        for partition in self._order:
            position = partition.commit()
            if position is not None:
                moved[partition.tp] = position
                self.log.data_committed(partition.tp, position)
        return moved

    def poll_log(self) -> list[LogEntry]:
        """The log entries written since the last poll (see :class:`StateLog`)."""
        return self.log.poll()

    def state(self, tp: TopicPartition, offset: int) -> RecordState:
        """The state of one record (see :meth:`SharePartition.state`)."""
        return self.partition(tp).state(offset)

    def _handed_out(self, source: SharePartition, record: Record) -> None:
        self._next = self._order.index(source) + 1
        self.log.pending(source.tp, record.offset, record.delivery_count, record.lease_deadline)

    def _archived(self, record: Record) -> None:
        tp = TopicPartition(record.topic, record.partition)
        self.log.archived(tp, record.offset, record.delivery_count)
        if self.dead_letter is not None:
            self.dead_letter(record)

    # -- catch-up and the shared log ------------------------------------------------------------

    def _serve(self, tp: TopicPartition, log_end: int) -> None:
        """Catch-up of ``tp`` is over: merge, settle what the merge superseded, apply the
        requests read, serve."""
        consumer = self._consumer.pop(tp)
        partition = self._partitions[tp]
        for offset, progress in sorted(consumer.progress.items()):
            partition.merge(offset, progress)
        self.log.caught_up(tp, log_end)
        self.log.data_committed(tp, partition.start_offset)
        for offset, delivery in self.log.open_deliveries(tp):  # open while still leased
            self._settle_delivery(partition, offset, delivery)
        partition.serving = True
        for request in self._requests.pop(tp):
            self._apply(partition, request)
        self._reads.check_and_complete(tp)

    def _follow(self, partition: SharePartition, entry: LogEntry) -> None:
        """An entry read from a shared log after catch-up (see :meth:`replay`)."""
        kind = entry.kind
        if kind is _K.CLAIM:  # not ours (a copy of ours was dropped): a newer owner
            self.revoke(partition.tp)
            self.counts.fenced += 1
        elif kind in REQUESTS:
            self._apply(partition, entry)
        else:
            if entry.writer != self.log.writer:
                partition.merge(entry.offset, entry.progress)
            self.log.replayed(entry)
            if kind is _K.PENDING:
                self._settle_delivery(partition, entry.offset, entry.delivery)
            else:
                self.log.data_committed(partition.tp, partition.start_offset)

    def _settle_delivery(self, partition: SharePartition, offset: int, delivery: int) -> None:
        """Settle the Pending entries of ``delivery`` of ``offset`` unless it is the record's
        current, still leased, delivery."""
        now = partition.progress(offset) if offset >= partition.start_offset else None
        if now is None or now.state is not RecordState.PENDING or now.delivery != delivery:
            self.log.delivery_ended(partition.tp, offset, delivery)

    def _apply(self, partition: SharePartition, request: LogEntry) -> None:
        """Apply a forwarded request as if a client had asked here; one for a record not
        fetched yet waits for it (:meth:`append`). An acknowledgement or rejection applied is
        open in the log until the data commit passes its record."""
        tp, offset = partition.tp, request.offset
        if offset >= partition.end_offset:
            self._deferred.setdefault(tp, []).append(request)
            return
        action = {
            _K.ACKNOWLEDGE_REQUEST: self.acknowledge,
            _K.CANCEL_REQUEST: self.cancel,
            _K.REJECT_REQUEST: self.reject,
        }[request.kind]
        try:
            action(tp, offset, request.delivery or None)
        except InvalidRecordStateError:
            self.counts.refused += 1
            return
        self.counts.applied += 1
        if request.kind is not _K.CANCEL_REQUEST:
            self.log.replayed(request)

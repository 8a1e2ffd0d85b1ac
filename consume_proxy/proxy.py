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
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from consume_proxy.errors import InvalidProxyConfigError, UnknownPartitionError
from consume_proxy.record_state import Record, RecordState
from consume_proxy.share_partition import SharePartition
from consume_proxy.state_log import LogEntry, StateLog
from consume_proxy.state_map import StateMap
from purgatory.delayed_operation import DelayedOperation
from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from replica.types import TopicPartition

__all__ = ["DEFAULT_DELIVERY_COUNT_LIMIT", "DEFAULT_LEASE_DURATION", "ConsumeProxy", "DelayedRead"]

DEFAULT_LEASE_DURATION = 30_000
"""The ack timeout in time units (KIP-932's group.share.record.lock.duration.ms)."""

DEFAULT_DELIVERY_COUNT_LIMIT = 5
"""Deliveries before a record is archived (KIP-932's group.share.delivery.count.limit)."""


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
    a dead-letter queue). Raises InvalidProxyConfigError unless ``lease_duration`` and
    ``delivery_count_limit`` are ints >= 1.
    """

    def __init__(
        self,
        *,
        lease_duration: int = DEFAULT_LEASE_DURATION,
        delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT,
        dead_letter: Callable[[Record], object] | None = None,
        start: int = 0,
    ) -> None:
        for name, value in (
            ("lease_duration", lease_duration),
            ("delivery_count_limit", delivery_count_limit),
        ):
            if type(value) is not int or value < 1:
                raise InvalidProxyConfigError(f"{name} must be an int >= 1, got {value!r}")
        self.lease_duration = lease_duration
        self.delivery_count_limit = delivery_count_limit
        self._dead_letter = dead_letter
        self._reads: DelayedOperationPurgatory[DelayedRead] = DelayedOperationPurgatory(
            "Read", start=start
        )
        self._partitions: dict[Hashable, SharePartition] = {}
        self._order: list[SharePartition] = []  # round-robin order of the served partitions
        self._next = 0
        self._consumer: dict[TopicPartition, StateMap] = {}  # the copies read while catching up
        self.log = StateLog()

    # -- assignment and data ----------------------------------------------------------------

    def assign(
        self, tp: TopicPartition, start_offset: int, *, log_start: int | None = None
    ) -> None:
        """Serve ``tp`` from its committed position ``start_offset`` (an int >= 0).

        With ``log_start``, the committed offset of ``tp``'s log partition, the partition
        catches up first (see the module docstring): it serves after :meth:`caught_up`.
        Without, there is no log to read: it serves at once and its log starts at 0."""
        for name, value in (("start_offset", start_offset), ("log_start", log_start)):
            if value is not None and (type(value) is not int or value < 0):
                raise InvalidProxyConfigError(f"{name} must be an int >= 0, got {value!r}")
        if tp in self._partitions:
            raise InvalidProxyConfigError(f"{tp} is served already")
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
        )
        self._partitions[tp] = partition
        self._order.append(partition)
        self.log.open(tp, 0 if log_start is None else log_start)
        if log_start is not None:
            partition.serving = False
            self._consumer[tp] = StateMap.of(start_offset)

    def replay(self, entry: LogEntry) -> None:
        """An entry read from the log partition of ``entry.tp`` during its catch-up: joined
        into the consumer's copy of the state. Raises UnknownPartitionError unless the
        partition is catching up."""
        consumer = self._consumer.get(entry.tp)
        if consumer is None:
            raise UnknownPartitionError(f"{entry.tp} is not catching up here")
        consumer.add(entry.offset, entry.progress)
        self.log.replayed(entry)

    def caught_up(self, tp: TopicPartition, log_end: int) -> None:
        """The log partition of ``tp`` has been read to ``log_end``: merge the consumer's
        copy into the server's and serve ``tp`` (new log entries go at ``log_end``)."""
        consumer = self._consumer.pop(tp, None)
        if consumer is None:
            raise UnknownPartitionError(f"{tp} is not catching up here")
        partition = self._partitions[tp]
        for offset, progress in sorted(consumer.progress.items()):
            partition.merge(offset, progress)
        self.log.caught_up(tp, log_end)
        self.log.data_committed(tp, partition.start_offset)
        for offset, delivery in self.log.open_deliveries(tp):  # open while still leased
            now = partition.progress(offset) if offset >= partition.start_offset else None
            if now is None or now.state is not RecordState.PENDING or now.delivery != delivery:
                self.log.delivery_ended(tp, offset, delivery)
        partition.serving = True
        self._reads.check_and_complete(tp)

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
        self._consumer.pop(tp, None)
        self.log.close(tp)

    def append(
        self, tp: TopicPartition, offset: int, key: bytes | None, value: bytes | None
    ) -> None:
        """A record fetched from the data topic; wakes a waiting read of ``tp``."""
        self.partition(tp).append(offset, key, value)
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
        if self._dead_letter is not None:
            self._dead_letter(record)

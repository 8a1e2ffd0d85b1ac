"""SharePartition: the state map of one partition the proxy serves.

The map covers the offsets from the partition's commit position (everything before it is
COMMITTED and forgotten) to the end of what has been fetched. Each fetched record has an
:class:`~consume_proxy.RecordState`, a delivery count and, while PENDING, a lease: a
:class:`~purgatory.TimerTask` on the proxy's timing wheel at ``now + lease_duration``. With
the wheel's tick of 1 a lease expires exactly at its deadline (the first advance to a time >=
the deadline), never before.

When a delivery ends without an acknowledgement (Cancel or expiry) the record becomes
AVAILABLE again, unless its delivery count has reached ``delivery_count_limit``: then it is
ARCHIVED and handed to ``on_archive`` (a dead-letter sink, KIP-932's archiving, SQS's
redrive). Each time a record becomes AVAILABLE again ``on_available`` is called, so that the
proxy can wake waiting reads.

A request names a delivery optionally: ``delivery`` is the delivery count the reader was
given. With it, an acknowledgement from a reader whose lease expired is refused even when the
record has since been handed to someone else; without it (the seed's Acknowledge(topic,
partition, offset)) the current delivery is meant.

**Record locks.** With ``max_record_locks`` set, a partition holding that many PENDING
records hands out nothing more (:attr:`SharePartition.has_available` is False) until one of
them is acknowledged, cancelled, rejected or expires: KIP-932's
``group.share.partition.max.record.locks``, a bound on the records one partition has out with
readers. Whatever takes a partition from full to not full calls ``on_available`` if it has
records to hand out, so waiting reads take them.

Offsets that were never fetched inside the map (a compacted topic's holes, transaction
markers) hold no record; the commit passes them.

**Merging** (:meth:`SharePartition.merge`) joins what another copy knows of a record (a
:class:`~consume_proxy.state_map.Progress`, from the state log during catch-up) into this
one, the seed's CRDT merge: the record moves to the join of the two, through the transition
table (an AVAILABLE record becomes PENDING on its way to ACKNOWLEDGED), writing nothing to the
log (the facts came from it) and calling no dead-letter sink (the server that archived the
record did). Progress for records not fetched yet is kept and joined in when they arrive.
While the partition is not :attr:`~SharePartition.serving` (catch-up) it takes appends and
merges but hands nothing out.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from sortedcontainers import SortedSet  # type: ignore[import-untyped]  # ships no type hints

from consume_proxy.errors import (
    InvalidRecordStateError,
    LeaseExpiredError,
    OffsetOutOfRangeError,
    RecordNotHandedOutError,
)
from consume_proxy.record_state import FINISHED, TRANSITIONS, Record, RecordState
from consume_proxy.state_map import NEVER_DELIVERED, Progress, StateMap
from purgatory.contiguous import contiguous_end
from purgatory.timing_wheel import TimerTask, TimingWheel
from replica.types import TopicPartition

__all__ = ["SharePartition"]

_AVAILABLE = RecordState.AVAILABLE
_PENDING = RecordState.PENDING


class _InFlight(TimerTask):
    """One fetched, uncommitted record; the TimerTask is its lease while it is PENDING."""

    __slots__ = ("delivery_count", "key", "offset", "owner", "state", "value")

    def __init__(
        self, owner: SharePartition, offset: int, key: bytes | None, value: bytes | None
    ) -> None:
        super().__init__()
        self.owner = owner
        self.offset = offset
        self.key = key
        self.value = value
        self.state = _AVAILABLE
        self.delivery_count = 0

    def run(self) -> None:
        """The lease expired."""
        self.owner._end_delivery(self)


class _Finished:
    """The offsets the commit may pass, seen as a container: finished records and holes."""

    __slots__ = ("_records",)

    def __init__(self, records: dict[int, _InFlight]) -> None:
        self._records = records

    def __contains__(self, offset: object) -> bool:
        record = self._records.get(offset)  # type: ignore[call-overload]
        return record is None or record.state in FINISHED


class SharePartition:
    """The state map of one partition (see the module docstring).

    ``start_offset`` is the partition's committed position (the next offset to read).
    ``timer`` is the wheel leases are scheduled on; ``now()`` the current time;
    ``max_record_locks`` the most PENDING records it may hold (None: no bound).
    """

    def __init__(
        self,
        tp: TopicPartition,
        start_offset: int,
        *,
        timer: TimingWheel,
        now: Callable[[], int],
        lease_duration: int,
        delivery_count_limit: int,
        on_available: Callable[[TopicPartition], object],
        on_archive: Callable[[Record], object],
        on_delivery_end: Callable[[TopicPartition, int, int], object],
        max_record_locks: int | None = None,
    ) -> None:
        self.tp = tp
        self.start_offset = start_offset
        self.end_offset = start_offset
        self._timer = timer
        self._now = now
        self.lease_duration = lease_duration
        self.delivery_count_limit = delivery_count_limit
        self._on_available = on_available
        self._on_archive = on_archive
        self._on_delivery_end = on_delivery_end
        self._records: dict[int, _InFlight] = {}
        self._available: SortedSet = SortedSet()
        self._finished = _Finished(self._records)
        self._known: dict[int, Progress] = {}  # merged progress of records not fetched yet
        self.max_record_locks = max_record_locks
        self._locks = sys.maxsize if max_record_locks is None else max_record_locks
        self._pending = 0  # records PENDING now
        self.serving = True

    # -- queries ------------------------------------------------------------------------------

    def state(self, offset: int) -> RecordState:
        """The state of the record at ``offset``; raises OffsetOutOfRangeError past the end
        and RecordNotHandedOutError for a hole."""
        if offset < self.start_offset:
            return RecordState.COMMITTED
        return self._get(offset).state

    def lease_deadline(self, offset: int) -> int | None:
        """When the lease of the record at ``offset`` ends, or None unless it is PENDING."""
        if offset < self.start_offset:
            return None
        record = self._get(offset)
        return record.deadline if record.state is _PENDING else None

    def fetched(self, offset: int) -> tuple[bytes | None, bytes | None] | None:
        """The key and value of the record at ``offset``, or None if it is not in the map
        (committed, a hole, or not fetched yet)."""
        record = self._records.get(offset)
        return None if record is None else (record.key, record.value)

    @property
    def has_available(self) -> bool:
        """True if a Read could be given a record now (never while catching up, nor while
        the partition holds ``max_record_locks`` PENDING records)."""
        return self.serving and bool(self._available) and self._pending < self._locks

    @property
    def full(self) -> bool:
        """True while the partition holds ``max_record_locks`` PENDING records."""
        return self._pending >= self._locks

    def progress(self, offset: int) -> Progress:
        """What this copy knows of ``offset``, as an element of the state map's lattice
        (:data:`~consume_proxy.state_map.NEVER_DELIVERED` for a hole or a record not fetched
        yet, unless progress was merged for it). Offsets before the commit position are
        committed and have none: raises InvalidRecordStateError."""
        if offset < self.start_offset:
            raise InvalidRecordStateError(f"{self.tp} offset {offset} is committed")
        record = self._records.get(offset)
        if record is None:
            return self._known.get(offset, NEVER_DELIVERED)
        lease = record.deadline if record.state is _PENDING else None
        return Progress(record.delivery_count, record.state, lease)

    def count(self, state: RecordState) -> int:
        """How many records of the map are in ``state`` (COMMITTED ones are forgotten: 0)."""
        return sum(1 for record in self._records.values() if record.state is state)

    def committable_offset(self) -> int:
        """The data topic's commit position: the end of the contiguous finished prefix."""
        return contiguous_end(self._finished, self.start_offset - 1, self.end_offset - 1) + 1

    # -- changes ------------------------------------------------------------------------------

    def append(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        """Add a fetched record at ``offset`` (>= :attr:`end_offset`) as AVAILABLE."""
        if offset < self.end_offset:
            raise OffsetOutOfRangeError(
                f"{self.tp}: records must be appended in offset order; got offset {offset}, "
                f"expected >= {self.end_offset}"
            )
        record = self._records[offset] = _InFlight(self, offset, key, value)
        self._available.add(offset)
        self.end_offset = offset + 1
        if self._known:  # what was merged for offsets skipped (holes) is moot
            for skipped in [o for o in self._known if o < offset]:
                moot = self._known.pop(skipped)
                if moot.state is _PENDING:  # no delivery of a hole can be open
                    self._on_delivery_end(self.tp, skipped, moot.delivery)
            known = self._known.pop(offset, None)
            if known is not None:
                self._adopt(record, known)

    def acquire(self) -> Record | None:
        """Hand out the lowest AVAILABLE record: it becomes PENDING under a new lease.
        None if no record is available. A :class:`~consume_proxy.DelayedRead` calls it (and
        the proxy logs the hand-out); callers go through ``ConsumeProxy.read``."""
        if not self._available:
            return None
        record = self._records[self._available.pop(0)]
        self._move(record, _PENDING)
        record.delivery_count += 1
        self._timer.add(record, self._now() + self.lease_duration)
        return self._record(record)

    def acknowledge(self, offset: int, delivery: int | None = None) -> Record:
        """Acknowledge the current delivery of ``offset``: PENDING -> ACKNOWLEDGED."""
        record = self._leased(offset, delivery, "acknowledge")
        full = self._pending >= self._locks
        TimerTask.cancel(record)
        self._move(record, RecordState.ACKNOWLEDGED)
        self._unlocked(full)
        return self._record(record)

    def release(self, offset: int, delivery: int | None = None) -> None:
        """Cancel the current delivery of ``offset``: eligible again at once (or archived at
        the delivery-count limit)."""
        self._end_delivery(self._leased(offset, delivery, "cancel"))

    def reject(self, offset: int, delivery: int | None = None) -> None:
        """Give up on ``offset`` for good: PENDING -> ARCHIVED (to the dead-letter sink)."""
        record = self._leased(offset, delivery, "reject")
        full = self._pending >= self._locks
        TimerTask.cancel(record)
        self._on_delivery_end(self.tp, offset, record.delivery_count)
        self._archive(record)
        self._unlocked(full)

    def renew(self, offset: int, delivery: int | None = None) -> int:
        """Restart the lease of ``offset`` from now; returns the new deadline."""
        record = self._leased(offset, delivery, "renew")
        self._timer.reschedule(record, self._now() + self.lease_duration)
        return record.deadline

    def commit(self) -> int | None:
        """Move the commit position to :meth:`committable_offset` and forget the records it
        passes; returns the new position, or None if it did not move."""
        position = self.committable_offset()
        if position == self.start_offset:
            return None
        for offset in range(self.start_offset, position):
            record = self._records.pop(offset, None)
            if record is not None:
                self._move(record, RecordState.COMMITTED)
        self.start_offset = position
        return position

    def state_map(self) -> StateMap:
        """This copy of the partition's state, as an element of the lattice."""
        known = [(o, self.progress(o)) for o in self._records]
        return StateMap.of(self.start_offset, [*known, *self._known.items()])

    def merge(self, offset: int, progress: Progress) -> None:
        """Join ``progress`` into what this copy knows of ``offset`` (see the module
        docstring); nothing happens for a committed offset or a hole."""
        if offset < self.start_offset:
            return
        record = self._records.get(offset)
        if record is not None:
            self._adopt(record, progress.join(self.progress(offset)))
        elif offset >= self.end_offset:
            known = self._known.get(offset, NEVER_DELIVERED)
            joined = self._known[offset] = progress.join(known)
            if known.state is _PENDING and (
                joined.state is not _PENDING or joined.delivery != known.delivery
            ):  # the delivery merged before ended in this copy too
                self._on_delivery_end(self.tp, offset, known.delivery)

    def close(self) -> None:
        """Forget the map: the partition is no longer served here. Every lease is cancelled
        without ending its delivery (no callback runs); nothing is available any more."""
        for record in self._records.values():
            TimerTask.cancel(record)
        self._records.clear()
        self._available.clear()
        self._known.clear()
        self._pending = 0

    # -- internals ----------------------------------------------------------------------------

    def _adopt(self, record: _InFlight, target: Progress) -> None:
        """Move ``record`` to ``target``, a progress at least as high as its own."""
        full = self._pending >= self._locks
        self._adopt_progress(record, target)
        self._unlocked(full)

    def _adopt_progress(self, record: _InFlight, target: Progress) -> None:
        state = target.state
        if record.state is _PENDING and (
            state is not _PENDING or target.delivery != record.delivery_count
        ):  # the current delivery ended in the other copy
            TimerTask.cancel(record)
            self._on_delivery_end(self.tp, record.offset, record.delivery_count)
        record.delivery_count = target.delivery
        if state is _AVAILABLE:
            if record.state is _PENDING:
                self._move(record, _AVAILABLE)
                self._available.add(record.offset)
                self._on_available(self.tp)
            return
        if record.state is _AVAILABLE:
            self._available.discard(record.offset)
            self._move(record, _PENDING)
        if state is _PENDING:
            self._timer.reschedule(record, target.lease_deadline)  # type: ignore[arg-type]
        elif record.state is not state:  # finished: from PENDING, or ARCHIVED to ACKNOWLEDGED
            self._move(record, state)

    def _get(self, offset: int) -> _InFlight:
        record = self._records.get(offset)
        if record is None:
            if offset >= self.end_offset:
                raise OffsetOutOfRangeError(
                    f"{self.tp}: offset {offset} has not been fetched (the proxy has offsets "
                    f"{self.start_offset} to {self.end_offset - 1})"
                )
            raise RecordNotHandedOutError(f"{self.tp}: offset {offset} holds no record")
        return record

    def _leased(self, offset: int, delivery: int | None, action: str) -> _InFlight:
        """The PENDING record at ``offset`` whose current delivery is ``delivery``, or the
        error saying why there is none."""
        if offset < self.start_offset:
            raise InvalidRecordStateError(
                f"cannot {action} {self.tp} offset {offset}: it is committed already"
            )
        record = self._get(offset)
        where = f"cannot {action} {self.tp} offset {offset}"
        if record.delivery_count == 0:
            raise RecordNotHandedOutError(f"{where}: it was never handed out")
        if delivery is not None and delivery != record.delivery_count:
            raise LeaseExpiredError(
                f"{where}: delivery {delivery} ended (its lease expired or it was "
                f"cancelled); the record is now on delivery {record.delivery_count}"
            )
        if record.state is _AVAILABLE:
            raise LeaseExpiredError(
                f"{where}: its lease expired or it was cancelled; it is available again"
            )
        if record.state is not _PENDING:
            raise InvalidRecordStateError(f"{where}: it is {record.state.value} already")
        return record

    def _end_delivery(self, record: _InFlight) -> None:
        """A delivery ended without an acknowledgement (Cancel, or the lease expired)."""
        full = self._pending >= self._locks
        TimerTask.cancel(record)
        self._on_delivery_end(self.tp, record.offset, record.delivery_count)
        if record.delivery_count >= self.delivery_count_limit:
            self._archive(record)
            self._unlocked(full)
            return
        self._move(record, _AVAILABLE)
        self._available.add(record.offset)
        self._on_available(self.tp)

    def _archive(self, record: _InFlight) -> None:
        self._move(record, RecordState.ARCHIVED)
        self._on_archive(self._record(record))

    def _unlocked(self, was_full: bool) -> None:
        """Wake waiting reads if the partition was full and now has records to hand out."""
        if was_full and self.has_available:
            self._on_available(self.tp)

    def _move(self, record: _InFlight, to: RecordState) -> None:
        if to not in TRANSITIONS[record.state]:
            raise AssertionError(f"offset {record.offset}: {record.state} -> {to} is not allowed")
        if record.state is _PENDING:
            self._pending -= 1
        elif to is _PENDING:
            self._pending += 1
        record.state = to

    def _record(self, record: _InFlight) -> Record:
        return Record(
            self.tp.topic,
            self.tp.partition,
            record.offset,
            record.key,
            record.value,
            record.delivery_count,
            record.deadline,
        )

"""StateLog: what the proxy writes to its internal log topic, and how far it may commit it.

The seed has every server write each Pending (a record handed out) and each Acknowledge to
the log topic, keyed so that the server owning a partition reads that partition's state. The
log topic is partitioned like the data topic: the entries of data partition ``p`` go to log
partition ``p``, which the owner of ``p`` reads when it is assigned ``p`` (catch-up). Each
data partition has its own log stream, and an entry's ``position`` is its offset in that log
partition.

Besides the seed's two kinds the proxy writes ARCHIVED (a record rejected or past its
delivery-count limit, as KIP-932 persists it), so that a server taking over does not hand an
archived record out again, and a Renew writes a second Pending entry for the same delivery
with its later deadline. These three are *facts*. This module is the writing half, sans-IO:
entries wait in an outbox (:meth:`StateLog.poll`) for the driver to produce them. Entries
read back are tracked too (:meth:`StateLog.replayed`), because the commit must wait for them.
Every entry carries its writer (the proxy's id) and that writer's sequence number, so that a
reader knows who wrote it and can drop a copy a producer's retry wrote twice.

**Two ways to number the entries.** A stream opened plainly has one writer, its owner, who
numbers its entries itself: the proxy is told where the stream ends and numbers on from there,
and a driver that produces them in order, one batch at a time, sees the broker give them
exactly these offsets (write-ahead drivers: the tests' state machines, a simulator). A stream
opened with ``tail=True`` is *shared*: other servers append to it too (requests forwarded to
the owner, a new owner's CLAIM, a previous owner's late entries), so no writer can know where
its entries land. The owner then reads its log partition for as long as it owns it, its own
entries included, and an entry counts from the moment it is read back at its real position;
the entries it writes carry the position :data:`UNPLACED`.

Kinds besides the facts, written only to shared streams: CLAIM (a server taking the partition
over; catch-up ends when it reads its own claim back, and an owner that reads someone else's
claim after its own has been superseded: it is *fenced*), and ACKNOWLEDGE_REQUEST,
CANCEL_REQUEST, REJECT_REQUEST (a client's request taken by a server that does not own the
partition, forwarded to the owner through the log: the seed's "an Acknowledge does not need to
go to the original server"). A request's ``delivery`` is the delivery the client named, 0 for
the current one.

The log's commit rule is the seed's: a partition's log may be committed up to a position
once

1. every Pending entry before it belongs to a delivery that has ended (acknowledged,
   cancelled, rejected or expired), and
2. every Acknowledge (or Archived) entry before it is for a record the data topic has
   committed; an acknowledgement or rejection forwarded and applied counts as one.

An entry that does not yet meet its condition is *open*, any other position is *settled*;
the commit position is the end of the contiguous settled prefix
(:func:`purgatory.contiguous.contiguous_end`, the same gap detection as the data topic's):
the first open position, or the stream's end when none is open. A shared stream's end is what
has been read of it, and it does not commit while catching up. Reading the log from there
rebuilds every state that still matters: what came before is settled.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs
from sortedcontainers import SortedList  # type: ignore[import-untyped]  # ships no type hints

from consume_proxy.record_state import RecordState
from consume_proxy.state_map import Progress
from purgatory.contiguous import contiguous_end
from replica.types import TopicPartition

__all__ = ["FACTS", "REQUESTS", "UNPLACED", "LogEntry", "LogEntryKind", "StateLog"]

UNPLACED = -1
"""The position of an entry written to a shared stream: known once it is read back."""


class LogEntryKind(enum.Enum):
    """The kinds of entry (see the module docstring)."""

    PENDING = "pending"
    ACKNOWLEDGED = "acknowledged"
    ARCHIVED = "archived"
    CLAIM = "claim"
    ACKNOWLEDGE_REQUEST = "acknowledge request"
    CANCEL_REQUEST = "cancel request"
    REJECT_REQUEST = "reject request"


_K = LogEntryKind
FACTS = frozenset({_K.PENDING, _K.ACKNOWLEDGED, _K.ARCHIVED})
"""The kinds that state what happened to a record (the state map's lattice elements)."""
REQUESTS = frozenset({_K.ACKNOWLEDGE_REQUEST, _K.CANCEL_REQUEST, _K.REJECT_REQUEST})
"""The kinds that forward a client's request to the partition's owner."""

_STATE = {
    _K.PENDING: RecordState.PENDING,
    _K.ACKNOWLEDGED: RecordState.ACKNOWLEDGED,
    _K.ARCHIVED: RecordState.ARCHIVED,
}


@attrs.frozen
class LogEntry:
    """One entry of the log topic: delivery ``delivery`` of record ``offset`` of ``tp`` was
    handed out (PENDING, leased until ``lease_deadline``), acknowledged or archived; or a
    CLAIM (``offset`` is the data position the claimant starts from) or a forwarded request
    (``delivery`` 0: the current one). ``position`` is the entry's offset in ``tp``'s log
    partition (:data:`UNPLACED` until read back, on a shared stream); ``writer`` is the id of
    the proxy that wrote it and ``sequence`` that proxy's count of entries written before."""

    position: int
    kind: LogEntryKind
    tp: TopicPartition
    offset: int
    delivery: int
    lease_deadline: int | None = None
    writer: int = 0
    sequence: int = 0

    @property
    def progress(self) -> Progress:
        """What a fact says of its record, as an element of the state map's lattice. Raises
        KeyError for a claim or a request, which are not facts."""
        return Progress(self.delivery, _STATE[self.kind], self.lease_deadline)


@attrs.define
class _Stream:
    """The log stream of one data partition: where its commit and its end are, the entries
    still open and, if shared, whether it is still catching up and the last sequence read
    from each writer."""

    committed: int
    end: int
    shared: bool = False
    catching_up: bool = False
    open: set[int] = attrs.Factory(set)
    deliveries: dict[tuple[int, int], list[int]] = attrs.Factory(dict)  # Pending positions
    finished: SortedList = attrs.Factory(SortedList)  # (offset, position) of Ack/Archived
    last_read: dict[int, int] = attrs.Factory(dict)  # writer -> its last sequence read


class _Settled:
    """The settled positions of a stream, seen as a container: those not open."""

    __slots__ = ("_open",)

    def __init__(self, open_positions: set[int]) -> None:
        self._open = open_positions

    def __contains__(self, position: object) -> bool:
        return position not in self._open


class StateLog:
    """The outbox of log entries and each stream's commit position (see the module
    docstring). A stream is opened when its data partition is assigned. ``writer`` is the id
    entries are written under (distinct per server on a shared stream)."""

    def __init__(self, writer: int = 0) -> None:
        self.writer = writer
        self.on_write: Callable[[], object] | None = None
        """Called after each entry put in the outbox (a real-time driver wakes its producer)."""
        self._sequence = 0
        self._streams: dict[TopicPartition, _Stream] = {}
        self._outbox: list[LogEntry] = []

    def open(
        self, tp: TopicPartition, committed: int, end: int | None = None, *, tail: bool = False
    ) -> None:
        """Start ``tp``'s stream at its committed position; entries written go at ``end``
        (by default ``committed``). With ``tail`` the stream is shared: positions come from
        reading it (:meth:`read`), and it catches up until :meth:`caught_up`. Opening it
        again starts it afresh."""
        self._streams[tp] = _Stream(
            committed, committed if end is None else end, shared=tail, catching_up=tail
        )

    def close(self, tp: TopicPartition) -> None:
        """Forget ``tp``'s stream (the partition moved away); its entries in the outbox stay."""
        del self._streams[tp]

    @property
    def written(self) -> int:
        """How many entries this log has written (its next sequence number)."""
        return self._sequence

    def committed(self, tp: TopicPartition) -> int:
        """The commit position of ``tp``'s stream."""
        return self._streams[tp].committed

    def end(self, tp: TopicPartition) -> int:
        """Where ``tp``'s next entry goes (on a shared stream: the end of what was read)."""
        return self._streams[tp].end

    def caught_up(self, tp: TopicPartition, end: int) -> None:
        """Catch-up read ``tp``'s stream to ``end``: new entries go there (a shared stream
        starts committing)."""
        stream = self._streams[tp]
        stream.end = end
        stream.catching_up = False

    def open_deliveries(self, tp: TopicPartition) -> list[tuple[int, int]]:
        """The (offset, delivery) of the deliveries whose Pending entries are open."""
        return list(self._streams[tp].deliveries)

    # -- writing ------------------------------------------------------------------------------

    def pending(self, tp: TopicPartition, offset: int, delivery: int, deadline: int) -> None:
        """Write that ``delivery`` of ``offset`` is handed out, leased until ``deadline``
        (again with a later deadline when it is renewed)."""
        self._written(self._write(_K.PENDING, tp, offset, delivery, deadline, self._streams[tp]))

    def acknowledged(self, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Write that ``delivery`` of ``offset`` was acknowledged (its delivery ends)."""
        self.delivery_ended(tp, offset, delivery)
        self._written(self._write(_K.ACKNOWLEDGED, tp, offset, delivery, None, self._streams[tp]))

    def archived(self, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Write that ``offset`` was archived after ``delivery`` (which has ended)."""
        self._written(self._write(_K.ARCHIVED, tp, offset, delivery, None, self._streams[tp]))

    def claim(self, tp: TopicPartition, offset: int) -> LogEntry:
        """Write that this writer takes ``tp``'s shared stream over, serving the data from
        ``offset``; returns the entry (its sequence identifies it when read back)."""
        return self._write(_K.CLAIM, tp, offset, 0, None, self._streams[tp])

    def forward(self, kind: LogEntryKind, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Write a request for ``tp``'s owner (``kind`` one of :data:`REQUESTS`); ``tp`` need
        not be open here. Raises ValueError for another kind."""
        if kind not in REQUESTS:
            raise ValueError(f"only a request can be forwarded, not {kind}")
        self._write(kind, tp, offset, delivery, None, None)

    # -- reading ------------------------------------------------------------------------------

    def read(self, entry: LogEntry) -> bool:
        """An entry read from ``entry.tp``'s stream: on a shared stream its end moves past it.
        False if it is a copy of one read before (its writer's sequence did not move on: a
        producer's retry), to be ignored; always True on a stream that is not shared."""
        stream = self._streams[entry.tp]
        if not stream.shared:
            return True
        stream.end = max(stream.end, entry.position + 1)
        if entry.sequence <= stream.last_read.get(entry.writer, -1):
            return False
        stream.last_read[entry.writer] = entry.sequence
        return True

    def replayed(self, entry: LogEntry) -> None:
        """An entry read back (a fact, or an acknowledgement or rejection forwarded and
        applied): open until its condition holds (:meth:`delivery_ended`,
        :meth:`data_committed`)."""
        self._track(entry)

    # -- settling -----------------------------------------------------------------------------

    def delivery_ended(self, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Settle the Pending entries of a delivery that ended (condition 1)."""
        stream = self._streams[tp]
        for position in stream.deliveries.pop((offset, delivery), ()):
            stream.open.discard(position)

    def data_committed(self, tp: TopicPartition, position: int) -> None:
        """The data topic of ``tp`` is committed up to ``position``: settle the Acknowledge
        and Archived entries of the records before it (condition 2)."""
        stream = self._streams[tp]
        passed = stream.finished.bisect_left((position, -1))
        for _, entry_position in stream.finished[:passed]:
            stream.open.discard(entry_position)
        del stream.finished[:passed]

    def commit(self) -> dict[TopicPartition, int]:
        """Move each stream's commit position to its first open entry (or its end); returns
        the positions that moved, for the driver's OffsetCommit of the log topic. A shared
        stream catching up does not move."""
        moved = {}
        for tp, stream in self._streams.items():
            if stream.catching_up:
                continue
            settled = _Settled(stream.open)
            position = contiguous_end(settled, stream.committed - 1, stream.end - 1) + 1
            if position > stream.committed:
                stream.committed = moved[tp] = position
        return moved

    def poll(self) -> list[LogEntry]:
        """The entries written since the last poll, in the order written (each stream's in
        position order), for the driver to produce to the log topic."""
        entries, self._outbox = self._outbox, []
        return entries

    def _write(
        self,
        kind: LogEntryKind,
        tp: TopicPartition,
        offset: int,
        delivery: int,
        deadline: int | None,
        stream: _Stream | None,
    ) -> LogEntry:
        """Put an entry in the outbox; ``stream`` is ``tp``'s (None for a request, which
        goes to a stream of another server's)."""
        position = UNPLACED
        if stream is not None and not stream.shared:
            position = stream.end
            stream.end += 1
        sequence = self._sequence
        self._sequence += 1
        entry = LogEntry(position, kind, tp, offset, delivery, deadline, self.writer, sequence)
        self._outbox.append(entry)
        if self.on_write is not None:
            self.on_write()
        return entry

    def _written(self, entry: LogEntry) -> None:
        """Track an entry just written, unless its stream is shared (then it counts when read
        back)."""
        if entry.position != UNPLACED:
            self._track(entry)

    def _track(self, entry: LogEntry) -> None:
        stream = self._streams[entry.tp]
        stream.open.add(entry.position)
        if entry.kind is _K.PENDING:
            stream.deliveries.setdefault((entry.offset, entry.delivery), []).append(entry.position)
        else:
            stream.finished.add((entry.offset, entry.position))

"""StateLog: what the proxy writes to its internal log topic, and how far it may commit it.

The seed has every server write each Pending (a record handed out) and each Acknowledge to
the log topic, keyed so that the server owning a partition reads that partition's state. The
log topic is partitioned like the data topic: the entries of data partition ``p`` go to log
partition ``p``, which the owner of ``p`` reads when it is assigned ``p`` (catch-up) and
alone writes while it owns it. So each data partition has its own log stream, and an entry's
``position`` is its offset in that log partition: the proxy is told where the stream ends
(:meth:`StateLog.open`) and numbers its entries on from there; a driver that produces them
in order, one batch at a time, sees the broker give them exactly these offsets.

Besides the seed's two kinds the proxy writes ARCHIVED (a record rejected or past its
delivery-count limit, as KIP-932 persists it), so that a server taking over does not hand an
archived record out again, and a Renew writes a second Pending entry for the same delivery
with its later deadline. This module is the writing half, sans-IO: entries wait in an
outbox (:meth:`StateLog.poll`) for the driver to produce them. Entries read back during
catch-up are tracked too (:meth:`StateLog.replayed`), because the commit must wait for them.

The log's commit rule is the seed's: a partition's log may be committed up to a position
once

1. every Pending entry before it belongs to a delivery that has ended (acknowledged,
   cancelled, rejected or expired), and
2. every Acknowledge (or Archived) entry before it is for a record the data topic has
   committed.

An entry that does not yet meet its condition is *open*, any other position is *settled*;
the commit position is the end of the contiguous settled prefix
(:func:`purgatory.contiguous.contiguous_end`, the same gap detection as the data topic's):
the first open position, or the stream's end when none is open. Reading the log from there
rebuilds every state that still matters: what came before is settled.
"""

from __future__ import annotations

import enum

import attrs
from sortedcontainers import SortedList  # type: ignore[import-untyped]  # ships no type hints

from consume_proxy.record_state import RecordState
from consume_proxy.state_map import Progress
from purgatory.contiguous import contiguous_end
from replica.types import TopicPartition

__all__ = ["LogEntry", "LogEntryKind", "StateLog"]


class LogEntryKind(enum.Enum):
    """The kinds of entry: the seed's two, and ARCHIVED (see the module docstring)."""

    PENDING = "pending"
    ACKNOWLEDGED = "acknowledged"
    ARCHIVED = "archived"


_STATE = {
    LogEntryKind.PENDING: RecordState.PENDING,
    LogEntryKind.ACKNOWLEDGED: RecordState.ACKNOWLEDGED,
    LogEntryKind.ARCHIVED: RecordState.ARCHIVED,
}


@attrs.frozen
class LogEntry:
    """One entry of the log topic: delivery ``delivery`` of record ``offset`` of ``tp`` was
    handed out (PENDING, leased until ``lease_deadline``), acknowledged or archived.
    ``position`` is the entry's offset in ``tp``'s log partition."""

    position: int
    kind: LogEntryKind
    tp: TopicPartition
    offset: int
    delivery: int
    lease_deadline: int | None = None

    @property
    def progress(self) -> Progress:
        """What the entry says of its record, as an element of the state map's lattice."""
        return Progress(self.delivery, _STATE[self.kind], self.lease_deadline)


@attrs.define
class _Stream:
    """The log stream of one data partition: where its commit and its end are, and the
    entries still open."""

    committed: int
    end: int
    open: set[int] = attrs.Factory(set)
    deliveries: dict[tuple[int, int], list[int]] = attrs.Factory(dict)  # Pending positions
    finished: SortedList = attrs.Factory(SortedList)  # (offset, position) of Ack/Archived


class _Settled:
    """The settled positions of a stream, seen as a container: those not open."""

    __slots__ = ("_open",)

    def __init__(self, open_positions: set[int]) -> None:
        self._open = open_positions

    def __contains__(self, position: object) -> bool:
        return position not in self._open


class StateLog:
    """The outbox of log entries and each stream's commit position (see the module
    docstring). A stream is opened when its data partition is assigned."""

    def __init__(self) -> None:
        self._streams: dict[TopicPartition, _Stream] = {}
        self._outbox: list[LogEntry] = []

    def open(self, tp: TopicPartition, committed: int, end: int | None = None) -> None:
        """Start ``tp``'s stream at its committed position; entries written go at ``end``
        (by default ``committed``). Opening it again starts it afresh."""
        self._streams[tp] = _Stream(committed, committed if end is None else end)

    def close(self, tp: TopicPartition) -> None:
        """Forget ``tp``'s stream (the partition moved away); its entries in the outbox stay."""
        del self._streams[tp]

    def committed(self, tp: TopicPartition) -> int:
        """The commit position of ``tp``'s stream."""
        return self._streams[tp].committed

    def end(self, tp: TopicPartition) -> int:
        """Where ``tp``'s next entry goes."""
        return self._streams[tp].end

    def caught_up(self, tp: TopicPartition, end: int) -> None:
        """Catch-up read ``tp``'s stream to ``end``: new entries go there."""
        self._streams[tp].end = end

    def open_deliveries(self, tp: TopicPartition) -> list[tuple[int, int]]:
        """The (offset, delivery) of the deliveries whose Pending entries are open."""
        return list(self._streams[tp].deliveries)

    # -- writing ------------------------------------------------------------------------------

    def pending(self, tp: TopicPartition, offset: int, delivery: int, deadline: int) -> None:
        """Write that ``delivery`` of ``offset`` is handed out, leased until ``deadline``
        (again with a later deadline when it is renewed)."""
        self._track(self._write(LogEntryKind.PENDING, tp, offset, delivery, deadline))

    def acknowledged(self, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Write that ``delivery`` of ``offset`` was acknowledged (its delivery ends)."""
        self.delivery_ended(tp, offset, delivery)
        self._track(self._write(LogEntryKind.ACKNOWLEDGED, tp, offset, delivery, None))

    def archived(self, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Write that ``offset`` was archived after ``delivery`` (which has ended)."""
        self._track(self._write(LogEntryKind.ARCHIVED, tp, offset, delivery, None))

    def replayed(self, entry: LogEntry) -> None:
        """An entry read back from the log during catch-up: open until its condition holds
        (the proxy settles those already met when catch-up ends)."""
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
        the positions that moved, for the driver's OffsetCommit of the log topic."""
        moved = {}
        for tp, stream in self._streams.items():
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
    ) -> LogEntry:
        stream = self._streams[tp]
        entry = LogEntry(stream.end, kind, tp, offset, delivery, deadline)
        stream.end += 1
        self._outbox.append(entry)
        return entry

    def _track(self, entry: LogEntry) -> None:
        stream = self._streams[entry.tp]
        stream.open.add(entry.position)
        if entry.kind is LogEntryKind.PENDING:
            stream.deliveries.setdefault((entry.offset, entry.delivery), []).append(entry.position)
        else:
            stream.finished.add((entry.offset, entry.position))

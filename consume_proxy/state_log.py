"""StateLog: what the proxy writes to its internal log topic, and how far it may commit it.

The seed has every server write each Pending (a record handed out) and each Acknowledge to
the log topic, keyed so that the server owning a partition reads that partition's state. This
module is the writing half, sans-IO: each entry gets the next log position and waits in an
outbox (:meth:`StateLog.poll`) for the driver to produce it.

The log's commit rule is the seed's: the log may be committed up to a position once

1. every Pending entry before it belongs to a delivery that has ended (acknowledged,
   cancelled, rejected or expired), and
2. every Acknowledge entry before it is for a record the data topic has committed.

An entry meeting its condition is *settled*; the commit position is the end of the contiguous
settled prefix (:func:`purgatory.contiguous.contiguous_end`, the same gap detection as the
data topic's). Reading the log from that position rebuilds every state that still matters.
"""

from __future__ import annotations

import enum

import attrs
from sortedcontainers import SortedList  # type: ignore[import-untyped]  # ships no type hints

from purgatory.contiguous import contiguous_end
from replica.types import TopicPartition

__all__ = ["LogEntry", "LogEntryKind", "StateLog"]


class LogEntryKind(enum.Enum):
    """The two kinds of entry the seed writes."""

    PENDING = "pending"
    ACKNOWLEDGED = "acknowledged"


@attrs.frozen
class LogEntry:
    """One entry of the log topic: a record's delivery handed out (with its lease deadline)
    or acknowledged. ``position`` is the entry's place in this server's log."""

    position: int
    kind: LogEntryKind
    tp: TopicPartition
    offset: int
    delivery: int
    lease_deadline: int | None = None


class StateLog:
    """The outbox of log entries and the log's commit position (see the module docstring)."""

    def __init__(self) -> None:
        self.committed = 0  # the log's commit position: the next position to read
        self.end = 0  # the next position to write
        self._outbox: list[LogEntry] = []
        self._settled: set[int] = set()
        self._pending: dict[tuple[TopicPartition, int, int], int] = {}
        self._acks: dict[TopicPartition, SortedList] = {}  # (offset, position) per partition

    def pending(self, tp: TopicPartition, offset: int, delivery: int, deadline: int) -> None:
        """Write that ``delivery`` of ``offset`` was handed out, leased until ``deadline``."""
        self._pending[tp, offset, delivery] = self._write(
            LogEntryKind.PENDING, tp, offset, delivery, deadline
        )

    def acknowledged(self, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Write that ``delivery`` of ``offset`` was acknowledged (its delivery ends)."""
        self.delivery_ended(tp, offset, delivery)
        position = self._write(LogEntryKind.ACKNOWLEDGED, tp, offset, delivery, None)
        self._acks.setdefault(tp, SortedList()).add((offset, position))

    def delivery_ended(self, tp: TopicPartition, offset: int, delivery: int) -> None:
        """Settle the Pending entry of a delivery that ended (condition 1)."""
        self._settled.add(self._pending.pop((tp, offset, delivery)))

    def data_committed(self, tp: TopicPartition, position: int) -> None:
        """The data topic of ``tp`` is committed up to ``position``: settle the Acknowledge
        entries of the records before it (condition 2)."""
        acks = self._acks.get(tp)
        if not acks:
            return
        passed = acks.bisect_left((position, -1))
        self._settled.update(entry_position for _, entry_position in acks[:passed])
        del acks[:passed]

    def commit(self) -> int | None:
        """Move the commit position to the end of the contiguous settled prefix; returns the
        new position, or None if it did not move."""
        position = contiguous_end(self._settled, self.committed - 1, self.end - 1) + 1
        if position == self.committed:
            return None
        self._settled.difference_update(range(self.committed, position))
        self.committed = position
        return position

    def poll(self) -> list[LogEntry]:
        """The entries written since the last poll, in position order, for the driver to
        produce to the log topic."""
        entries, self._outbox = self._outbox, []
        return entries

    def _write(
        self,
        kind: LogEntryKind,
        tp: TopicPartition,
        offset: int,
        delivery: int,
        deadline: int | None,
    ) -> int:
        position = self.end
        self.end += 1
        self._outbox.append(LogEntry(position, kind, tp, offset, delivery, deadline))
        return position

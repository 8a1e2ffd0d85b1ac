"""Which simulated message each offset of a served partition holds, read off the fetches.

The consume proxy's core keeps a record's key and value, not its headers, so the message id a
simulated producer put in the ``sim-message-id`` header does not reach the readers through
it. A proxy server sees every data fetch response its feed gets (the cluster client's
response hook), and this table reads the message ids there: per partition, one ``array('q')``
column of ids for the offsets from the committed position to the end of what was fetched
(-1 where an offset holds no simulated message). The feed appends exactly the records at or
after its fetch offset, which is this table's end, so the two stay in step. Committed
offsets leave the column (:meth:`MessageIds.committed`), so it holds the records in flight,
not the run's history.
"""

from __future__ import annotations

from array import array

from replica.types import FetchPartitionData, TopicPartition
from sim.clients.records import message_ids_of

__all__ = ["UNKNOWN", "MessageIds"]

UNKNOWN = -1
"""The message id of an offset that holds no simulated message (a record without header)."""


class _Column:
    """The message ids of one partition from ``start`` (its committed position) on."""

    __slots__ = ("ids", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.ids = array("q")

    @property
    def end(self) -> int:
        return self.start + len(self.ids)


class MessageIds:
    """Offset -> message id for the partitions of one proxy server (see the module doc)."""

    __slots__ = ("_columns",)

    def __init__(self) -> None:
        self._columns: dict[TopicPartition, _Column] = {}

    def assign(self, tp: TopicPartition, start: int) -> None:
        """Track ``tp`` from offset ``start``, the position its feed fetches from."""
        self._columns[tp] = _Column(start)

    def fetched(self, tp: TopicPartition, data: FetchPartitionData) -> None:
        """A fetch of ``tp`` answered ``data`` (without error): take the ids of its records
        at or after the column's end; an offset skipped inside the answer is UNKNOWN."""
        column = self._columns.get(tp)
        if column is None:
            return
        for batch in data.records:
            ids = message_ids_of(batch.records)
            first = max(column.end - batch.base_offset, 0)
            if first >= len(ids):
                continue
            gap = batch.base_offset + first - column.end
            column.ids.extend([UNKNOWN] * gap)
            column.ids.extend(UNKNOWN if i is None else i for i in ids[first:])

    def message_id(self, tp: TopicPartition, offset: int) -> int:
        """The message id at ``offset`` of ``tp``; UNKNOWN if it holds none or is not
        tracked (committed already, or not fetched)."""
        column = self._columns.get(tp)
        if column is None or not column.start <= offset < column.end:
            return UNKNOWN
        return column.ids[offset - column.start]

    def committed(self, tp: TopicPartition, position: int) -> array[int]:
        """The data commit of ``tp`` reached ``position``: the known message ids of the
        offsets it passed since the last call (they leave the column)."""
        column = self._columns.get(tp)
        if column is None or position <= column.start:
            return array("q")
        passed = column.ids[: position - column.start]
        del column.ids[: position - column.start]
        column.start = max(position, column.start)
        return array("q", (i for i in passed if i != UNKNOWN))

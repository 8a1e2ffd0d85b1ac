"""Which delivered messages a commit covers: the per-partition ledger behind MessageCommitted.

A commit of position ``P`` for a partition covers every offset below ``P``. The ledger keeps,
per partition, the offsets and message ids of delivered messages no successful commit has
covered yet, as two columns in offset order, and hands them out when one does.
"""

from __future__ import annotations

from bisect import bisect_left

from replica.types import TopicPartition

__all__ = ["CommitLedger"]


class CommitLedger:
    """Delivered, not yet committed messages per partition."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: dict[TopicPartition, tuple[list[int], list[int]]] = {}

    def delivered(self, tp: TopicPartition, offsets: list[int], message_ids: list[int]) -> None:
        """Remember delivered messages of ``tp``, given as columns (offsets in increasing
        order, above those delivered before)."""
        columns = self._pending.get(tp)
        if columns is None:
            self._pending[tp] = (offsets, message_ids)  # the ledger owns the lists now
        else:
            columns[0].extend(offsets)
            columns[1].extend(message_ids)

    def clear(self) -> None:
        """Forget every pending message (a rebalance revoked their partitions: whoever
        consumes them next delivers and commits them again)."""
        self._pending.clear()

    def committed(self, tp: TopicPartition, position: int) -> tuple[list[int], list[int]]:
        """A commit of ``position`` succeeded: return and forget the offsets and message ids
        it covers (offset < position), in offset order."""
        columns = self._pending.get(tp)
        if columns is None:
            return [], []
        offsets, message_ids = columns
        count = bisect_left(offsets, position)
        covered = offsets[:count], message_ids[:count]
        del offsets[:count], message_ids[:count]
        return covered

"""Which delivered messages a commit covers: the per-partition ledger behind MessageCommitted.

A commit of position ``P`` for a partition covers every offset below ``P``. The ledger keeps,
per partition, the offsets and message ids of delivered messages no successful commit has
covered yet, as two columns in offset order, and hands them out when one does.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from replica.types import TopicPartition

__all__ = ["CommitLedger"]


class CommitLedger:
    """Delivered, not yet committed messages per partition."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: dict[TopicPartition, tuple[list[int], list[int]]] = {}

    def delivered(
        self, tps: Sequence[TopicPartition], offsets: Sequence[int], message_ids: Sequence[int]
    ) -> None:
        """Remember delivered messages, given as columns (offsets of one partition arrive in
        increasing order)."""
        pending = self._pending
        for tp, offset, message_id in zip(tps, offsets, message_ids, strict=True):
            columns = pending.get(tp)
            if columns is None:
                columns = pending[tp] = ([], [])
            columns[0].append(offset)
            columns[1].append(message_id)

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

"""Which delivered messages a commit covers: the per-partition ledger behind MessageCommitted.

A commit of position ``P`` for a partition covers every offset below ``P``. The ledger keeps,
per partition, the ``(offset, message_id)`` of delivered messages no successful commit has
covered yet, in offset order, and hands them out when one does.
"""

from __future__ import annotations

from collections import deque

from replica.types import TopicPartition

__all__ = ["CommitLedger"]


class CommitLedger:
    """Delivered, not yet committed messages per partition."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: dict[TopicPartition, deque[tuple[int, int]]] = {}

    def delivered(self, tp: TopicPartition, offset: int, message_id: int) -> None:
        """Remember a delivered message (offsets of one partition arrive in increasing order)."""
        queue = self._pending.get(tp)
        if queue is None:
            queue = self._pending[tp] = deque()
        queue.append((offset, message_id))

    def committed(self, tp: TopicPartition, position: int) -> list[tuple[int, int]]:
        """A commit of ``position`` succeeded: return and forget the ``(offset, message_id)``
        pairs it covers (offset < position), in offset order."""
        queue = self._pending.get(tp)
        covered: list[tuple[int, int]] = []
        while queue and queue[0][0] < position:
            covered.append(queue.popleft())
        return covered

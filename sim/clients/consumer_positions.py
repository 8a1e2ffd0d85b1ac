"""Where a consumer is in each assigned partition: three offsets per partition.

All three are positions in Kafka's sense, "the next offset to read":

* the *consumed* position: the next offset the application will receive; it moves when the
  application polls records, and it is what a commit of "the consumed positions" commits;
* the *fetch* position: the next offset to ask the leader for; it runs ahead of the consumed
  one by the records fetched but not yet polled;
* the *committed* position: the highest position a commit of this consumer (or the group's
  OffsetFetch at start) confirmed.

A partition whose fetch position is unknown is not fetched: its position is being looked up
(OffsetFetch at start, or ListOffsets for ``auto_offset_reset``, see
:mod:`sim.clients.consumer_offset_lookup`). :meth:`Positions.start_at` sets the consumed and
fetch positions together; :meth:`Positions.forget` clears both before a reset.
:meth:`Positions.revoke` (a rebalance) drops the assignment and every position, and starts a
new *epoch*: answers to lookups made for an older epoch are stale and must be ignored.

Plain bookkeeping: no requests, no clock. Mapping order is insertion order, and every method
changes it exactly as the consumer always did (commits of "the consumed positions" list the
partitions in that order).
"""

from __future__ import annotations

from collections.abc import Iterable

from replica.types import TopicPartition

__all__ = ["Positions"]


class Positions:
    """The assignment and, per assigned partition, its consumed, fetch and committed
    positions."""

    __slots__ = ("_assigned", "_committed", "_consumed", "_epoch", "_fetch")

    def __init__(self) -> None:
        self._epoch = 0
        self._assigned: tuple[TopicPartition, ...] = ()
        self._consumed: dict[TopicPartition, int] = {}
        self._fetch: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}

    @property
    def assigned(self) -> tuple[TopicPartition, ...]:
        """The assigned partitions, in assignment order, without duplicates."""
        return self._assigned

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Replace the assignment (duplicates dropped, first occurrence kept)."""
        self._assigned = tuple(dict.fromkeys(partitions))

    @property
    def epoch(self) -> int:
        """How many times the assignment was revoked."""
        return self._epoch

    def revoke(self) -> None:
        """A rebalance takes every partition away: forget the assignment and all positions."""
        self._epoch += 1
        self._assigned = ()
        self._consumed.clear()
        self._fetch.clear()
        self._committed.clear()

    def consumed(self, tp: TopicPartition) -> int | None:
        """The next offset the application will receive from ``tp`` (None until known)."""
        return self._consumed.get(tp)

    def fetch_position(self, tp: TopicPartition) -> int | None:
        """The next offset to fetch from ``tp``; None while its position is looked up."""
        return self._fetch.get(tp)

    def committed(self, tp: TopicPartition) -> int | None:
        """The highest committed position known for ``tp``."""
        return self._committed.get(tp)

    def consumed_positions(self) -> dict[TopicPartition, int]:
        """A copy of every known consumed position (what a default commit commits)."""
        return dict(self._consumed)

    def start_at(self, tp: TopicPartition, offset: int) -> None:
        """``tp``'s position was looked up: consume and fetch from ``offset``."""
        self._consumed[tp] = offset
        self._fetch[tp] = offset

    def resume_from_committed(self, tp: TopicPartition, offset: int) -> None:
        """The group's OffsetFetch returned ``offset`` for ``tp``: start there, and remember it
        as committed."""
        self.start_at(tp, offset)
        self._committed[tp] = offset

    def forget(self, tp: TopicPartition) -> None:
        """Drop ``tp``'s consumed and fetch positions: it is about to be reset."""
        self._consumed.pop(tp, None)
        self._fetch.pop(tp, None)

    def fetched_up_to(self, tp: TopicPartition, offset: int) -> None:
        """A fetch of ``tp`` returned records up to ``offset`` (exclusive): fetch from there."""
        self._fetch[tp] = offset

    def polled(self, tp: TopicPartition, offset: int) -> None:
        """The application received the record at ``offset``: consume from the next one."""
        self._consumed[tp] = offset + 1

    def commit_succeeded(self, tp: TopicPartition, position: int) -> None:
        """A commit of ``position`` for ``tp`` succeeded; the committed position never moves
        back."""
        if position > self._committed.get(tp, -1):
            self._committed[tp] = position

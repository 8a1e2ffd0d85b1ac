"""Completion tracking for the Burrow consumer: which messages may be committed.

A :class:`SequenceTracker` is one sequence space: messages get consecutive sequence numbers
as they arrive, workers mark them processed (or failed) in any order, and the tracker keeps
the end of the contiguous processed prefix with
:func:`~sim.clients.burrow.gap.committable_sequence` (started from the previous prefix end, so
the scan is amortised O(1) per message).

A :class:`GapTracker` holds the sequence spaces of a consumer:

* ``per_partition=False`` (Burrow's design): ONE space for every partition, so a gap on any
  partition holds back commits on all of them;
* ``per_partition=True``: one space per partition, so partitions commit independently
  (the "before" design of the seed, kept to compare with).
"""

from __future__ import annotations

from typing import Protocol

import attrs

from replica.types import TopicPartition
from sim.clients.burrow.gap import MessageInfo, committable_sequence, sequences_to_offsets

__all__ = ["CommitPlan", "GapTracker", "SequenceSpace", "SequenceTracker", "Ticket"]


class SequenceTracker:
    """One sequence space (Burrow's ``SequenceTracker``).

    Invariants: ``-1 <= last_committed <= contiguous <= high_watermark``; every sequence in
    ``(last_committed, contiguous]`` is processed; ``contiguous + 1`` is not processed (or not
    assigned yet). Entries up to ``last_committed`` are forgotten (memory is O(uncommitted)).
    """

    __slots__ = (
        "contiguous",
        "in_flight",
        "last_committed",
        "messages",
        "next_sequence",
        "processed",
    )

    def __init__(self) -> None:
        self.messages: dict[int, MessageInfo] = {}
        self.processed: set[int] = set()
        self.next_sequence = 0
        self.last_committed = -1
        self.contiguous = -1
        self.in_flight = 0

    @property
    def high_watermark(self) -> int:
        """Highest sequence assigned so far (-1 if none)."""
        return self.next_sequence - 1

    def assign(self, info: MessageInfo) -> int:
        """Give ``info`` the next sequence number and return it."""
        seq = self.next_sequence
        self.next_sequence = seq + 1
        self.messages[seq] = info
        self.in_flight += 1
        return seq

    def mark_processed(self, seq: int) -> list[MessageInfo]:
        """Record that ``seq`` was processed; return the messages that just joined the
        contiguous prefix (in sequence order; empty if ``seq`` left a gap before it)."""
        self.processed.add(seq)
        self.in_flight -= 1
        if seq != self.contiguous + 1:
            return []
        end = committable_sequence(self.processed, self.contiguous, self.high_watermark)
        joined = [self.messages[s] for s in range(self.contiguous + 1, end + 1)]
        self.contiguous = end
        return joined

    def mark_failed(self, seq: int) -> None:
        """Record that ``seq`` failed for good: it stays a gap (Burrow's ``MarkFailed``)."""
        self.in_flight -= 1

    def committable_offsets(self) -> dict[TopicPartition, int]:
        """Highest processed offset per partition in ``(last_committed, contiguous]``."""
        return sequences_to_offsets(self.messages, self.last_committed, self.contiguous)

    def commit(self, seq: int) -> None:
        """Mark everything up to ``seq`` committed and forget it.

        ``seq`` must be in ``[last_committed, contiguous]``; raises ValueError otherwise.
        """
        if not self.last_committed <= seq <= self.contiguous:
            raise ValueError(
                f"cannot commit through sequence {seq}: must be between the last committed "
                f"({self.last_committed}) and the committable ({self.contiguous})"
            )
        for s in range(self.last_committed + 1, seq + 1):
            del self.messages[s]
            self.processed.discard(s)
        self.last_committed = seq


@attrs.frozen(eq=False)
class Ticket:
    """A message's place in a tracker: its sequence space and its sequence number."""

    space: SequenceTracker
    seq: int


class SequenceSpace(Protocol):
    """What a commit plan needs of a sequence space: marking a prefix committed."""

    def commit(self, seq: int) -> None: ...


@attrs.frozen(eq=False)
class CommitPlan:
    """What a commit would cover: highest processed offset per partition, and for every
    sequence space the sequence to mark committed once the commit succeeds."""

    offsets: dict[TopicPartition, int]
    marks: tuple[tuple[SequenceSpace, int], ...]
    message_count: int

    @property
    def empty(self) -> bool:
        return not self.offsets

    def mark_committed(self) -> None:
        """The commit succeeded: mark what it covers committed in every space."""
        for space, seq in self.marks:
            space.commit(seq)


class GapTracker:
    """The sequence spaces of one consumer: one global space, or one per partition."""

    __slots__ = ("_spaces", "per_partition")

    def __init__(self, *, per_partition: bool) -> None:
        self.per_partition = per_partition
        self._spaces: dict[TopicPartition | None, SequenceTracker] = {}

    def assign(self, info: MessageInfo) -> Ticket:
        """Give ``info`` a sequence number in its space."""
        key = info.tp if self.per_partition else None
        space = self._spaces.get(key)
        if space is None:
            space = self._spaces[key] = SequenceTracker()
        return Ticket(space, space.assign(info))

    def mark_processed(self, ticket: Ticket) -> list[MessageInfo]:
        """Mark ``ticket`` processed; return the messages that became committable."""
        return ticket.space.mark_processed(ticket.seq)

    def mark_failed(self, ticket: Ticket) -> None:
        """Mark ``ticket`` permanently failed (it stays a gap)."""
        ticket.space.mark_failed(ticket.seq)

    def plan(self) -> CommitPlan:
        """The commit the current state allows (possibly empty)."""
        offsets: dict[TopicPartition, int] = {}
        marks: list[tuple[SequenceSpace, int]] = []
        count = 0
        for space in self._spaces.values():
            if space.contiguous > space.last_committed:
                offsets.update(space.committable_offsets())
                marks.append((space, space.contiguous))
                count += space.contiguous - space.last_committed
        return CommitPlan(offsets, tuple(marks), count)

    def commit(self, plan: CommitPlan) -> None:
        """Mark what ``plan`` covers as committed."""
        plan.mark_committed()

    @property
    def committable_backlog(self) -> int:
        """Messages in the committable prefixes that are not committed yet."""
        return sum(s.contiguous - s.last_committed for s in self._spaces.values())

    @property
    def in_flight(self) -> int:
        """Messages assigned and neither processed nor failed."""
        return sum(s.in_flight for s in self._spaces.values())

"""LeaderEpochCache: which leader epoch wrote which offsets of a log (Kafka's
``LeaderEpochFileCache``, KIP-101 / KIP-279, kept in memory).

An entry ``(epoch, start_offset)`` says that the first offset written in leader epoch ``epoch``
is ``start_offset``; the epoch's offsets end where the next entry starts, or at the log end
offset for the latest entry. Entries strictly increase in both epoch and start offset.

The :class:`~replica.log.Log` maintains it: every appended batch assigns its
``partition_leader_epoch`` at its base offset, a new leader assigns its epoch at its log end
offset when elected (so it can answer for the epochs before it even before it appends),
truncating the end of the log removes the entries starting at or after the new end, and
emptying the log clears it. Lookups are binary searches (O(log epochs)); assigning the epoch
that is already the latest, the case of nearly every append, is O(1).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Final

from replica.exceptions import ReplicaArgumentError

#: Kafka's ``UNDEFINED_EPOCH``: no epoch known.
UNDEFINED_EPOCH: Final = -1
#: Kafka's ``UNDEFINED_EPOCH_OFFSET``: no end offset known.
UNDEFINED_EPOCH_OFFSET: Final = -1


class LeaderEpochCache:
    """Leader epochs and their start offsets, oldest first."""

    __slots__ = ("_epochs", "_start_offsets")

    def __init__(self) -> None:
        self._epochs: list[int] = []
        self._start_offsets: list[int] = []

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self.entries})"

    @property
    def entries(self) -> tuple[tuple[int, int], ...]:
        """Every ``(epoch, start_offset)``, oldest first."""
        return tuple(zip(self._epochs, self._start_offsets, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        """The newest epoch, or None if the cache is empty."""
        return self._epochs[-1] if self._epochs else None

    @property
    def earliest_entry(self) -> tuple[int, int] | None:
        """The oldest ``(epoch, start_offset)``, or None if the cache is empty."""
        return (self._epochs[0], self._start_offsets[0]) if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; return whether anything changed.

        Nothing changes when ``epoch`` is already the latest epoch and starts at or before
        ``start_offset``. Otherwise every entry that would break the ordering (an epoch >=
        ``epoch`` or a start offset >= ``start_offset``) is removed first, as Kafka does.

        Raises:
            ReplicaArgumentError: ``epoch`` or ``start_offset`` is negative.
        """
        epochs = self._epochs
        starts = self._start_offsets
        if epochs and epochs[-1] == epoch and starts[-1] <= start_offset:
            return False
        if epoch < 0 or start_offset < 0:
            raise ReplicaArgumentError(
                f"a leader epoch entry needs epoch >= 0 and start offset >= 0, got epoch "
                f"{epoch} at offset {start_offset}"
            )
        while epochs and (epochs[-1] >= epoch or starts[-1] >= start_offset):
            epochs.pop()
            starts.pop()
        epochs.append(epoch)
        starts.append(start_offset)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove the entries starting at or after ``end_offset`` (the log was cut there)."""
        epochs = self._epochs
        starts = self._start_offsets
        while starts and starts[-1] >= end_offset:
            epochs.pop()
            starts.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop the entries wholly before it; the last
        epoch starting before it is kept, moved to start there (Kafka's
        ``truncateFromStart``)."""
        epochs = self._epochs
        starts = self._start_offsets
        keep = bisect_right(starts, start_offset) - 1
        if keep < 0:
            return
        del epochs[:keep], starts[:keep]
        starts[0] = start_offset

    def clear(self) -> None:
        """Remove every entry (the log was emptied)."""
        self._epochs.clear()
        self._start_offsets.clear()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end_offset)`` for ``requested_epoch`` (Kafka's ``endOffsetFor``).

        * the latest epoch: ``(requested_epoch, log_end_offset)``;
        * an older epoch: the largest known epoch <= ``requested_epoch`` and the start offset
          of the first epoch after it; when every known epoch is larger,
          ``(requested_epoch, start offset of the earliest epoch)``;
        * ``UNDEFINED_EPOCH``, a newer epoch than any known, or an empty cache:
          ``(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)``.
        """
        epochs = self._epochs
        if requested_epoch == UNDEFINED_EPOCH or not epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._start_offsets[0]
        return epochs[higher - 1], self._start_offsets[higher]

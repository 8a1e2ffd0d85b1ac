"""Burrow's gap detection as pure functions: no state, no I/O, trivially testable.

Messages get consecutive *sequence numbers* in the order the poll loop receives them
(0, 1, 2, ...). A commit may only cover a contiguous prefix of processed sequences: if
sequence ``s`` is not processed, nothing at or after ``s`` is committable, whatever its
partition. The committable prefix is then turned into one position per partition.

Offsets vs commit positions: :func:`sequences_to_offsets` returns the highest *processed
offset* per partition (the seed's example gives ``p0 -> 101``). Kafka's OffsetCommit stores
the *next offset to read*, so the value sent is that offset + 1 (:func:`commit_positions`,
``p0 -> 102``); a consumer restarting from the committed position therefore resumes right
after the last processed message.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

# Burrow's name for the project's one gap-detection function (the consume proxy uses it too).
from purgatory.contiguous import contiguous_end as committable_sequence
from replica.types import TopicPartition

__all__ = ["MessageInfo", "commit_positions", "committable_sequence", "sequences_to_offsets"]


@attrs.frozen
class MessageInfo:
    """Where a sequence number's message came from, and which produced message it is."""

    tp: TopicPartition
    offset: int
    message_id: int


def sequences_to_offsets(
    messages: Mapping[int, MessageInfo], last_committed: int, committable: int
) -> dict[TopicPartition, int]:
    """Highest offset per partition among the sequences in ``(last_committed, committable]``.

    Sequences missing from ``messages`` are skipped. Partitions with no sequence in the range
    are absent (nothing new to commit for them).
    """
    offsets: dict[TopicPartition, int] = {}
    for seq in range(last_committed + 1, committable + 1):
        info = messages.get(seq)
        if info is None:
            continue
        current = offsets.get(info.tp)
        if current is None or info.offset > current:
            offsets[info.tp] = info.offset
    return offsets


def commit_positions(offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Kafka commit positions for the highest processed ``offsets``: each offset + 1."""
    return {tp: offset + 1 for tp, offset in offsets.items()}

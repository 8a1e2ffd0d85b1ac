"""OffsetForLeaderEpoch: where a leader epoch ends in a partition's log (Kafka API key 23).

A consumer asks after the leader of a partition it reads has changed: it sends the leader
epoch of the last record it consumed, and if that epoch ends, in the new leader's log, before
the consumer's position, the log was truncated under it and the consumer must reset (KIP-320).
Kafka's followers used to ask it too, before truncating; here they learn the same from their
fetches (diverging epochs, KIP-595), so only clients send it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Final, NamedTuple

import attrs

from apis.header import ApiKeys
from replica.errors import Errors
from replica.types import CONSUMER_REPLICA_ID, OffsetForLeaderEpochResult, TopicPartition

__all__ = [
    "DEBUGGING_REPLICA_ID",
    "OffsetForLeaderEpochPartition",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "OffsetForLeaderEpochResult",
]

#: Kafka's ``DEBUGGING_REPLICA_ID``: a tool's request, which any replica answers (not only the
#: leader).
DEBUGGING_REPLICA_ID: Final = -2


class OffsetForLeaderEpochPartition(NamedTuple):
    """One partition of the request: the epoch to look up, and the leader epoch the client
    knows (``None``: not checked), which fences a client with stale metadata."""

    leader_epoch: int
    current_leader_epoch: int | None = None


@attrs.define(frozen=True)
class OffsetForLeaderEpochRequest:
    """Per partition, the epoch whose end offset the client wants (see the module docstring)."""

    API_KEY: ClassVar[ApiKeys] = ApiKeys.OFFSET_FOR_LEADER_EPOCH

    epochs: Mapping[TopicPartition, OffsetForLeaderEpochPartition]
    replica_id: int = CONSUMER_REPLICA_ID

    def error_response(self, error: Errors) -> OffsetForLeaderEpochResponse:
        """A response giving ``error`` for every partition."""
        return OffsetForLeaderEpochResponse(
            {tp: OffsetForLeaderEpochResult(error) for tp in self.epochs}
        )


@attrs.define(frozen=True)
class OffsetForLeaderEpochResponse:
    """Per partition: error, the largest epoch <= the one asked for, and where it ends."""

    responses: Mapping[TopicPartition, OffsetForLeaderEpochResult]
    throttle_time_ms: int = 0

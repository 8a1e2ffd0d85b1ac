"""ListOffsets: the offset of a timestamp, or of the log's start or end (Kafka API key 2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors
from replica.types import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    IsolationLevel,
    TopicPartition,
)
from replica.types import ListOffsetsResult as ListOffsetsPartitionResponse

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "ListOffsetsPartitionResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
]


@attrs.define(frozen=True)
class ListOffsetsRequest:
    """Per partition, the timestamp to look up: ``LATEST_TIMESTAMP`` (-1, the end offset: the
    high watermark for consumers, the log end offset for a replica), ``EARLIEST_TIMESTAMP``
    (-2, the log start offset) or a record timestamp >= 0 (the first offset at or after it).

    ``current_leader_epochs`` (optional, per partition) fences a client with stale metadata.
    """

    API_KEY: ClassVar[ApiKeys] = ApiKeys.LIST_OFFSETS

    timestamps: Mapping[TopicPartition, int]
    replica_id: int = CONSUMER_REPLICA_ID
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    current_leader_epochs: Mapping[TopicPartition, int] = attrs.field(factory=dict)

    def error_response(self, error: Errors) -> ListOffsetsResponse:
        """A response giving ``error`` for every partition."""
        return ListOffsetsResponse(
            {tp: ListOffsetsPartitionResponse(error) for tp in self.timestamps}
        )


@attrs.define(frozen=True)
class ListOffsetsResponse:
    """Per-partition answers: error, found timestamp and offset, leader epoch."""

    responses: Mapping[TopicPartition, ListOffsetsPartitionResponse]
    throttle_time_ms: int = 0

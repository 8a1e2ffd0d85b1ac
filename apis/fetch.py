"""Fetch: read records from partition leaders, long-polling for data (Kafka API key 1).

Consumers and follower brokers use the same request; ``replica_id`` tells them apart
(``-1``: a consumer, ``>= 0``: the id of a follower broker).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors
from replica.types import (
    CONSUMER_REPLICA_ID,
    UNKNOWN_OFFSET,
    FetchPartitionData,
    IsolationLevel,
    PartitionFetchInfo,
    TopicPartition,
)

__all__ = [
    "FetchPartitionData",
    "FetchRequest",
    "FetchResponse",
    "PartitionFetchInfo",
    "fetch_error",
]


@attrs.define(frozen=True)
class FetchRequest:
    """Read ``fetch_data`` (per partition: fetch offset and byte limit).

    Wait up to ``max_wait_ms`` for ``min_bytes`` to be available (``max_wait_ms <= 0``: answer
    at once, as in Kafka); ``max_bytes`` bounds the whole response. A negative ``min_bytes`` or
    ``max_bytes`` is answered with INVALID_REQUEST by the broker.

    ``session_id`` and ``session_epoch`` place the fetch in a fetch session (KIP-227; see
    :mod:`apis.fetch_session`): the defaults make a sessionless full fetch. An incremental
    fetch lists only the partitions added or changed and names those to drop in
    ``forgotten``.
    """

    API_KEY: ClassVar[ApiKeys] = ApiKeys.FETCH

    fetch_data: Mapping[TopicPartition, PartitionFetchInfo]
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52_428_800
    replica_id: int = CONSUMER_REPLICA_ID
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    session_id: int = 0
    session_epoch: int = -1
    forgotten: Sequence[TopicPartition] = ()

    def error_response(self, error: Errors) -> FetchResponse:
        """A response with top-level ``error`` and ``error`` for every partition."""
        return FetchResponse(error, {tp: fetch_error(error) for tp in self.fetch_data})


def fetch_error(error: Errors) -> FetchPartitionData:
    """A partition's fetch result carrying only ``error`` (no records, unknown offsets)."""
    return FetchPartitionData(
        error, UNKNOWN_OFFSET, UNKNOWN_OFFSET, UNKNOWN_OFFSET, (), 0, UNKNOWN_OFFSET
    )


@attrs.define(frozen=True)
class FetchResponse:
    """Top-level error and per-partition data: error, high watermark, log start offset, last
    stable offset and whole record batches.

    ``log_end_offset`` of a partition is only filled in for follower fetches (the model's
    follower uses it where Kafka's asks with ListOffsets); consumers get -1.

    ``session_id`` is the fetch session the response belongs to (0: none); an incremental
    fetch's response lists only the partitions with news (see :mod:`apis.fetch_session`).
    """

    error: Errors
    responses: Mapping[TopicPartition, FetchPartitionData]
    throttle_time_ms: int = 0
    session_id: int = 0

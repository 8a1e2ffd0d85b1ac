"""Fetch: read records from partition leaders, long-polling for data (Kafka API key 1).

Consumers and follower brokers use the same request; ``replica_id`` tells them apart
(``-1``: a consumer, ``>= 0``: the id of a follower broker).

The request and the response are plain classes (immutable by convention, compared by their
fields), not attrs ones: most requests are fetches, and in the compiled build a plain class is
native, cheap to build and read (see :mod:`apis.body_fields` for how their fields are
declared).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

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

    API_KEY: Final = ApiKeys.FETCH
    FIELDS: Final = (
        ("fetch_data", Mapping),
        ("max_wait_ms", int),
        ("min_bytes", int),
        ("max_bytes", int),
        ("replica_id", int),
        ("isolation_level", IsolationLevel),
        ("session_id", int),
        ("session_epoch", int),
        ("forgotten", Sequence),
    )
    """The constructor's parameters and their declared types, shallowly
    (:mod:`apis.body_fields`)."""

    __slots__ = (
        "fetch_data",
        "forgotten",
        "isolation_level",
        "max_bytes",
        "max_wait_ms",
        "min_bytes",
        "replica_id",
        "session_epoch",
        "session_id",
    )

    def __init__(
        self,
        fetch_data: Mapping[TopicPartition, PartitionFetchInfo],
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 52_428_800,
        replica_id: int = CONSUMER_REPLICA_ID,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
        session_id: int = 0,
        session_epoch: int = -1,
        forgotten: Sequence[TopicPartition] = (),
    ) -> None:
        self.fetch_data = fetch_data
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.replica_id = replica_id
        self.isolation_level = isolation_level
        self.session_id = session_id
        self.session_epoch = session_epoch
        self.forgotten = forgotten

    def _fields(self) -> tuple[object, ...]:
        return (
            self.fetch_data,
            self.max_wait_ms,
            self.min_bytes,
            self.max_bytes,
            self.replica_id,
            self.isolation_level,
            self.session_id,
            self.session_epoch,
            self.forgotten,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FetchRequest) and self._fields() == other._fields()

    def __repr__(self) -> str:
        return (
            f"FetchRequest(fetch_data={self.fetch_data!r}, max_wait_ms={self.max_wait_ms!r}, "
            f"min_bytes={self.min_bytes!r}, max_bytes={self.max_bytes!r}, "
            f"replica_id={self.replica_id!r}, isolation_level={self.isolation_level!r}, "
            f"session_id={self.session_id!r}, session_epoch={self.session_epoch!r}, "
            f"forgotten={self.forgotten!r})"
        )

    def error_response(self, error: Errors) -> FetchResponse:
        """A response with top-level ``error`` and ``error`` for every partition."""
        return FetchResponse(error, {tp: fetch_error(error) for tp in self.fetch_data})


def fetch_error(error: Errors) -> FetchPartitionData:
    """A partition's fetch result carrying only ``error`` (no records, unknown offsets)."""
    return FetchPartitionData(
        error, UNKNOWN_OFFSET, UNKNOWN_OFFSET, UNKNOWN_OFFSET, (), 0, UNKNOWN_OFFSET
    )


class FetchResponse:
    """Top-level error and per-partition data: error, high watermark, log start offset, last
    stable offset and whole record batches.

    ``log_end_offset`` of a partition is only filled in for follower fetches (the model's
    follower uses it where Kafka's asks with ListOffsets); consumers get -1.

    ``session_id`` is the fetch session the response belongs to (0: none); an incremental
    fetch's response lists only the partitions with news (see :mod:`apis.fetch_session`).
    """

    __slots__ = ("error", "responses", "session_id", "throttle_time_ms")

    def __init__(
        self,
        error: Errors,
        responses: Mapping[TopicPartition, FetchPartitionData],
        throttle_time_ms: int = 0,
        session_id: int = 0,
    ) -> None:
        self.error = error
        self.responses = responses
        self.throttle_time_ms = throttle_time_ms
        self.session_id = session_id

    def _fields(self) -> tuple[object, ...]:
        return (self.error, self.responses, self.throttle_time_ms, self.session_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FetchResponse) and self._fields() == other._fields()

    def __repr__(self) -> str:
        return (
            f"FetchResponse(error={self.error!r}, responses={self.responses!r}, "
            f"throttle_time_ms={self.throttle_time_ms!r}, session_id={self.session_id!r})"
        )

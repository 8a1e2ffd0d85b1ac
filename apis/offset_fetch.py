"""OffsetFetch: read a group's committed positions (Kafka API key 9)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors
from replica.types import UNKNOWN_OFFSET, TopicPartition

__all__ = ["OffsetFetchRequest", "OffsetFetchResponse", "OffsetFetchResponsePartition"]


@attrs.define(frozen=True)
class OffsetFetchRequest:
    """Fetch ``group_id``'s committed offsets of ``partitions`` (None: every partition the
    group has committed)."""

    API_KEY: ClassVar[ApiKeys] = ApiKeys.OFFSET_FETCH

    group_id: str
    partitions: Sequence[TopicPartition] | None = None

    def error_response(self, error: Errors) -> OffsetFetchResponse:
        """A response with top-level ``error`` and no offsets."""
        return OffsetFetchResponse(error, {})


@attrs.define(frozen=True)
class OffsetFetchResponsePartition:
    """One partition's committed position; ``offset`` is -1 when nothing is committed."""

    offset: int = UNKNOWN_OFFSET
    metadata: str = ""
    leader_epoch: int | None = None
    error: Errors = Errors.NONE


@attrs.define(frozen=True)
class OffsetFetchResponse:
    """Top-level error (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...) and, when it is
    NONE, the committed offsets."""

    error: Errors
    offsets: Mapping[TopicPartition, OffsetFetchResponsePartition]
    throttle_time_ms: int = 0

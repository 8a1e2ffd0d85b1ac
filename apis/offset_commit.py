"""OffsetCommit: store a group's consumed positions (Kafka API key 8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors
from replica.types import TopicPartition

__all__ = ["OffsetCommitRequest", "OffsetCommitRequestPartition", "OffsetCommitResponse"]


@attrs.define(frozen=True)
class OffsetCommitRequestPartition:
    """One partition's committed position: next offset to consume, leader epoch, metadata."""

    committed_offset: int
    committed_metadata: str = ""
    committed_leader_epoch: int | None = None


@attrs.define(frozen=True)
class OffsetCommitRequest:
    """Commit ``offsets`` for ``group_id``.

    ``generation_id`` / ``member_id`` are Kafka's group-membership fields, checked by the
    group coordinator; generation -1 and no member id is a commit from outside group
    management (an ``assign()``-mode consumer).
    """

    API_KEY: ClassVar[ApiKeys] = ApiKeys.OFFSET_COMMIT

    group_id: str
    offsets: Mapping[TopicPartition, OffsetCommitRequestPartition]
    generation_id: int = -1
    member_id: str = ""

    def error_response(self, error: Errors) -> OffsetCommitResponse:
        """A response giving ``error`` for every partition of the request."""
        return OffsetCommitResponse({tp: error for tp in self.offsets})


@attrs.define(frozen=True)
class OffsetCommitResponse:
    """Per-partition error code of a commit (NONE: the offset is committed)."""

    errors: Mapping[TopicPartition, Errors]
    throttle_time_ms: int = 0

"""SyncGroup: the leader hands in the assignment, every member gets its own (Kafka API key 14)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors

__all__ = ["SyncGroupRequest", "SyncGroupResponse"]


@attrs.define(frozen=True)
class SyncGroupRequest:
    """Sync ``member_id`` with generation ``generation_id`` of ``group_id``; the leader sends
    ``assignments`` (member id -> assignment), the others send none. ``protocol_type`` and
    ``protocol_name`` (v5+), when given, must be the group's."""

    API_KEY: ClassVar[ApiKeys] = ApiKeys.SYNC_GROUP

    group_id: str
    generation_id: int
    member_id: str
    assignments: Mapping[str, bytes] = attrs.field(factory=dict)
    protocol_type: str | None = None
    protocol_name: str | None = None

    def error_response(self, error: Errors) -> SyncGroupResponse:
        """A response with ``error`` and an empty assignment."""
        return SyncGroupResponse(error)


@attrs.define(frozen=True)
class SyncGroupResponse:
    """The member's assignment (empty on an error)."""

    error: Errors
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None
    throttle_time_ms: int = 0

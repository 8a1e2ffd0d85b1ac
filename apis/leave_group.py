"""LeaveGroup: members leave a group, which rebalances without them (Kafka API key 13)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors

__all__ = ["LeaveGroupRequest", "LeaveGroupResponse", "LeaveGroupResponseMember"]


@attrs.define(frozen=True)
class LeaveGroupRequest:
    """``member_ids`` leave ``group_id`` (one member before v3, a batch from v3)."""

    API_KEY: ClassVar[ApiKeys] = ApiKeys.LEAVE_GROUP

    group_id: str
    member_ids: Sequence[str]

    def error_response(self, error: Errors) -> LeaveGroupResponse:
        """A response with top-level ``error`` and no member."""
        return LeaveGroupResponse(error)


@attrs.define(frozen=True)
class LeaveGroupResponseMember:
    """One leaving member's error (UNKNOWN_MEMBER_ID: not in the group)."""

    member_id: str
    error: Errors


@attrs.define(frozen=True)
class LeaveGroupResponse:
    """A top-level error and, when it is NONE, one error per member in the request's order."""

    error: Errors
    members: Sequence[LeaveGroupResponseMember] = ()
    throttle_time_ms: int = 0

"""JoinGroup: join a consumer group, or rejoin it for a rebalance (Kafka API key 11)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors

__all__ = [
    "JoinGroupRequest",
    "JoinGroupRequestProtocol",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
]


@attrs.define(frozen=True)
class JoinGroupRequestProtocol:
    """A protocol the member supports (a consumer's assignor name) and its metadata for it
    (the consumer's subscription)."""

    name: str
    metadata: bytes = b""


@attrs.define(frozen=True)
class JoinGroupRequest:
    """Join ``group_id`` as ``member_id`` ("" for a new member) with ``protocols`` in order of
    preference.

    ``rebalance_timeout_ms`` -1 (JoinGroup v0 has none) means the session timeout. With
    ``api_version`` 4 or more in the request header, a new member first gets
    MEMBER_ID_REQUIRED with a member id to join with. Static membership (``group.instance.id``,
    v5+) is not modelled.
    """

    API_KEY: ClassVar[ApiKeys] = ApiKeys.JOIN_GROUP

    group_id: str
    session_timeout_ms: int
    protocols: Sequence[JoinGroupRequestProtocol]
    member_id: str = ""
    protocol_type: str = "consumer"
    rebalance_timeout_ms: int = -1

    def error_response(self, error: Errors) -> JoinGroupResponse:
        """A response with ``error``, no generation, and the request's member id."""
        member_id = self.member_id if isinstance(self.member_id, str) else ""  # malformed
        return JoinGroupResponse(error, member_id=member_id)


@attrs.define(frozen=True)
class JoinGroupResponseMember:
    """A member as the leader sees it: its id and its metadata for the selected protocol."""

    member_id: str
    metadata: bytes


@attrs.define(frozen=True)
class JoinGroupResponse:
    """The generation the member joined: its id, the leader's id and the selected protocol;
    the leader alone gets ``members`` to compute the assignment from. On an error the
    generation is -1 (MEMBER_ID_REQUIRED carries the member id to join with)."""

    error: Errors
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: Sequence[JoinGroupResponseMember] = ()
    throttle_time_ms: int = 0

"""Heartbeat: a member tells its coordinator it is alive (Kafka API key 12)."""

from __future__ import annotations

from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors

__all__ = ["HeartbeatRequest", "HeartbeatResponse"]


@attrs.define(frozen=True)
class HeartbeatRequest:
    """``member_id`` of generation ``generation_id`` of ``group_id`` is alive."""

    API_KEY: ClassVar[ApiKeys] = ApiKeys.HEARTBEAT

    group_id: str
    generation_id: int
    member_id: str

    def error_response(self, error: Errors) -> HeartbeatResponse:
        """A response with ``error``."""
        return HeartbeatResponse(error)


@attrs.define(frozen=True)
class HeartbeatResponse:
    """NONE, REBALANCE_IN_PROGRESS (rejoin) or an error."""

    error: Errors
    throttle_time_ms: int = 0

"""Request headers: which API a request calls and how its response is matched to it."""

from __future__ import annotations

from enum import IntEnum

import attrs

__all__ = ["ApiKeys", "RequestHeader"]


class ApiKeys(IntEnum):
    """Kafka's API keys (wire values) of the requests the model handles."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    OFFSET_FOR_LEADER_EPOCH = 23


@attrs.define(frozen=True)
class RequestHeader:
    """Kafka's request header (v1): API key and version, correlation id, client id.

    The correlation id is chosen by the client and echoed in the response so the client can
    match responses to requests on one connection.
    """

    api_key: ApiKeys
    correlation_id: int
    client_id: str = ""
    api_version: int = 0

"""Request headers: which API a request calls and how its response is matched to it."""

from __future__ import annotations

from enum import IntEnum

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


class RequestHeader:
    """Kafka's request header (v1): API key and version, correlation id, client id.

    The correlation id is chosen by the client and echoed in the response so the client can
    match responses to requests on one connection. Not to be changed once made (a plain
    class, as :class:`~apis.request_channel.Request` is, for the same reason).
    """

    __slots__ = ("api_key", "api_version", "client_id", "correlation_id")

    def __init__(
        self, api_key: ApiKeys, correlation_id: int, client_id: str = "", api_version: int = 0
    ) -> None:
        self.api_key = api_key
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.api_version = api_version

    def __repr__(self) -> str:
        return (
            f"RequestHeader({self.api_key!r}, correlation_id={self.correlation_id}, "
            f"client_id={self.client_id!r}, api_version={self.api_version})"
        )

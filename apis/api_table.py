"""The API table: one row per request type the broker handles, keyed by Kafka's API key.

Everything that depends on "which APIs are there" reads this table instead of keeping its own
list: :class:`~apis.kafka_apis.KafkaApis` dispatches by it, drivers name requests and find a
response's error by it, and a new API is one row here plus its ``handle_*`` method.

A row (:class:`Api`) says, for one API key:

* ``name``: Kafka's name of the API (``ApiKeys.PRODUCE.name`` is ``"Produce"`` in Kafka's
  request metrics and logs);
* ``request`` / ``response``: the body types of :mod:`apis`;
* ``handler``: the name of the :class:`~apis.kafka_apis.KafkaApis` method that handles it;
* ``delayed_in``: the purgatory a delayed response waits in (``"produce"`` for produces and
  for offset commits, whose append waits there; ``"fetch"`` for fetches; ``"rebalance"`` for
  JoinGroup and SyncGroup, parked while the group rebalances), or None for an API that always
  answers at once;
* ``errors``: the errors a response carries, top-level first, then per partition (or topic)
  in the response's order -- Kafka's ``AbstractResponse.errorCounts`` as a sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import attrs

from apis.controller_requests import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from apis.errors import Errors
from apis.fetch import FetchRequest, FetchResponse
from apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from apis.header import ApiKeys
from apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from apis.join_group import JoinGroupRequest, JoinGroupResponse
from apis.leave_group import LeaveGroupRequest, LeaveGroupResponse
from apis.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from apis.metadata import MetadataRequest, MetadataResponse
from apis.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from apis.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from apis.offset_for_leader_epoch import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from apis.produce import ProduceRequest, ProduceResponse
from apis.sync_group import SyncGroupRequest, SyncGroupResponse

__all__ = [
    "API_TABLE",
    "Api",
    "RequestBody",
    "ResponseBody",
    "api_of",
    "response_errors",
]

RequestBody = (
    ProduceRequest
    | FetchRequest
    | ListOffsetsRequest
    | MetadataRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
    | FindCoordinatorRequest
    | JoinGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | SyncGroupRequest
    | OffsetForLeaderEpochRequest
    | LeaderAndIsrRequest
    | StopReplicaRequest
    | UpdateMetadataRequest
)
"""Any request body (the ``request`` column of :data:`API_TABLE`)."""

ResponseBody = (
    ProduceResponse
    | FetchResponse
    | ListOffsetsResponse
    | MetadataResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | FindCoordinatorResponse
    | JoinGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | SyncGroupResponse
    | OffsetForLeaderEpochResponse
    | LeaderAndIsrResponse
    | StopReplicaResponse
    | UpdateMetadataResponse
)
"""Any response body (the ``response`` column of :data:`API_TABLE`)."""

ErrorsOf = Callable[[Any], list[Errors]]
"""A response's errors as a new list: lists, not generators, because a simulated run asks
each response for its errors and a list is several times cheaper to build and walk."""


@attrs.frozen
class Api:
    """One row of :data:`API_TABLE` (see the module docstring)."""

    key: ApiKeys
    name: str
    request: type[RequestBody]
    response: type[ResponseBody]
    handler: str
    delayed_in: Literal["produce", "fetch", "rebalance"] | None
    errors: ErrorsOf


def _top_level_then(parts: ErrorsOf) -> ErrorsOf:
    def errors(body: Any) -> list[Errors]:
        return [body.error, *parts(body)]

    return errors


def _partitions(body: Any) -> list[Errors]:
    return [part.error for part in body.responses.values()]


def _partition_errors(body: Any) -> list[Errors]:
    return list(body.partition_errors.values())


def _none(_body: Any) -> list[Errors]:
    return []


API_TABLE: Final[Mapping[ApiKeys, Api]] = {
    api.key: api
    for api in (
        Api(ApiKeys.PRODUCE, "Produce", ProduceRequest, ProduceResponse,
            "handle_produce", "produce", _partitions),
        Api(ApiKeys.FETCH, "Fetch", FetchRequest, FetchResponse,
            "handle_fetch", "fetch", _top_level_then(_partitions)),
        Api(ApiKeys.LIST_OFFSETS, "ListOffsets", ListOffsetsRequest, ListOffsetsResponse,
            "handle_list_offsets", None, _partitions),
        Api(ApiKeys.METADATA, "Metadata", MetadataRequest, MetadataResponse,
            "handle_metadata", None, lambda body: [t.error for t in body.topics.values()]),
        Api(ApiKeys.LEADER_AND_ISR, "LeaderAndIsr", LeaderAndIsrRequest, LeaderAndIsrResponse,
            "handle_leader_and_isr", None, _top_level_then(_partition_errors)),
        Api(ApiKeys.STOP_REPLICA, "StopReplica", StopReplicaRequest, StopReplicaResponse,
            "handle_stop_replica", None, _top_level_then(_partition_errors)),
        Api(ApiKeys.UPDATE_METADATA, "UpdateMetadata", UpdateMetadataRequest,
            UpdateMetadataResponse, "handle_update_metadata", None, _top_level_then(_none)),
        Api(ApiKeys.OFFSET_COMMIT, "OffsetCommit", OffsetCommitRequest, OffsetCommitResponse,
            "handle_offset_commit", "produce", lambda body: list(body.errors.values())),
        Api(ApiKeys.OFFSET_FETCH, "OffsetFetch", OffsetFetchRequest, OffsetFetchResponse,
            "handle_offset_fetch", None,
            _top_level_then(lambda body: [p.error for p in body.offsets.values()])),
        Api(ApiKeys.FIND_COORDINATOR, "FindCoordinator", FindCoordinatorRequest,
            FindCoordinatorResponse, "handle_find_coordinator", None, _top_level_then(_none)),
        Api(ApiKeys.JOIN_GROUP, "JoinGroup", JoinGroupRequest, JoinGroupResponse,
            "handle_join_group", "rebalance", _top_level_then(_none)),
        Api(ApiKeys.HEARTBEAT, "Heartbeat", HeartbeatRequest, HeartbeatResponse,
            "handle_heartbeat", None, _top_level_then(_none)),
        Api(ApiKeys.LEAVE_GROUP, "LeaveGroup", LeaveGroupRequest, LeaveGroupResponse,
            "handle_leave_group", None,
            _top_level_then(lambda body: [m.error for m in body.members])),
        Api(ApiKeys.SYNC_GROUP, "SyncGroup", SyncGroupRequest, SyncGroupResponse,
            "handle_sync_group", "rebalance", _top_level_then(_none)),
        Api(ApiKeys.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch",
            OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
            "handle_offset_for_leader_epoch", None, _partitions),
    )
}  # fmt: skip
"""Every API the broker handles, by API key, in key order."""

_BY_BODY: Final[dict[type, Api]] = {
    **{api.request: api for api in API_TABLE.values()},
    **{api.response: api for api in API_TABLE.values()},
}


def api_of(body: RequestBody | ResponseBody) -> Api:
    """The row of the API ``body`` (a request or a response) belongs to.

    Raises:
        KeyError: ``body`` is not a request or response type of the table.
    """
    return _BY_BODY[type(body)]


def response_errors(body: ResponseBody) -> list[Errors]:
    """The errors ``body`` carries, top-level first (see the module docstring), as a new
    list."""
    return _BY_BODY[type(body)].errors(body)

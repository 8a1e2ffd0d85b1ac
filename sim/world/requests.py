"""What the request table says about a request: its API name and the error it ended with.

API names are those of Kafka's request metrics (``kafka.network:type=RequestMetrics,
request=...``), which split fetches by who sends them: ``FetchConsumer`` and
``FetchFollower``. A response's error is its top-level error if it has one, else the first
per-partition (or per-topic) error in the response's order, else NONE.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from apis.controller_requests import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from apis.fetch import FetchRequest, FetchResponse
from apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from apis.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from apis.metadata import MetadataRequest, MetadataResponse
from apis.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from apis.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from apis.produce import ProduceRequest, ProduceResponse
from apis.request_channel import RequestBody, ResponseBody
from replica.errors import Errors

__all__ = ["api_name", "response_error"]

_NAMES: dict[type, str] = {
    ProduceRequest: "Produce",
    ListOffsetsRequest: "ListOffsets",
    MetadataRequest: "Metadata",
    OffsetCommitRequest: "OffsetCommit",
    OffsetFetchRequest: "OffsetFetch",
    FindCoordinatorRequest: "FindCoordinator",
    LeaderAndIsrRequest: "LeaderAndIsr",
    StopReplicaRequest: "StopReplica",
    UpdateMetadataRequest: "UpdateMetadata",
}


def api_name(body: RequestBody) -> str:
    """Kafka's request-metrics name of ``body`` (``Produce``, ``FetchFollower``...)."""
    if isinstance(body, FetchRequest):
        return "FetchFollower" if body.replica_id >= 0 else "FetchConsumer"
    return _NAMES[type(body)]


def _first(errors: Iterable[Errors]) -> Errors:
    for error in errors:
        if error is not Errors.NONE:
            return error
    return Errors.NONE


def _per_partition(body: Any) -> Errors:
    return _first(part.error for part in body.responses.values())


_PARTS: dict[type, Callable[[Any], Errors]] = {
    ProduceResponse: _per_partition,
    FetchResponse: _per_partition,
    ListOffsetsResponse: _per_partition,
    MetadataResponse: lambda body: _first(topic.error for topic in body.topics.values()),
    OffsetCommitResponse: lambda body: _first(body.errors.values()),
    OffsetFetchResponse: lambda body: _first(part.error for part in body.offsets.values()),
    LeaderAndIsrResponse: lambda body: _first(body.partition_errors.values()),
    StopReplicaResponse: lambda body: _first(body.partition_errors.values()),
}
_TOP_LEVEL = (
    FetchResponse,
    OffsetFetchResponse,
    FindCoordinatorResponse,
    LeaderAndIsrResponse,
    StopReplicaResponse,
    UpdateMetadataResponse,
)


def response_error(body: ResponseBody) -> Errors:
    """The error ``body`` reports: top-level first, then the first per-partition one."""
    if isinstance(body, _TOP_LEVEL) and body.error is not Errors.NONE:
        return body.error
    parts = _PARTS.get(type(body))
    return Errors.NONE if parts is None else parts(body)

"""apis: the broker's request layer (KafkaApis), request/response types, RequestChannel.

Thin by design: a handler validates a request, calls one manager (ReplicaManager or
GroupCoordinator) with a callback, and the callback puts the response in the RequestChannel.
"""

from apis.config import InvalidKafkaConfigError, KafkaConfig
from apis.controller_requests import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from apis.errors import Errors
from apis.exceptions import ApisError, RequestHeaderMismatchError
from apis.fetch import (
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    PartitionFetchInfo,
    fetch_error,
)
from apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from apis.header import ApiKeys, RequestHeader
from apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from apis.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from apis.kafka_apis import KafkaApis
from apis.leave_group import LeaveGroupRequest, LeaveGroupResponse, LeaveGroupResponseMember
from apis.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from apis.metadata import (
    BrokerEndpoint,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from apis.metadata_cache import MetadataCache
from apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
)
from apis.offset_fetch import OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartition
from apis.offset_for_leader_epoch import (
    DEBUGGING_REPLICA_ID,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResult,
)
from apis.produce import PartitionResponse, ProduceRequest, ProduceResponse
from apis.request_channel import Request, RequestBody, RequestChannel, Response, ResponseBody
from apis.sync_group import SyncGroupRequest, SyncGroupResponse

__all__ = [
    "DEBUGGING_REPLICA_ID",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "ApiKeys",
    "ApisError",
    "BrokerEndpoint",
    "Errors",
    "FetchPartitionData",
    "FetchRequest",
    "FetchResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "InvalidKafkaConfigError",
    "JoinGroupRequest",
    "JoinGroupRequestProtocol",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
    "KafkaApis",
    "KafkaConfig",
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "LeaveGroupResponseMember",
    "ListOffsetsPartitionResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "MetadataCache",
    "MetadataRequest",
    "MetadataResponse",
    "OffsetCommitRequest",
    "OffsetCommitRequestPartition",
    "OffsetCommitResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "OffsetFetchResponsePartition",
    "OffsetForLeaderEpochPartition",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "OffsetForLeaderEpochResult",
    "PartitionFetchInfo",
    "PartitionMetadata",
    "PartitionResponse",
    "ProduceRequest",
    "ProduceResponse",
    "Request",
    "RequestBody",
    "RequestChannel",
    "RequestHeader",
    "RequestHeaderMismatchError",
    "Response",
    "ResponseBody",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicMetadata",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "fetch_error",
]

"""coordinator: the GroupCoordinator and its OffsetManager, built on ReplicaManager's public API.

Offsets are committed by appending to ``__consumer_offsets`` with acks=-1 and cached only once
the append completes; a broker that becomes leader of an offsets partition loads it from the
log. See :mod:`coordinator.offset_manager`. Group membership (Kafka's classic protocol:
JoinGroup, SyncGroup, Heartbeat, LeaveGroup) runs on the Heartbeat and Rebalance purgatories
and stores each generation in the same topic. See :mod:`coordinator.group_coordinator`.
"""

from coordinator.config import GroupConfig, OffsetConfig
from coordinator.delayed_heartbeat import DelayedHeartbeat
from coordinator.delayed_rebalance import (
    DelayedJoin,
    DelayedRebalance,
    DelayedSync,
    InitialDelayedJoin,
)
from coordinator.errors import (
    CoordinatorError,
    CorruptOffsetRecordError,
    IllegalGroupStateError,
    InvalidGroupConfigError,
    InvalidOffsetConfigError,
)
from coordinator.group_coordinator import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    GroupCoordinator,
    LeaveGroupResult,
)
from coordinator.group_metadata import (
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    VALID_PREVIOUS_STATES,
    GroupMetadata,
    GroupState,
    JoinGroupResult,
    JoinGroupResultMember,
    MemberMetadata,
    SyncGroupResult,
)
from coordinator.group_record import (
    GroupMemberValue,
    GroupMetadataValue,
    decode_group_record,
    encode_group_record,
)
from coordinator.hashing import java_string_hash, partition_for_group
from coordinator.offset_manager import (
    NO_OFFSET,
    OffsetCommitCallback,
    OffsetFetchResult,
    OffsetManager,
    OffsetsPartitionStatus,
    commit_error_for_append_error,
)
from coordinator.offset_record import (
    OffsetAndMetadata,
    OffsetCommitKey,
    decode_offset_record,
    encode_offset_record,
)

__all__ = [
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "NO_GENERATION",
    "NO_OFFSET",
    "UNKNOWN_MEMBER_ID",
    "VALID_PREVIOUS_STATES",
    "CoordinatorError",
    "CorruptOffsetRecordError",
    "DelayedHeartbeat",
    "DelayedJoin",
    "DelayedRebalance",
    "DelayedSync",
    "GroupConfig",
    "GroupCoordinator",
    "GroupMemberValue",
    "GroupMetadata",
    "GroupMetadataValue",
    "GroupState",
    "IllegalGroupStateError",
    "InitialDelayedJoin",
    "InvalidGroupConfigError",
    "InvalidOffsetConfigError",
    "JoinGroupResult",
    "JoinGroupResultMember",
    "LeaveGroupResult",
    "MemberMetadata",
    "OffsetAndMetadata",
    "OffsetCommitCallback",
    "OffsetCommitKey",
    "OffsetConfig",
    "OffsetFetchResult",
    "OffsetManager",
    "OffsetsPartitionStatus",
    "SyncGroupResult",
    "commit_error_for_append_error",
    "decode_group_record",
    "decode_offset_record",
    "encode_group_record",
    "encode_offset_record",
    "java_string_hash",
    "partition_for_group",
]

"""coordinator: the group coordinator's OffsetManager, built on ReplicaManager's public API.

Offsets are committed by appending to ``__consumer_offsets`` with acks=-1 and cached only once
the append completes; a broker that becomes leader of an offsets partition loads it from the
log. See :mod:`coordinator.offset_manager`.
"""

from coordinator.config import OffsetConfig
from coordinator.errors import CoordinatorError, CorruptOffsetRecordError, InvalidOffsetConfigError
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
    "NO_OFFSET",
    "CoordinatorError",
    "CorruptOffsetRecordError",
    "InvalidOffsetConfigError",
    "OffsetAndMetadata",
    "OffsetCommitCallback",
    "OffsetCommitKey",
    "OffsetConfig",
    "OffsetFetchResult",
    "OffsetManager",
    "OffsetsPartitionStatus",
    "commit_error_for_append_error",
    "decode_offset_record",
    "encode_offset_record",
    "java_string_hash",
    "partition_for_group",
]

"""replica: a broker's partitions, logs, replication and the Produce/Fetch purgatories.

The public entry point is :class:`ReplicaManager`; layers above (``coordinator``, ``apis``)
use only its methods and the value types re-exported here.
"""

from replica.config import BrokerConfig
from replica.delayed_fetch import DelayedFetch
from replica.delayed_produce import DelayedProduce
from replica.errors import Errors
from replica.exceptions import (
    ApiError,
    InvalidConfigError,
    ReplicaArgumentError,
    ReplicaError,
    UnexpectedAppendOffsetError,
)
from replica.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache
from replica.log import Log, LogSegment
from replica.partition import Partition
from replica.producer_state import ProducerStateManager
from replica.records import NO_PRODUCER_ID, NO_TIMESTAMP, ProducerBatchInfo, Record, RecordBatch
from replica.replica import Replica
from replica.replica_fetcher import InitialFetchState, ReplicaFetcher, ReplicaFetchRequest
from replica.replica_fetcher_manager import ReplicaFetcherManager
from replica.replica_manager import ReplicaManager
from replica.session_partitions import IdlePartition, SessionPartitions
from replica.types import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    GROUP_METADATA_TOPIC_NAME,
    INTERNAL_TOPICS,
    LATEST_TIMESTAMP,
    UNKNOWN_OFFSET,
    EpochEndOffset,
    FetchDataInfo,
    FetchIsolation,
    FetchParams,
    FetchPartitionData,
    IsolationLevel,
    ListOffsetsResult,
    LogOffsetMetadata,
    LogReadResult,
    OffsetForLeaderEpochResult,
    PartitionFetchInfo,
    PartitionResponse,
    PartitionState,
    TopicPartition,
)

__all__ = [
    "CONSUMER_REPLICA_ID",
    "EARLIEST_TIMESTAMP",
    "GROUP_METADATA_TOPIC_NAME",
    "INTERNAL_TOPICS",
    "LATEST_TIMESTAMP",
    "NO_PRODUCER_ID",
    "NO_TIMESTAMP",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "UNKNOWN_OFFSET",
    "ApiError",
    "BrokerConfig",
    "DelayedFetch",
    "DelayedProduce",
    "EpochEndOffset",
    "Errors",
    "FetchDataInfo",
    "FetchIsolation",
    "FetchParams",
    "FetchPartitionData",
    "IdlePartition",
    "InitialFetchState",
    "InvalidConfigError",
    "IsolationLevel",
    "LeaderEpochCache",
    "ListOffsetsResult",
    "Log",
    "LogOffsetMetadata",
    "LogReadResult",
    "LogSegment",
    "OffsetForLeaderEpochResult",
    "Partition",
    "PartitionFetchInfo",
    "PartitionResponse",
    "PartitionState",
    "ProducerBatchInfo",
    "ProducerStateManager",
    "Record",
    "RecordBatch",
    "Replica",
    "ReplicaArgumentError",
    "ReplicaError",
    "ReplicaFetchRequest",
    "ReplicaFetcher",
    "ReplicaFetcherManager",
    "ReplicaManager",
    "SessionPartitions",
    "TopicPartition",
    "UnexpectedAppendOffsetError",
]

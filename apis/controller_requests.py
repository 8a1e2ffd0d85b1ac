"""Requests the controller sends to brokers: LeaderAndIsr, StopReplica, UpdateMetadata."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from apis.metadata import BrokerEndpoint
from replica.errors import Errors
from replica.types import PartitionState, TopicPartition

__all__ = [
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
]


@attrs.define(frozen=True)
class LeaderAndIsrRequest:
    """Make this broker leader or follower of partitions (Kafka API key 4).

    A broker leads the partitions whose ``leader`` is its id and follows the others it is a
    replica of; ``live_leaders`` are the endpoints of the leaders it must fetch from.
    """

    API_KEY: ClassVar[ApiKeys] = ApiKeys.LEADER_AND_ISR

    controller_id: int
    controller_epoch: int
    partition_states: Mapping[TopicPartition, PartitionState]
    live_leaders: Sequence[BrokerEndpoint] = ()

    def error_response(self, error: Errors) -> LeaderAndIsrResponse:
        """A response giving ``error`` at the top level and for every partition."""
        return LeaderAndIsrResponse(error, {tp: error for tp in self.partition_states})


@attrs.define(frozen=True)
class LeaderAndIsrResponse:
    """Top-level error (STALE_CONTROLLER_EPOCH, ...) and per-partition errors."""

    error: Errors
    partition_errors: Mapping[TopicPartition, Errors]


@attrs.define(frozen=True)
class StopReplicaRequest:
    """Stop replicating ``partitions`` here; with ``delete_partitions`` also delete them
    (Kafka API key 5)."""

    API_KEY: ClassVar[ApiKeys] = ApiKeys.STOP_REPLICA

    controller_id: int
    controller_epoch: int
    partitions: Sequence[TopicPartition]
    delete_partitions: bool = False

    def error_response(self, error: Errors) -> StopReplicaResponse:
        """A response giving ``error`` at the top level and for every partition."""
        return StopReplicaResponse(error, {tp: error for tp in self.partitions})


@attrs.define(frozen=True)
class StopReplicaResponse:
    """Top-level error and per-partition errors."""

    error: Errors
    partition_errors: Mapping[TopicPartition, Errors]


@attrs.define(frozen=True)
class UpdateMetadataRequest:
    """The controller's view of the cluster for the broker's metadata cache (API key 6).

    ``live_brokers`` replaces the cache's broker list; ``partition_states`` updates (adds or
    replaces) the listed partitions.
    """

    API_KEY: ClassVar[ApiKeys] = ApiKeys.UPDATE_METADATA

    controller_id: int
    controller_epoch: int
    live_brokers: Sequence[BrokerEndpoint]
    partition_states: Mapping[TopicPartition, PartitionState]

    def error_response(self, error: Errors) -> UpdateMetadataResponse:
        """A response with ``error``."""
        return UpdateMetadataResponse(error)


@attrs.define(frozen=True)
class UpdateMetadataResponse:
    """NONE, or STALE_CONTROLLER_EPOCH for an update from an old controller."""

    error: Errors

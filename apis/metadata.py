"""Metadata: which brokers exist and who leads each partition (Kafka API key 3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors

__all__ = [
    "BrokerEndpoint",
    "MetadataRequest",
    "MetadataResponse",
    "PartitionMetadata",
    "TopicMetadata",
]


@attrs.define(frozen=True, order=True)
class BrokerEndpoint:
    """A broker's id and the address clients connect to."""

    broker_id: int
    host: str = "localhost"
    port: int = 9092
    rack: str | None = None


@attrs.define(frozen=True)
class MetadataRequest:
    """Ask for the metadata of ``topics`` (None: every topic)."""

    API_KEY: ClassVar[ApiKeys] = ApiKeys.METADATA

    topics: Sequence[str] | None = None

    def error_response(self, error: Errors) -> MetadataResponse:
        """A response with no brokers and ``error`` for every requested topic."""
        return MetadataResponse(
            brokers=(),
            controller_id=-1,
            topics={topic: TopicMetadata(error, {}) for topic in self.topics or ()},
        )


@attrs.define(frozen=True)
class PartitionMetadata:
    """Leader, leader epoch, replicas and ISR of one partition.

    ``error`` is LEADER_NOT_AVAILABLE when the partition has no leader (``leader == -1``).
    """

    error: Errors
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@attrs.define(frozen=True)
class TopicMetadata:
    """A topic's error (UNKNOWN_TOPIC_OR_PARTITION if it does not exist) and its partitions."""

    error: Errors
    partitions: Mapping[int, PartitionMetadata]
    is_internal: bool = False


@attrs.define(frozen=True)
class MetadataResponse:
    """Live brokers, the controller's id and per-topic metadata."""

    brokers: Sequence[BrokerEndpoint]
    controller_id: int
    topics: Mapping[str, TopicMetadata]
    throttle_time_ms: int = 0

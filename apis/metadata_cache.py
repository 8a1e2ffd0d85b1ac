"""MetadataCache: a broker's copy of the controller's view of the cluster.

Kept up to date by UpdateMetadata requests from the controller; answers Metadata and
FindCoordinator requests and tells request handlers which topics and partitions exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from apis.controller_requests import UpdateMetadataRequest
from apis.metadata import BrokerEndpoint, PartitionMetadata, TopicMetadata
from replica.errors import Errors
from replica.types import INTERNAL_TOPICS, PartitionState, TopicPartition

__all__ = ["MetadataCache"]


class MetadataCache:
    """Live brokers and, per topic, each partition's leader, epoch, replicas and ISR."""

    __slots__ = ("_brokers", "_controller_epoch", "_partitions", "controller_id")

    def __init__(self) -> None:
        self._brokers: dict[int, BrokerEndpoint] = {}
        self._partitions: dict[str, dict[int, PartitionState]] = {}
        self._controller_epoch = -1
        #: Id of the controller that sent the latest accepted request (-1: none yet).
        self.controller_id = -1

    @property
    def controller_epoch(self) -> int:
        """The highest controller epoch accepted so far (-1: none)."""
        return self._controller_epoch

    def check_controller_epoch(self, controller_id: int, controller_epoch: int) -> Errors:
        """Accept a controller request's epoch: STALE_CONTROLLER_EPOCH if older than the
        newest seen, else NONE (and remember it and the controller's id)."""
        if controller_epoch < self._controller_epoch:
            return Errors.STALE_CONTROLLER_EPOCH
        self._controller_epoch = controller_epoch
        self.controller_id = controller_id
        return Errors.NONE

    def update_metadata(self, request: UpdateMetadataRequest) -> Errors:
        """Apply an UpdateMetadata request (STALE_CONTROLLER_EPOCH: ignored)."""
        error = self.check_controller_epoch(request.controller_id, request.controller_epoch)
        if error is not Errors.NONE:
            return error
        self._brokers = {b.broker_id: b for b in request.live_brokers}
        for tp, state in request.partition_states.items():
            self._partitions.setdefault(tp.topic, {})[tp.partition] = state
        return Errors.NONE

    def contains_topic(self, topic: str) -> bool:
        """True if the topic exists."""
        return topic in self._partitions

    def contains_partition(self, topic_partition: TopicPartition) -> bool:
        """True if the partition exists."""
        return topic_partition.partition in self._partitions.get(topic_partition.topic, {})

    def partition_state(self, topic_partition: TopicPartition) -> PartitionState | None:
        """The partition's leader/epoch/ISR/replicas, or None if it does not exist."""
        return self._partitions.get(topic_partition.topic, {}).get(topic_partition.partition)

    def alive_brokers(self) -> list[BrokerEndpoint]:
        """Live brokers, ordered by id."""
        return sorted(self._brokers.values())

    def alive_broker(self, broker_id: int) -> BrokerEndpoint | None:
        """The endpoint of a live broker, or None."""
        return self._brokers.get(broker_id)

    def topics(self) -> list[str]:
        """Every known topic, sorted."""
        return sorted(self._partitions)

    def topic_metadata(self, topics: Sequence[str] | None) -> dict[str, TopicMetadata]:
        """Metadata of ``topics`` (None: all); unknown topics get UNKNOWN_TOPIC_OR_PARTITION."""
        names: Iterable[str] = self.topics() if topics is None else topics
        result: dict[str, TopicMetadata] = {}
        for topic in names:
            partitions = self._partitions.get(topic)
            if partitions is None:
                result[topic] = TopicMetadata(Errors.UNKNOWN_TOPIC_OR_PARTITION, {})
                continue
            result[topic] = TopicMetadata(
                Errors.NONE,
                {p: _partition_metadata(partitions[p]) for p in sorted(partitions)},
                is_internal=topic in INTERNAL_TOPICS,
            )
        return result


def _partition_metadata(state: PartitionState) -> PartitionMetadata:
    error = Errors.LEADER_NOT_AVAILABLE if state.leader == -1 else Errors.NONE
    return PartitionMetadata(error, state.leader, state.leader_epoch, state.replicas, state.isr)

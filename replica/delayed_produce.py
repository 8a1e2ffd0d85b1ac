"""DelayedProduce: an acks=-1 produce waiting for its records to be replicated.

Kafka's protocol, per partition that appended without error (``acks_pending``):

* the partition is done when its high watermark reaches the last appended offset + 1, with
  error NONE if the ISR has at least min.insync.replicas members, else
  NOT_ENOUGH_REPLICAS_AFTER_APPEND (as the high watermark does not move while the ISR is
  below min.insync.replicas, that takes an ISR shrinking after the high watermark passed the
  records; a produce waiting when the ISR shrinks below it times out);
* it is done with NOT_LEADER_OR_FOLLOWER when this broker no longer leads it, or with the
  error of a partition it does not host when its replica was deleted (NOT_LEADER_OR_FOLLOWER
  while the metadata still has the partition, as Kafka's ``getPartitionOrError`` answers);
* until then its error reads REQUEST_TIMED_OUT, which is what an expired produce returns.

The operation completes when no partition is pending, or expires after its timeout; either
way the response callback runs once with every partition's response.

A delayed produce uses one method of the :class:`~replica.replica_manager.ReplicaManager` that
creates it, stated by the :class:`PartitionLookup` protocol; this module does not import the
manager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

from purgatory import DelayedOperation
from replica.errors import Errors
from replica.partition import Partition
from replica.types import NO_ERROR, PartitionResponse, TopicPartition

_REQUEST_TIMED_OUT: Final = Errors.REQUEST_TIMED_OUT  # read once: see replica.types.NO_ERROR


class PartitionLookup(Protocol):
    """The broker's hosted partitions, as a delayed produce sees them (the ReplicaManager)."""

    def partition_or_error(self, topic_partition: TopicPartition) -> Partition | Errors:
        """The hosted partition, or the error a request for a partition not hosted here gets."""


class ProducePartitionStatus:
    """One partition of a produce: the offset replication must reach, and its response.

    ``acks_pending`` is True while the partition waits; ``error`` is then REQUEST_TIMED_OUT.
    The response sent is ``response`` with ``error`` in place of its error (at first, the
    response's own error). Compared by identity.
    """

    __slots__ = ("acks_pending", "error", "required_offset", "response")

    def __init__(
        self, required_offset: int, response: PartitionResponse, acks_pending: bool = False
    ) -> None:
        self.required_offset = required_offset
        self.response = response
        self.acks_pending = acks_pending
        self.error: Errors = response.error

    def final_response(self) -> PartitionResponse:
        """The partition's response as it stands now."""
        response = self.response
        if self.error is response.error:
            return response
        return PartitionResponse(
            self.error, response.base_offset, response.log_append_time, response.log_start_offset
        )


class DelayedProduce(DelayedOperation):
    """Waits (``delay_ms``) until every appended partition is replicated or failed."""

    __slots__ = ("_produce_status", "_replica_manager", "_response_callback")

    def __init__(
        self,
        delay_ms: int,
        produce_status: dict[TopicPartition, ProducePartitionStatus],
        replica_manager: PartitionLookup,
        response_callback: Callable[[dict[TopicPartition, PartitionResponse]], None],
    ) -> None:
        super().__init__(delay_ms)
        for status in produce_status.values():
            if status.error is NO_ERROR:
                status.acks_pending = True
                status.error = _REQUEST_TIMED_OUT
        self._produce_status = produce_status
        self._replica_manager = replica_manager
        self._response_callback = response_callback

    @property
    def produce_status(self) -> dict[TopicPartition, ProducePartitionStatus]:
        """Per-partition status (read it, do not change it)."""
        return self._produce_status

    def try_complete(self) -> bool:
        """Settle the partitions that are replicated or lost leadership; complete when none
        is pending."""
        pending = False
        for tp, status in self._produce_status.items():
            if not status.acks_pending:
                continue
            partition = self._replica_manager.partition_or_error(tp)
            # Tested against the native class: isinstance with the Errors enum is a Python
            # call (its metaclass's __instancecheck__).
            if isinstance(partition, Partition):
                done, error = partition.check_enough_replicas_reach_offset(status.required_offset)
                done = done or error is not NO_ERROR
            else:
                done, error = True, partition
            if done:
                status.acks_pending = False
                status.error = error
            else:
                pending = True
        if pending:
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        self._response_callback(
            {tp: status.final_response() for tp, status in self._produce_status.items()}
        )

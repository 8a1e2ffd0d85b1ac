"""Produce: append records to partition leaders (Kafka API key 0)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import attrs

from apis.header import ApiKeys
from replica.errors import Errors
from replica.records import ProducerBatchInfo, Record
from replica.types import PartitionResponse, TopicPartition

__all__ = ["PartitionResponse", "ProduceRequest", "ProduceResponse"]


@attrs.define(frozen=True)
class ProduceRequest:
    """Records to append, per partition, and how to acknowledge them.

    ``acks``: 0 (no response expected by the client), 1 (after the leader's append) or -1
    (after every in-sync replica has the records). ``timeout_ms``: how long an acks=-1 produce
    may wait for replication (negative: not at all, it expires at once, as in Kafka).
    ``records``: one batch of records per partition. Other acks are not rejected here: the
    broker answers them with INVALID_REQUIRED_ACKS. ``producers``: the idempotent producer's
    stamp (producer id, epoch, base sequence) of a partition's batch, for the partitions that
    have one; the leader appends a retried batch once (see :mod:`replica.producer_state`).
    """

    API_KEY: ClassVar[ApiKeys] = ApiKeys.PRODUCE

    acks: int
    timeout_ms: int
    records: Mapping[TopicPartition, Sequence[Record]]
    producers: Mapping[TopicPartition, ProducerBatchInfo] = attrs.Factory(dict)

    def error_response(self, error: Errors) -> ProduceResponse:
        """A response giving ``error`` for every partition of the request."""
        return ProduceResponse({tp: PartitionResponse(error) for tp in self.records})


@attrs.define(frozen=True)
class ProduceResponse:
    """Per-partition outcome of a produce: error code, base offset, log append time."""

    responses: Mapping[TopicPartition, PartitionResponse]
    throttle_time_ms: int = 0

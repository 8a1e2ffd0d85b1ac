"""Produce: append records to partition leaders (Kafka API key 0).

The request and the response are plain classes (immutable by convention, compared by their
fields), not attrs ones: one of each per produce, and in the compiled build a plain class is
native, cheap to build and read (see :mod:`apis.body_fields` for how their fields are
declared).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from apis.header import ApiKeys
from replica.errors import Errors
from replica.records import ProducerBatchInfo, Record
from replica.types import PartitionResponse, TopicPartition

__all__ = ["PartitionResponse", "ProduceRequest", "ProduceResponse"]


class ProduceRequest:
    """Records to append, per partition, and how to acknowledge them.

    ``acks``: 0 (no response expected by the client), 1 (after the leader's append) or -1
    (after every in-sync replica has the records). ``timeout_ms``: how long an acks=-1 produce
    may wait for replication (negative: not at all, it expires at once, as in Kafka).
    ``records``: one batch of records per partition. Other acks are not rejected here: the
    broker answers them with INVALID_REQUIRED_ACKS. ``producers``: the idempotent producer's
    stamp (producer id, epoch, base sequence) of a partition's batch, for the partitions that
    have one (default: none); the leader appends a retried batch once (see
    :mod:`replica.producer_state`).
    """

    API_KEY: Final = ApiKeys.PRODUCE
    FIELDS: Final = (
        ("acks", int),
        ("timeout_ms", int),
        ("records", Mapping),
        ("producers", Mapping),
    )
    """The constructor's parameters and their declared types, shallowly
    (:mod:`apis.body_fields`)."""

    __slots__ = ("acks", "producers", "records", "timeout_ms")

    def __init__(
        self,
        acks: int,
        timeout_ms: int,
        records: Mapping[TopicPartition, Sequence[Record]],
        producers: Mapping[TopicPartition, ProducerBatchInfo] = {},
    ) -> None:
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.records = records
        self.producers = producers

    def _fields(self) -> tuple[object, ...]:
        return (self.acks, self.timeout_ms, self.records, self.producers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProduceRequest) and self._fields() == other._fields()

    def __repr__(self) -> str:
        return (
            f"ProduceRequest(acks={self.acks!r}, timeout_ms={self.timeout_ms!r}, "
            f"records={self.records!r}, producers={self.producers!r})"
        )

    def error_response(self, error: Errors) -> ProduceResponse:
        """A response giving ``error`` for every partition of the request."""
        return ProduceResponse({tp: PartitionResponse(error) for tp in self.records})


class ProduceResponse:
    """Per-partition outcome of a produce: error code, base offset, log append time."""

    __slots__ = ("responses", "throttle_time_ms")

    def __init__(
        self, responses: Mapping[TopicPartition, PartitionResponse], throttle_time_ms: int = 0
    ) -> None:
        self.responses = responses
        self.throttle_time_ms = throttle_time_ms

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ProduceResponse)
            and self.responses == other.responses
            and self.throttle_time_ms == other.throttle_time_ms
        )

    def __repr__(self) -> str:
        return (
            f"ProduceResponse(responses={self.responses!r}, "
            f"throttle_time_ms={self.throttle_time_ms!r})"
        )

"""Configuration of the simulated async producer: Kafka's names, Sarama's where the knob is
Sarama's.

| field | Sarama | Kafka | default |
|---|---|---|---|
| ``acks`` | Producer.RequiredAcks | acks | -1 (all) |
| ``ack_timeout_ms`` | Producer.Timeout | (ProduceRequest timeout) | 10000 |
| ``request_timeout_ms`` | Net.ReadTimeout | request.timeout.ms | 30000 |
| ``batch_size`` | Producer.Flush.Bytes | batch.size | 16384 |
| ``flush_messages`` | Producer.Flush.Messages | - | 0 (off) |
| ``linger_ms`` | Producer.Flush.Frequency | linger.ms | 5 |
| ``max_in_flight_requests_per_connection`` | Net.MaxOpenRequests | (same) | 5 |
| ``max_request_size`` | (MaxRequestSize) | max.request.size | 1048576 |
| ``retry_max`` | Producer.Retry.Max | - | 3 |
| ``retry_backoff_ms`` | Producer.Retry.Backoff | retry.backoff.ms | 100 |
| ``partitioner`` | Producer.Partitioner | - | "hash" |

``acks`` defaults to -1 (all): the study is about commit latency under Kafka's defaults, and
Kafka >= 3.0 producers default to acks=all (Sarama's own default is WaitForLocal, 1).
``batch_size`` / ``linger_ms`` default to Kafka 4.0's values (Sarama's flush triggers default
to 0, "send as fast as possible", which ``linger_ms=0`` reproduces).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from replica.config_def import FieldErrors, doc, int_at_least, one_of
from sim.clients.errors import ClientConfigError
from sim.clients.partitioner import PartitionerName

__all__ = ["ProducerConfig"]


@attrs.frozen(kw_only=True)
class ProducerConfig:
    """Settings of one :class:`~sim.clients.producer.Producer`. Times in ms, sizes in bytes.

    Raises ClientConfigError (a ValueError) naming the field when a value is out of range.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(ClientConfigError)

    acks: int = attrs.field(
        default=-1,
        validator=one_of((-1, 0, 1)),
        metadata=doc(
            'RequiredAcks / acks: 0 none, 1 leader, -1 (or "all") all in-sync replicas',
            spellings={"all": -1},
        ),
    )
    ack_timeout_ms: int = attrs.field(
        default=10_000,
        validator=int_at_least(0),
        metadata=doc("Producer.Timeout: how long the broker may wait for acks=-1 replication"),
    )
    request_timeout_ms: int = attrs.field(
        default=30_000,
        validator=int_at_least(1),
        metadata=doc("request.timeout.ms: the client gives up on a request and retries it"),
    )
    batch_size: int = attrs.field(
        default=16_384,
        validator=int_at_least(1),
        metadata=doc(
            "batch.size / Flush.Bytes: a partition's batch is full at this size", unit="bytes"
        ),
    )
    flush_messages: int = attrs.field(
        default=0,
        validator=int_at_least(0),
        metadata=doc("Flush.Messages: a batch is full at this many messages (0: no limit)"),
    )
    linger_ms: int = attrs.field(
        default=5,
        validator=int_at_least(0),
        metadata=doc("linger.ms / Flush.Frequency: longest wait of a batch's first message"),
    )
    max_in_flight_requests_per_connection: int = attrs.field(
        default=5,
        validator=int_at_least(1),
        metadata=doc("Net.MaxOpenRequests: produce requests awaiting a response, per broker"),
    )
    max_request_size: int = attrs.field(
        default=1_048_576,
        validator=int_at_least(1),
        metadata=doc("max.request.size: bytes of batches in one produce request", unit="bytes"),
    )
    retry_max: int = attrs.field(
        default=3,
        validator=int_at_least(0),
        metadata=doc("Retry.Max: retries of a message before its error is reported"),
    )
    retry_backoff_ms: int = attrs.field(
        default=100,
        validator=int_at_least(0),
        metadata=doc("Retry.Backoff: back-off before a new retry level is sent"),
    )
    partitioner: PartitionerName = attrs.field(
        default="hash",
        validator=one_of(("hash", "round_robin")),
        metadata=doc("'hash' (FNV-1a of the key; random without key) or 'round_robin'"),
    )

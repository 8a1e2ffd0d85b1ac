"""Broker configuration for the replica layer: Kafka's names in snake_case, Kafka's defaults.

Only the settings the model uses are present. Every field is validated when the object is
built: a wrong type or an out-of-range value raises
:class:`~replica.exceptions.InvalidConfigError` naming the Kafka setting and the allowed range.
Fields are declared the :mod:`replica.config_def` way (their help starts with Kafka's name).
Topic-level overrides (``max.message.bytes``, ``segment.bytes``, ``min.insync.replicas``) are
not modelled: the broker-wide values apply to every partition.
"""

from __future__ import annotations

from typing import ClassVar, Final

import attrs

from replica.config_def import FieldErrors, doc, int_at_least, one_of
from replica.exceptions import InvalidConfigError

CREATE_TIME: Final = "CreateTime"
LOG_APPEND_TIME: Final = "LogAppendTime"


@attrs.define(frozen=True)
class BrokerConfig:
    """Settings of one broker's replica layer (all times in milliseconds, sizes in bytes).

    Raises:
        InvalidConfigError: a value has the wrong type or is out of range, or
            ``replica_fetch_wait_max_ms > replica_lag_time_max_ms`` (Kafka refuses that too:
            a follower long-polling longer than the lag limit would fall out of the ISR).
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(InvalidConfigError, kafka_names=True)

    replica_fetch_wait_max_ms: int = attrs.field(
        default=500,
        validator=int_at_least(0),
        metadata=doc(
            "replica.fetch.wait.max.ms: the longest a follower's fetch waits at the leader"
        ),
    )
    replica_fetch_min_bytes: int = attrs.field(
        default=1,
        validator=int_at_least(0),
        metadata=doc("replica.fetch.min.bytes: bytes a follower's fetch waits for"),
    )
    replica_fetch_max_bytes: int = attrs.field(
        default=1_048_576,
        validator=int_at_least(0),
        metadata=doc("replica.fetch.max.bytes: per-partition byte limit of a follower's fetch"),
    )
    replica_fetch_response_max_bytes: int = attrs.field(
        default=10_485_760,
        validator=int_at_least(0),
        metadata=doc(
            "replica.fetch.response.max.bytes: byte limit of a whole follower fetch response"
        ),
    )
    replica_fetch_backoff_ms: int = attrs.field(
        default=1000,
        validator=int_at_least(0),
        metadata=doc(
            "replica.fetch.backoff.ms: how long a follower leaves a failed partition alone"
        ),
    )
    replica_lag_time_max_ms: int = attrs.field(
        default=30_000,
        validator=int_at_least(1),
        metadata=doc(
            "replica.lag.time.max.ms: a follower not caught up for this long leaves the ISR"
        ),
    )
    min_insync_replicas: int = attrs.field(
        default=1,
        validator=int_at_least(1),
        metadata=doc(
            "min.insync.replicas: acks=-1 needs at least this many in-sync replicas, and the "
            "high watermark moves only while the ISR has that many; capped at the replication "
            "factor"
        ),
    )
    message_max_bytes: int = attrs.field(
        default=1_048_588,
        validator=int_at_least(0),
        metadata=doc("message.max.bytes: the largest record batch a leader accepts"),
    )
    log_segment_bytes: int = attrs.field(
        default=1_073_741_824,
        validator=int_at_least(14),
        metadata=doc("log.segment.bytes: a segment rolls when the next batch would overfill it"),
    )
    log_retention_ms: int = attrs.field(
        default=604_800_000,
        validator=int_at_least(-1),
        metadata=doc(
            "log.retention.ms: segments whose newest record is older than this are deleted "
            "(-1: no time limit; Kafka's default is log.retention.hours=168)"
        ),
    )
    log_retention_bytes: int = attrs.field(
        default=-1,
        validator=int_at_least(-1),
        metadata=doc(
            "log.retention.bytes: the oldest segments are deleted while a partition's log "
            "stays at least this large without them (-1: no size limit)"
        ),
    )
    log_retention_check_interval_ms: int = attrs.field(
        default=300_000,
        validator=int_at_least(1),
        metadata=doc("log.retention.check.interval.ms: how often retention runs"),
    )
    producer_id_expiration_ms: int = attrs.field(
        default=86_400_000,
        validator=int_at_least(1),
        metadata=doc(
            "producer.id.expiration.ms: how long a partition keeps an idempotent producer's "
            "state (for duplicate detection) after its last batch's timestamp"
        ),
    )
    producer_id_expiration_check_interval_ms: int = attrs.field(
        default=600_000,
        validator=int_at_least(1),
        metadata=doc(
            "producer.id.expiration.check.interval.ms: how often expired producer state is removed"
        ),
    )
    log_message_timestamp_type: str = attrs.field(
        default=CREATE_TIME,
        validator=one_of((CREATE_TIME, LOG_APPEND_TIME)),
        metadata=doc(
            "log.message.timestamp.type: 'CreateTime' (the producer's) or 'LogAppendTime'"
        ),
    )
    producer_purgatory_purge_interval_requests: int = attrs.field(
        default=1000,
        validator=int_at_least(1),
        metadata=doc(
            "producer.purgatory.purge.interval.requests: completions between purges of watch lists"
        ),
    )
    fetch_purgatory_purge_interval_requests: int = attrs.field(
        default=1000,
        validator=int_at_least(1),
        metadata=doc(
            "fetch.purgatory.purge.interval.requests: completions between purges of watch lists"
        ),
    )

    def __attrs_post_init__(self) -> None:
        if self.replica_fetch_wait_max_ms > self.replica_lag_time_max_ms:
            raise InvalidConfigError(
                "replica.fetch.wait.max.ms must be <= replica.lag.time.max.ms, got "
                f"{self.replica_fetch_wait_max_ms} > {self.replica_lag_time_max_ms}"
            )

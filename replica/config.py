"""Broker configuration for the replica layer: Kafka's names in snake_case, Kafka's defaults.

Only the settings the model uses are present. Every field is validated when the object is
built: a wrong type or an out-of-range value raises
:class:`~replica.exceptions.InvalidConfigError` naming the Kafka setting and the allowed range.
Topic-level overrides (``max.message.bytes``, ``segment.bytes``, ``min.insync.replicas``) are
not modelled: the broker-wide values apply to every partition.
"""

from __future__ import annotations

from typing import Any

import attrs

from replica.exceptions import InvalidConfigError

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"


def _kafka_name(attribute: attrs.Attribute[Any]) -> str:
    return attribute.name.replace("_", ".")


def _int_at_least(minimum: int) -> Any:
    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidConfigError(
                f"{_kafka_name(attribute)} must be an integer >= {minimum}, got {value!r}"
            )
        if value < minimum:
            raise InvalidConfigError(f"{_kafka_name(attribute)} must be >= {minimum}, got {value}")

    return check


def _timestamp_type(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in (CREATE_TIME, LOG_APPEND_TIME):
        raise InvalidConfigError(
            f"{_kafka_name(attribute)} must be {CREATE_TIME!r} or {LOG_APPEND_TIME!r}, "
            f"got {value!r}"
        )


@attrs.define(frozen=True)
class BrokerConfig:
    """Settings of one broker's replica layer (all times in milliseconds, sizes in bytes).

    Raises:
        InvalidConfigError: a value has the wrong type or is out of range, or
            ``replica_fetch_wait_max_ms > replica_lag_time_max_ms`` (Kafka refuses that too:
            a follower long-polling longer than the lag limit would fall out of the ISR).
    """

    #: replica.fetch.wait.max.ms: the longest a follower's fetch waits at the leader.
    replica_fetch_wait_max_ms: int = attrs.field(default=500, validator=_int_at_least(0))
    #: replica.fetch.min.bytes: bytes a follower's fetch waits for.
    replica_fetch_min_bytes: int = attrs.field(default=1, validator=_int_at_least(0))
    #: replica.fetch.max.bytes: per-partition byte limit of a follower's fetch.
    replica_fetch_max_bytes: int = attrs.field(default=1_048_576, validator=_int_at_least(0))
    #: replica.fetch.response.max.bytes: byte limit of a whole follower fetch response.
    replica_fetch_response_max_bytes: int = attrs.field(
        default=10_485_760, validator=_int_at_least(0)
    )
    #: replica.fetch.backoff.ms: how long a follower leaves a failed partition alone.
    replica_fetch_backoff_ms: int = attrs.field(default=1000, validator=_int_at_least(0))
    #: replica.lag.time.max.ms: a follower not caught up for this long leaves the ISR.
    replica_lag_time_max_ms: int = attrs.field(default=30_000, validator=_int_at_least(1))
    #: min.insync.replicas: acks=-1 needs at least this many in-sync replicas.
    min_insync_replicas: int = attrs.field(default=1, validator=_int_at_least(1))
    #: message.max.bytes: the largest record batch a leader accepts.
    message_max_bytes: int = attrs.field(default=1_048_588, validator=_int_at_least(0))
    #: log.segment.bytes: a segment rolls when the next batch would make it larger.
    log_segment_bytes: int = attrs.field(default=1_073_741_824, validator=_int_at_least(14))
    #: log.message.timestamp.type: ``"CreateTime"`` or ``"LogAppendTime"``.
    log_message_timestamp_type: str = attrs.field(default=CREATE_TIME, validator=_timestamp_type)
    #: producer.purgatory.purge.interval.requests
    producer_purgatory_purge_interval_requests: int = attrs.field(
        default=1000, validator=_int_at_least(1)
    )
    #: fetch.purgatory.purge.interval.requests
    fetch_purgatory_purge_interval_requests: int = attrs.field(
        default=1000, validator=_int_at_least(1)
    )

    def __attrs_post_init__(self) -> None:
        if self.replica_fetch_wait_max_ms > self.replica_lag_time_max_ms:
            raise InvalidConfigError(
                "replica.fetch.wait.max.ms must be <= replica.lag.time.max.ms, got "
                f"{self.replica_fetch_wait_max_ms} > {self.replica_lag_time_max_ms}"
            )

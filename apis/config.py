"""KafkaConfig: one broker's settings, grouped by the layer that uses them.

Fields are declared the :mod:`replica.config_def` way (their help starts with Kafka's name).
"""

from __future__ import annotations

from typing import ClassVar

import attrs
from mypy_extensions import mypyc_attr

from apis.exceptions import ApisError
from coordinator.config import GroupConfig, OffsetConfig
from replica.config import BrokerConfig
from replica.config_def import FieldErrors, at_least, doc, positive_int

__all__ = ["InvalidKafkaConfigError", "KafkaConfig"]


@mypyc_attr(native_class=False)  # a native class cannot have two built-in bases
class InvalidKafkaConfigError(ApisError, ValueError):
    """A :class:`KafkaConfig` field is out of range."""


@attrs.define(frozen=True)
class KafkaConfig:
    """A broker's configuration: the replica layer's, the offset manager's, the group
    coordinator's, and the request layer's own settings.

    Raises InvalidKafkaConfigError naming the Kafka setting for a value out of range.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(InvalidKafkaConfigError, kafka_names=True)

    broker: BrokerConfig = attrs.field(
        factory=BrokerConfig, metadata=doc("the replica layer's settings: replica.*, log.*, ...")
    )
    offsets: OffsetConfig = attrs.field(
        factory=OffsetConfig, metadata=doc("the offset manager's settings (offsets.*)")
    )
    group: GroupConfig = attrs.field(
        factory=GroupConfig, metadata=doc("the group coordinator's settings (group.*)")
    )
    fetch_max_bytes: int = attrs.field(
        default=57_671_680,
        validator=positive_int(),
        metadata=doc(
            "fetch.max.bytes: upper bound the broker puts on a fetch response (a consumer's "
            "or a follower's), whatever max_bytes the request asks for; min_bytes is capped "
            "at the result"
        ),
    )
    max_incremental_fetch_session_cache_slots: int = attrs.field(
        default=1000,
        validator=at_least(0),
        metadata=doc(
            "max.incremental.fetch.session.cache.slots: how many fetch sessions (KIP-227) the "
            "broker keeps"
        ),
    )
    min_incremental_fetch_session_eviction_ms: int = attrs.field(
        default=120_000,
        validator=at_least(0),
        metadata=doc(
            "min.incremental.fetch.session.eviction.ms: how long a fetch session must go "
            "unused before any newcomer may evict it",
            unit="ms",
        ),
    )

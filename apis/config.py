"""KafkaConfig: one broker's settings, grouped by the layer that uses them.

Fields are declared the :mod:`replica.config_def` way (their help starts with Kafka's name).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from apis.exceptions import ApisError
from coordinator.config import GroupConfig, OffsetConfig
from replica.config import BrokerConfig
from replica.config_def import FieldErrors, doc, positive_int

__all__ = ["InvalidKafkaConfigError", "KafkaConfig"]


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

"""KafkaConfig: one broker's settings, grouped by the layer that uses them."""

from __future__ import annotations

import attrs

from apis.exceptions import ApisError
from coordinator.config import OffsetConfig
from replica.config import BrokerConfig

__all__ = ["InvalidKafkaConfigError", "KafkaConfig"]


class InvalidKafkaConfigError(ApisError, ValueError):
    """A :class:`KafkaConfig` field is out of range."""


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidKafkaConfigError(
            f"{attribute.name.replace('_', '.')} must be a positive int, got {value!r}"
        )


@attrs.define(frozen=True)
class KafkaConfig:
    """A broker's configuration: the replica layer's, the offset manager's, and the request
    layer's own settings.

    * ``fetch_max_bytes`` (``fetch.max.bytes``, 55 MiB): upper bound the broker puts on a
      consumer fetch response, whatever ``max_bytes`` the request asks for.
    """

    broker: BrokerConfig = attrs.field(factory=BrokerConfig)
    offsets: OffsetConfig = attrs.field(factory=OffsetConfig)
    fetch_max_bytes: int = attrs.field(default=57_671_680, validator=_positive)

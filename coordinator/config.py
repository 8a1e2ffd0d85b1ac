"""OffsetConfig: the offset manager's settings, with Kafka's names and defaults."""

from __future__ import annotations

import attrs

from coordinator.errors import InvalidOffsetConfigError

__all__ = ["OffsetConfig"]

def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidOffsetConfigError(
            f"{attribute.name} must be a positive int, got {value!r}"
        )


@attrs.define(frozen=True)
class OffsetConfig:
    """Settings of :class:`~coordinator.OffsetManager` (Kafka's ``OffsetConfig``).

    Every field must be a positive int; a bad value raises
    :class:`~coordinator.errors.InvalidOffsetConfigError` naming the field.

    * ``offsets_topic_num_partitions`` (``offsets.topic.num.partitions``, 50): partitions of
      ``__consumer_offsets``; a group lives on ``abs(hash(group)) % this``.
    * ``offsets_topic_replication_factor`` (``offsets.topic.replication.factor``, 3): used by
      whoever creates the topic (the in-process cluster's controller).
    * ``offsets_commit_timeout_ms`` (``offsets.commit.timeout.ms``, 5000): how long a commit
      waits for its acks=-1 append before answering REQUEST_TIMED_OUT.
    * ``offset_metadata_max_bytes`` (``offset.metadata.max.bytes``, 4096): longest metadata
      string accepted with a commit (counted in UTF-16 code units, like Java's
      ``String.length``); longer -> OFFSET_METADATA_TOO_LARGE for that partition.
    * ``offsets_load_buffer_size`` (``offsets.load.buffer.size``, 5 MiB): bytes read per step
      when loading an offsets partition after becoming its leader.
    """

    offsets_topic_num_partitions: int = attrs.field(default=50, validator=_positive)
    offsets_topic_replication_factor: int = attrs.field(default=3, validator=_positive)
    offsets_commit_timeout_ms: int = attrs.field(default=5000, validator=_positive)
    offset_metadata_max_bytes: int = attrs.field(default=4096, validator=_positive)
    offsets_load_buffer_size: int = attrs.field(default=5 * 1024 * 1024, validator=_positive)

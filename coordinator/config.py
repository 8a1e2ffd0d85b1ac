"""OffsetConfig: the offset manager's settings, with Kafka's names and defaults.

Fields are declared the :mod:`replica.config_def` way (their help starts with Kafka's name).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from coordinator.errors import InvalidOffsetConfigError
from replica.config_def import FieldErrors, doc, positive_int

__all__ = ["OffsetConfig"]

@attrs.define(frozen=True)
class OffsetConfig:
    """Settings of :class:`~coordinator.OffsetManager` (Kafka's ``OffsetConfig``).

    Every field must be a positive int; a bad value raises
    :class:`~coordinator.errors.InvalidOffsetConfigError` naming the field.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(InvalidOffsetConfigError)

    offsets_topic_num_partitions: int = attrs.field(
        default=50,
        validator=positive_int(),
        metadata=doc(
            "offsets.topic.num.partitions: partitions of __consumer_offsets; "
            "a group lives on abs(hash(group)) % this"
        ),
    )
    offsets_topic_replication_factor: int = attrs.field(
        default=3,
        validator=positive_int(),
        metadata=doc(
            "offsets.topic.replication.factor: replicas of each offsets partition at creation"
        ),
    )
    offsets_commit_timeout_ms: int = attrs.field(
        default=5000,
        validator=positive_int(),
        metadata=doc(
            "offsets.commit.timeout.ms: how long a commit waits for its acks=-1 append "
            "before answering REQUEST_TIMED_OUT"
        ),
    )
    offset_metadata_max_bytes: int = attrs.field(
        default=4096,
        validator=positive_int(),
        metadata=doc(
            "offset.metadata.max.bytes: longest metadata string accepted with a commit "
            "(in UTF-16 code units, like Java's String.length)"
        ),
    )
    offsets_load_buffer_size: int = attrs.field(
        default=5 * 1024 * 1024,
        validator=positive_int(),
        metadata=doc(
            "offsets.load.buffer.size: bytes read per step when loading an offsets partition"
        ),
    )

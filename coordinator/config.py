"""OffsetConfig and GroupConfig: the coordinator's settings, with Kafka's names and defaults.

Fields are declared the :mod:`replica.config_def` way (their help starts with Kafka's name).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from coordinator.errors import InvalidGroupConfigError, InvalidOffsetConfigError
from replica.config_def import FieldErrors, doc, int_at_least, positive_int

__all__ = ["GroupConfig", "OffsetConfig"]


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


def _max_not_below_min(instance: GroupConfig, attribute: attrs.Attribute[int], value: int) -> None:
    if value < instance.group_min_session_timeout_ms:
        raise InvalidGroupConfigError(
            f"{attribute.name} must be >= group_min_session_timeout_ms "
            f"({instance.group_min_session_timeout_ms}), got {value!r}"
        )


@attrs.define(frozen=True)
class GroupConfig:
    """Settings of :class:`~coordinator.GroupCoordinator` (Kafka's ``GroupConfig``, the
    ``group.*`` broker settings of the classic protocol).

    A bad value raises :class:`~coordinator.errors.InvalidGroupConfigError` naming the field.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(InvalidGroupConfigError)

    group_min_session_timeout_ms: int = attrs.field(
        default=6000,
        validator=positive_int(),
        metadata=doc(
            "group.min.session.timeout.ms: shortest session timeout a member may ask for "
            "(shorter: INVALID_SESSION_TIMEOUT)"
        ),
    )
    group_max_session_timeout_ms: int = attrs.field(
        default=1_800_000,
        validator=[positive_int(), _max_not_below_min],
        metadata=doc(
            "group.max.session.timeout.ms: longest session timeout a member may ask for "
            "(longer: INVALID_SESSION_TIMEOUT)"
        ),
    )
    group_initial_rebalance_delay_ms: int = attrs.field(
        default=3000,
        validator=int_at_least(0),
        metadata=doc(
            "group.initial.rebalance.delay.ms: how long the first rebalance of an empty group "
            "waits for more members, re-armed while members keep arriving, within the "
            "rebalance timeout"
        ),
    )

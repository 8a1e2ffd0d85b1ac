"""The replica layer's value types whose fields are validated: :class:`EpochEndOffset` and
:class:`PartitionState`, exported by :mod:`replica.types` with the others.

They live apart because attrs validators in a class body are what the compiled build cannot
compile (see docs/benchmarks.md): this module stays interpreted, :mod:`replica.types` is
compiled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs

from replica.config_def import FieldErrors, int_at_least
from replica.exceptions import ReplicaArgumentError

__all__ = ["EpochEndOffset", "PartitionState"]


@attrs.define(frozen=True)
class EpochEndOffset:
    """A leader epoch and the offset where it ends on the answering replica (Kafka's
    ``FetchResponseData.EpochEndOffset``): offsets from ``end_offset`` on were not written in
    ``leader_epoch`` or any earlier epoch there.

    Raises:
        ReplicaArgumentError: a field is negative.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(ReplicaArgumentError)

    leader_epoch: int = attrs.field(validator=int_at_least(0))
    end_offset: int = attrs.field(validator=int_at_least(0))


def _replica_ids(value: Sequence[int]) -> tuple[int, ...]:
    return tuple(value)


@attrs.define(frozen=True)
class PartitionState:
    """The controller's view of one partition (Kafka's ``LeaderAndIsrPartitionState``).

    Raises:
        ReplicaArgumentError: ``replicas`` is empty or has duplicates, the ISR is not a
            non-empty subset of the replicas, the leader is neither a replica nor ``-1`` (no
            leader), or the epoch is negative.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(ReplicaArgumentError)

    leader: int
    leader_epoch: int = attrs.field(validator=int_at_least(0))
    isr: tuple[int, ...] = attrs.field(converter=_replica_ids)
    replicas: tuple[int, ...] = attrs.field(converter=_replica_ids)

    def __attrs_post_init__(self) -> None:
        if not self.replicas or len(set(self.replicas)) != len(self.replicas):
            raise ReplicaArgumentError(
                f"replicas must be non-empty and distinct, got {list(self.replicas)}"
            )
        if not self.isr or not set(self.isr) <= set(self.replicas):
            raise ReplicaArgumentError(
                f"isr must be a non-empty subset of replicas {list(self.replicas)}, "
                f"got {list(self.isr)}"
            )
        if self.leader != -1 and self.leader not in self.replicas:
            raise ReplicaArgumentError(
                f"leader must be one of replicas {list(self.replicas)} or -1, got {self.leader}"
            )

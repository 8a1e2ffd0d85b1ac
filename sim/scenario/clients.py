"""The client sections of a scenario: ``[[producers]]``, ``[[consumers]]`` and ``[burrow]``.

Each section puts together the settings the clients package defines (``sim.clients``) with
what the scenario has to say about where a client reads or writes:

* ``[[producers]]``: :class:`~sim.clients.workload.ProducerWorkload` (topic, rate, arrivals,
  message size, keys) and :class:`~sim.clients.producer_config.ProducerConfig` (acks,
  linger_ms, batch_size, retries...), both flattened into one table.
* ``[[consumers]]``: ``topics`` plus :class:`~sim.clients.consumer_config.ConsumerConfig`,
  flattened.
* ``[burrow]``: ``topic`` and ``members`` (how many Burrow consumers) plus
  :class:`~sim.clients.burrow.config.BurrowConfig`, flattened, and the inner Kafka consumer's
  settings as the sub-table ``[burrow.consumer]`` (its ``processing_time`` would clash with
  Burrow's).

Flattened knobs also read as the section's own attributes (``producers[0].acks`` is
``scenario.producers[0].acks`` as well as ``.config.acks``).
"""

from __future__ import annotations

from typing import Any

import attrs

from replica.config_def import at_least, doc
from sim.clients.burrow.config import BurrowConfig
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.producer_config import ProducerConfig
from sim.clients.workload import ProducerWorkload

__all__ = ["BurrowSection", "ConsumerSection", "FlattenedAccess", "ProducerSection"]


class FlattenedAccess:
    """Mixin for sections with flattened fields: their knobs read as the section's own.

    ``section.acks`` is ``section.config.acks`` when ``config`` is flattened, so attribute
    paths in code match the knob paths of scenario files and ``--set``. Only reading; the
    flattened objects stay the source of truth.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails; never for private or dunder names, so copy,
        # pickle and attrs' own machinery are unaffected.
        if not name.startswith("_"):
            for field in attrs.fields(type(self)):  # type: ignore[arg-type]
                if field.metadata.get("flatten"):
                    inner = object.__getattribute__(self, field.name)
                    if hasattr(inner, name):
                        return getattr(inner, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


@attrs.frozen(kw_only=True)
class ProducerSection(FlattenedAccess):
    """``[[producers]]``: one Sarama-style producer and the messages it sends."""

    workload: ProducerWorkload = attrs.field(
        metadata=doc("what it sends: topic, rate, arrivals, sizes, keys", flatten=True)
    )
    config: ProducerConfig = attrs.field(
        factory=ProducerConfig, metadata=doc("how it sends: acks, batching, retries", flatten=True)
    )


@attrs.frozen(kw_only=True)
class ConsumerSection(FlattenedAccess):
    """``[[consumers]]``: one Kafka consumer assigned the partitions of ``topics``: all of
    them, or with ``members`` > 1 its round-robin share (no group protocol runs: the share is
    fixed for the whole run)."""

    topics: list[str] = attrs.field(metadata=doc("topics whose partitions it consumes"))
    members: int = attrs.field(
        default=1,
        validator=at_least(1),
        metadata=doc("consumers sharing the partitions (as a group's round-robin assignor)"),
    )
    member: int = attrs.field(
        default=0,
        validator=at_least(0),
        metadata=doc("which of them this one is: it gets partitions p with p % members == member"),
    )
    config: ConsumerConfig = attrs.field(
        factory=ConsumerConfig, metadata=doc("consumer settings", flatten=True)
    )

    @member.validator
    def _below_members(self, _attribute: Any, value: int) -> None:
        if value >= self.members:
            raise ValueError(f"must be < members ({self.members}), got {value}")


def _burrow_consumer() -> ConsumerConfig:
    return ConsumerConfig(group_id="burrow", enable_auto_commit=False)


def _committing_consumer(_instance: Any, _attribute: Any, value: ConsumerConfig) -> None:
    if value.group_id is None or value.enable_auto_commit:
        raise ValueError(
            "the Burrow consumer commits itself: set group_id and enable_auto_commit = false "
            f"(got group_id = {value.group_id!r}, enable_auto_commit = "
            f"{str(value.enable_auto_commit).lower()})"
        )


@attrs.frozen(kw_only=True)
class BurrowSection(FlattenedAccess):
    """``[burrow]``: the Burrow consumer (worker pool, gap detection, ordered commits)."""

    topic: str = attrs.field(metadata=doc("topic whose partitions it consumes"))
    members: int = attrs.field(
        default=1,
        validator=at_least(1),
        metadata=doc(
            "Burrow consumers in the group (client ids burrow, burrow-1, ...); several join "
            "the group and share its partitions"
        ),
    )
    config: BurrowConfig = attrs.field(
        factory=BurrowConfig, metadata=doc("Burrow's settings", flatten=True)
    )
    consumer: ConsumerConfig = attrs.field(
        factory=_burrow_consumer,
        validator=_committing_consumer,
        metadata=doc('the inner consumer ([burrow.consumer]); default group_id "burrow"'),
    )

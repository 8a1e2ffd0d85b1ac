"""The group leader's assignment: Kafka's ``RangeAssignor``, and the bytes members exchange.

A member joins with its *subscription* (the topics it wants) as the metadata of the protocol
``"range"``; the leader gets every member's subscription in its JoinGroup response, computes
the assignment with :func:`range_assign` and hands it to the coordinator in SyncGroup, which
gives each member its share.

Range assignment, per topic (Kafka's ``RangeAssignor``): the members subscribed to the topic,
sorted by member id, take consecutive ranges of its partitions; with ``P`` partitions and
``M`` members each gets ``P // M`` and the first ``P % M`` one more. Kafka's classic consumer
offers ``[range, cooperative-sticky]`` by default and the group picks ``range``; the
simulated consumer offers only ``range`` and rebalances eagerly (every partition is revoked,
then reassigned).

The encodings are the simulator's own, not Kafka's ``ConsumerProtocol`` (no client outside
the simulation reads them): a subscription is the topic names joined by ``,``; an assignment
is ``topic:p,p,...`` entries joined by ``;``. Both are deterministic (sorted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final

from replica.types import TopicPartition, canonical_partition

__all__ = [
    "RANGE",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "range_assign",
]

RANGE: Final = "range"
"""The protocol (assignor) name a member offers in JoinGroup."""


def encode_subscription(topics: Iterable[str]) -> bytes:
    """A member's subscription, as JoinGroup protocol metadata."""
    return ",".join(sorted(set(topics))).encode()


def decode_subscription(metadata: bytes) -> list[str]:
    """The topics of an :func:`encode_subscription` value (none for empty bytes)."""
    return [topic for topic in metadata.decode().split(",") if topic]


def encode_assignment(partitions: Iterable[TopicPartition]) -> bytes:
    """A member's assignment, as SyncGroup assignment bytes."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ";".join(
        f"{topic}:{','.join(map(str, sorted(ps)))}" for topic, ps in sorted(by_topic.items())
    ).encode()


def decode_assignment(assignment: bytes) -> tuple[TopicPartition, ...]:
    """The partitions of an :func:`encode_assignment` value, by topic then partition."""
    partitions = []
    for entry in assignment.decode().split(";"):
        if entry:
            topic, numbers = entry.rsplit(":", 1)
            partitions += [canonical_partition(topic, int(p)) for p in numbers.split(",") if p]
    return tuple(partitions)


def range_assign(
    subscriptions: Mapping[str, Iterable[str]], partition_count: Callable[[str], int | None]
) -> dict[str, list[TopicPartition]]:
    """Member id -> its partitions, by range assignment (see the module doc). A topic whose
    partition count is unknown (None) is assigned no partition; every member gets an entry."""
    assignment: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
    members_of: dict[str, list[str]] = {}
    for member, topics in subscriptions.items():
        for topic in topics:
            members_of.setdefault(topic, []).append(member)
    for topic, members in sorted(members_of.items()):
        members.sort()
        count = partition_count(topic) or 0
        share, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            end = start + share + (1 if i < extra else 0)
            assignment[member] += [canonical_partition(topic, p) for p in range(start, end)]
            start = end
    return assignment

"""The lifecycle of one record in a share partition, as an enum with a transition table.

A record fetched from the data topic is AVAILABLE. A Read hands it out: it becomes PENDING,
its delivery count goes up by one and a lease (a timer) starts. From PENDING it becomes
ACKNOWLEDGED (Acknowledge), AVAILABLE again (Cancel, or its lease expiring) or ARCHIVED
(Reject, or Cancel or expiry once its delivery count has reached the limit). ACKNOWLEDGED and
ARCHIVED records are finished; once every record before them is finished too the data topic's
commit passes them and they are COMMITTED, which is final. These are KIP-932's AVAILABLE,
ACQUIRED, ACKNOWLEDGED and ARCHIVED, with the seed's names where it has them. One move only a
merge makes (see :mod:`consume_proxy.state_map`): ARCHIVED to ACKNOWLEDGED, a record archived
here that another copy knows was acknowledged.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

__all__ = ["FINISHED", "TRANSITIONS", "Record", "RecordState"]


class RecordState(enum.Enum):
    """Where a record is in its lifecycle (see the module docstring)."""

    AVAILABLE = "available"
    PENDING = "pending"
    ACKNOWLEDGED = "acknowledged"
    ARCHIVED = "archived"
    COMMITTED = "committed"


_S = RecordState

TRANSITIONS: Mapping[RecordState, frozenset[RecordState]] = {
    _S.AVAILABLE: frozenset({_S.PENDING}),
    _S.PENDING: frozenset({_S.AVAILABLE, _S.ACKNOWLEDGED, _S.ARCHIVED}),
    _S.ACKNOWLEDGED: frozenset({_S.COMMITTED}),
    _S.ARCHIVED: frozenset({_S.ACKNOWLEDGED, _S.COMMITTED}),
    _S.COMMITTED: frozenset(),
}
"""The states each state may move to; :class:`~consume_proxy.SharePartition` makes no other
move (``tests/consume_proxy/test_share_partition.py`` checks each)."""

FINISHED = frozenset({_S.ACKNOWLEDGED, _S.ARCHIVED})
"""The states the data topic's commit may pass."""


@attrs.frozen
class Record:
    """A record handed to a reader: the seed's Record(topic, partition, offset, key, value),
    with the delivery it belongs to (1 for the first hand-out) and when its lease ends."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    delivery_count: int
    lease_deadline: int

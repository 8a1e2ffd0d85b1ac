"""StateMap: what is known of a partition's records, as a join-semilattice (the seed's CRDT).

The seed keeps two copies of each partition's state: the consumer's, built from the state
log, and the server's, changed by client requests; the server "periodically merges in the
copy from the consumer according to the CRDT rules". Here a copy is a :class:`StateMap`: the
data topic's commit position and, for each record after it, a :class:`Progress` (how far the
record's deliveries got). Merging is :meth:`StateMap.join`, and it is a state-based CRDT's
merge: commutative, associative and idempotent, so copies can be merged in any order, any
number of times, and agree once each has seen the same facts.

**Why it is a lattice.** :class:`Progress` is totally ordered by its rank

    (finished, acknowledged, delivery, phase, lease deadline)

where *finished* is True for ACKNOWLEDGED and ARCHIVED, *acknowledged* for ACKNOWLEDGED,
*delivery* is the delivery count, *phase* orders one delivery's states as it lives them
(PENDING < AVAILABLE, its end without an acknowledgement < ARCHIVED < ACKNOWLEDGED) and the
lease deadline counts only while PENDING (a renewal moves it later). The rank determines the
progress (a deadline goes with PENDING only), so the order is total and antisymmetric, and a
total order is a lattice whose join is ``max``: commutative, associative and idempotent. A
:class:`StateMap` is a product of such chains (one per offset) with a max-register for the
commit position, joined pointwise; records below the joined commit position are dropped from
both sides before joining, which commutes with the pointwise max, so the product stays a
lattice.

**What the order means.** Knowledge only grows. A finished record stays finished whatever
a lagging copy says (so it is never handed out again), and an acknowledgement beats an
archive (the record was processed after all); a later delivery beats an earlier one
(a copy cannot revive a delivery that another has moved past); a delivery's end beats its
start (an expiry or cancel seen by the server beats the Pending entry still in the log); of
two leases of one delivery the later deadline wins (a Renew).

**A stale server.** A server whose copy is old (it lost the partition and got it back, or its
consumer lags) loses nothing by merging: the join keeps the newer facts of either side. What
the lattice cannot do is fence: two servers that both believe they own a partition may each
hand out delivery ``n`` of a record, and the join merges the two into one delivery ``n`` with
the later lease. Ownership is the consumer group's job (its generations), not the merge's.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from consume_proxy.record_state import FINISHED, RecordState

__all__ = ["NEVER_DELIVERED", "Progress", "StateMap"]

_PHASE = {
    RecordState.PENDING: 0,
    RecordState.AVAILABLE: 1,
    RecordState.ARCHIVED: 2,
    RecordState.ACKNOWLEDGED: 3,
}


@attrs.frozen
class Progress:
    """How far one record's deliveries got: the delivery count, the state it is in (never
    COMMITTED: that is the map's commit position) and, while PENDING, its lease deadline.
    Raises ValueError for a combination no record can be in."""

    delivery: int
    state: RecordState
    lease_deadline: int | None = None

    def __attrs_post_init__(self) -> None:
        state = self.state
        if state not in _PHASE:
            raise ValueError(f"a record's progress cannot be {state}; allowed: {list(_PHASE)}")
        if (self.lease_deadline is not None) != (state is RecordState.PENDING):
            raise ValueError(f"a lease deadline goes with PENDING only, got {self!r}")
        if self.delivery < (0 if state is RecordState.AVAILABLE else 1):
            raise ValueError(f"only an AVAILABLE record can have no delivery, got {self!r}")

    @property
    def rank(self) -> tuple[bool, bool, int, int, int]:
        """The key of the total order (see the module docstring)."""
        state = self.state
        deadline = -1 if self.lease_deadline is None else self.lease_deadline
        acknowledged = state is RecordState.ACKNOWLEDGED
        return (state in FINISHED, acknowledged, self.delivery, _PHASE[state], deadline)

    def join(self, other: Progress) -> Progress:
        """The least upper bound of two progresses: the one of higher rank."""
        return self if self.rank >= other.rank else other


NEVER_DELIVERED = Progress(0, RecordState.AVAILABLE)
"""The bottom of the lattice: a record no one has handed out."""


@attrs.define
class StateMap:
    """One partition's copy of the state: ``committed``, the data topic's commit position,
    and the progress of records at or after it (offsets absent are :data:`NEVER_DELIVERED`).
    Build one with :meth:`of`; :meth:`add` joins one more fact into it in place."""

    committed: int
    progress: dict[int, Progress]

    @classmethod
    def of(cls, committed: int, progress: Iterable[tuple[int, Progress]] = ()) -> StateMap:
        """The map with ``committed`` and the join of the given progresses per offset."""
        state_map = cls(committed, {})
        for offset, value in progress:
            state_map.add(offset, value)
        return state_map

    def add(self, offset: int, progress: Progress) -> None:
        """Join ``progress`` into the record at ``offset`` (dropped before :attr:`committed`;
        a bottom adds nothing)."""
        if offset >= self.committed and progress != NEVER_DELIVERED:
            known = self.progress.get(offset)
            self.progress[offset] = progress if known is None else known.join(progress)

    def get(self, offset: int) -> Progress:
        """The progress of ``offset`` (:data:`NEVER_DELIVERED` when nothing is known; the
        records before :attr:`committed` are committed, not in the map)."""
        return self.progress.get(offset, NEVER_DELIVERED)

    def join(self, other: StateMap) -> StateMap:
        """The merge of two copies (a new map): the later commit position, and per record
        the join."""
        return StateMap.of(
            max(self.committed, other.committed),
            [*self.progress.items(), *other.progress.items()],
        )

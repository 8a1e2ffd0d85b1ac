"""The consumer's lifecycle: an enum of states and the table of allowed transitions.

In the style of h11's ``_state.py``: the consumer is always in exactly one
:class:`ConsumerState`; it moves only when something in :class:`LifecycleEvent` happens, and
only along an edge of :data:`TRANSITIONS`. :func:`next_state` looks an edge up and raises
:class:`IllegalTransitionError` for any other pair, so a path the design does not foresee
fails loudly at the step that took it instead of leaving the consumer half in two states.

The states, in the order a consumer of a group goes through them::

    NEW --start, subscribed--> JOINING_GROUP <-----------revoked----------------+
     |                              |  assigned                                 |
     |                              v                                           |
     +--start, group----> LOOKING_UP_COORDINATOR <--coordinator needed--+       |
     |                          |  coordinator found                    |       |
     |                          v                                       |       |
     |                      FETCHING_COMMITTED_OFFSETS -----------------+       |
     |                          |  committed offsets fetched                    |
     |                          v                                               |
     +--start, no group---> CONSUMING --close--> CLOSING --closed--> STOPPED    |
                                 +-----------------------------------------------+

A subscribed consumer (group membership, :mod:`sim.clients.consumer_group`) waits in
JOINING_GROUP until a rebalance assigns it partitions, then looks up their committed offsets
like an assigned consumer; each later rebalance revokes the partitions (from
LOOKING_UP_COORDINATOR, FETCHING_COMMITTED_OFFSETS or CONSUMING) and it waits again.
``close`` leads to CLOSING from every state but STOPPED (and again from CLOSING), ``crash`` to
STOPPED from every state but STOPPED. A coordinator lookup or an OffsetFetch that has to be
retried stays in its state (the self-loops in the table).

What is *not* a lifecycle state, and why:

* Resetting a partition's position (ListOffsets, ``auto_offset_reset``) happens per partition
  while the others are already fetched: after the OffsetFetch for partitions without a
  committed offset, and at any time after OFFSET_OUT_OF_RANGE. A partition without a fetch
  position is being reset (:mod:`sim.clients.consumer_positions`); CONSUMING covers both.
* Requests in flight are independent of each other and of the lifecycle: a fetch to each
  leader, commits, a metadata refresh. Each is tracked by the part that makes it (a request by
  its timeout timer, a fetch by the FetchRequest kept per leader, the refresh by a flag, as it
  has no request object), not by the lifecycle.
* ``pause``/``resume``, an auto-commit falling due while the application is busy, and
  delivery held back by a blocking commit are orthogonal facts that hold in any running state.

CLOSING lasts while the final auto-commit of ``close`` is outstanding; in it, fetches already
in flight still deliver their records (the consumer is paused). A second ``close`` in CLOSING
makes another final commit, as the consumer always did.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from mypy_extensions import mypyc_attr

from sim.clients.errors import ClientStateError

__all__ = [
    "TRANSITIONS",
    "ConsumerState",
    "IllegalTransitionError",
    "LifecycleEvent",
    "next_state",
]


class ConsumerState(enum.Enum):
    """Where a :class:`~sim.clients.consumer.Consumer` is in its life."""

    NEW = "new"
    """Created; partitions may be assigned. Nothing is sent."""
    JOINING_GROUP = "joining the group"
    """Subscribed, without partitions: waiting for a rebalance to assign some."""
    LOOKING_UP_COORDINATOR = "looking up the coordinator"
    """Started in a group whose coordinator is unknown: waiting for a metadata refresh."""
    FETCHING_COMMITTED_OFFSETS = "fetching committed offsets"
    """An OffsetFetch to the coordinator is outstanding, or backing off before a retry."""
    CONSUMING = "consuming"
    """Each assigned partition is fetched from its position, or has its position reset."""
    CLOSING = "closing"
    """``close`` was called; its final commit is outstanding."""
    STOPPED = "stopped"
    """Closed or crashed: nothing is sent, answers and timers are ignored."""


class LifecycleEvent(enum.Enum):
    """What moves a consumer from one :class:`ConsumerState` to the next."""

    START_IN_GROUP = "start with a group_id"
    START_WITHOUT_GROUP = "start without a group_id"
    START_SUBSCRIBED = "start as a member of the group"
    ASSIGNED = "partitions assigned by a rebalance"
    REVOKED = "partitions revoked for a rebalance"
    COORDINATOR_FOUND = "coordinator found"
    COORDINATOR_NEEDED = "coordinator unknown or no longer the coordinator"
    COMMITTED_OFFSETS_FETCHED = "committed offsets fetched"
    CLOSE = "close"
    CLOSED = "closed"
    CRASH = "crash"


_S = ConsumerState
_E = LifecycleEvent
_ASSIGNED: Final = (_S.LOOKING_UP_COORDINATOR, _S.FETCHING_COMMITTED_OFFSETS, _S.CONSUMING)
_RUNNING: Final = (_S.NEW, _S.JOINING_GROUP, *_ASSIGNED)

TRANSITIONS: Final[Mapping[tuple[ConsumerState, LifecycleEvent], ConsumerState]] = {
    (_S.NEW, _E.START_IN_GROUP): _S.LOOKING_UP_COORDINATOR,
    (_S.NEW, _E.START_WITHOUT_GROUP): _S.CONSUMING,
    (_S.NEW, _E.START_SUBSCRIBED): _S.JOINING_GROUP,
    (_S.JOINING_GROUP, _E.ASSIGNED): _S.LOOKING_UP_COORDINATOR,
    **{(state, _E.REVOKED): _S.JOINING_GROUP for state in _ASSIGNED},
    (_S.LOOKING_UP_COORDINATOR, _E.COORDINATOR_FOUND): _S.FETCHING_COMMITTED_OFFSETS,
    (_S.LOOKING_UP_COORDINATOR, _E.COORDINATOR_NEEDED): _S.LOOKING_UP_COORDINATOR,
    (_S.FETCHING_COMMITTED_OFFSETS, _E.COORDINATOR_FOUND): _S.FETCHING_COMMITTED_OFFSETS,
    (_S.FETCHING_COMMITTED_OFFSETS, _E.COORDINATOR_NEEDED): _S.LOOKING_UP_COORDINATOR,
    (_S.FETCHING_COMMITTED_OFFSETS, _E.COMMITTED_OFFSETS_FETCHED): _S.CONSUMING,
    **{(state, _E.CLOSE): _S.CLOSING for state in (*_RUNNING, _S.CLOSING)},
    (_S.CLOSING, _E.CLOSED): _S.STOPPED,
    **{(state, _E.CRASH): _S.STOPPED for state in (*_RUNNING, _S.CLOSING)},
}
"""``(state, event) -> next state``; every pair not in it is an illegal transition."""


@mypyc_attr(native_class=False)  # its base has two built-in bases
class IllegalTransitionError(ClientStateError):
    """A lifecycle event happened in a state whose row of :data:`TRANSITIONS` lacks it."""

    def __init__(self, state: ConsumerState, event: LifecycleEvent) -> None:
        super().__init__(f"consumer cannot handle {event.name} in state {state.name}")
        self.state = state
        self.event = event


def next_state(state: ConsumerState, event: LifecycleEvent) -> ConsumerState:
    """The state ``event`` leads to from ``state``. Raises IllegalTransitionError if the
    table has no such edge."""
    try:
        return TRANSITIONS[state, event]
    except KeyError:
        raise IllegalTransitionError(state, event) from None

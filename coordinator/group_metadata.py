"""GroupMetadata and MemberMetadata: one consumer group's membership in the classic protocol.

A group moves through the :class:`GroupState` lifecycle (Kafka's ``GroupState`` objects):

* EMPTY: no members (a new group, or one whose members all left); JoinGroup from a new
  member starts a rebalance.
* PREPARING_REBALANCE: waiting for the members to (re)join; their JoinGroup requests are
  parked until every known member has joined or the rebalance timeout passes.
* COMPLETING_REBALANCE: a new generation exists; waiting for the leader's SyncGroup with the
  assignment. Followers' SyncGroup requests are parked.
* STABLE: the assignment is handed out; heartbeats keep the members alive.
* DEAD: the group left this coordinator (its offsets partition moved); nothing moves it on.

:data:`VALID_PREVIOUS_STATES` is Kafka's table of the states each state may be entered from;
:meth:`GroupMetadata.transition_to` refuses any other move with
:class:`~coordinator.errors.IllegalGroupStateError`.

The group keeps what Kafka's ``GroupMetadata`` keeps for membership: its members in join order
(the leader is the first member when a leader must be chosen), the pending members (given a
member id by MEMBER_ID_REQUIRED, not joined yet), the members whose JoinGroup is parked
(``awaiting_join``, counted so "has everyone joined" is O(1)), the members that have not sent
SyncGroup in the current generation, and for each protocol the number of members supporting
it. A member's parked JoinGroup or SyncGroup is its callback: invoking it answers the request.

This module holds state and its invariants only; who calls what, and when the purgatories
are involved, is :mod:`coordinator.group_coordinator`'s business.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from coordinator.errors import IllegalGroupStateError
from replica.errors import Errors

__all__ = [
    "NO_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "VALID_PREVIOUS_STATES",
    "GroupMetadata",
    "GroupState",
    "JoinGroupResult",
    "JoinGroupResultMember",
    "MemberMetadata",
    "SyncGroupResult",
]

#: The member id of a member that does not have one yet (Kafka's ``UNKNOWN_MEMBER_ID``).
UNKNOWN_MEMBER_ID: Final = ""
#: The generation of a commit from outside group management (Kafka's ``NoGeneration``).
NO_GENERATION: Final = -1


class GroupState(enum.Enum):
    """Where a group is in its lifecycle (see the module docstring)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_EMPTY: Final = GroupState.EMPTY
_PREPARING: Final = GroupState.PREPARING_REBALANCE
_COMPLETING: Final = GroupState.COMPLETING_REBALANCE
_STABLE: Final = GroupState.STABLE
_DEAD: Final = GroupState.DEAD

VALID_PREVIOUS_STATES: Final[Mapping[GroupState, frozenset[GroupState]]] = {
    _PREPARING: frozenset({_STABLE, _COMPLETING, _EMPTY}),
    _COMPLETING: frozenset({_PREPARING}),
    _STABLE: frozenset({_COMPLETING}),
    _DEAD: frozenset({_STABLE, _PREPARING, _COMPLETING, _EMPTY, _DEAD}),
    _EMPTY: frozenset({_PREPARING}),
}
"""For each state, the states a group may enter it from (Kafka's ``validPreviousStates``)."""


@attrs.define(frozen=True)
class JoinGroupResultMember:
    """One member as the leader's JoinGroup response lists it: its id and its metadata for the
    selected protocol (a consumer's subscription)."""

    member_id: str
    metadata: bytes


@attrs.define(frozen=True)
class JoinGroupResult:
    """The answer to a JoinGroup (Kafka's ``JoinGroupResult``). ``members`` is filled in for
    the leader only; on an error the generation is -1 and the protocol None."""

    member_id: str
    error: Errors
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[JoinGroupResultMember, ...] = ()


@attrs.define(frozen=True)
class SyncGroupResult:
    """The answer to a SyncGroup (Kafka's ``SyncGroupResult``): the member's assignment, or an
    error with an empty one."""

    error: Errors
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]


@attrs.define(eq=False)
class MemberMetadata:
    """One member of a group (Kafka's ``MemberMetadata``).

    ``protocols`` are the (name, metadata) pairs the member supports, in its order of
    preference. ``awaiting_join`` / ``awaiting_sync`` hold the callback of its parked JoinGroup
    / SyncGroup, None when it has none. ``heartbeat_satisfied`` is set by the coordinator just
    before it completes the member's delayed heartbeat; ``is_new`` marks a member whose first
    JoinGroup has not been answered yet.
    """

    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: JoinCallback | None = None
    awaiting_sync: SyncCallback | None = None
    is_new: bool = False
    heartbeat_satisfied: bool = False

    @property
    def protocol_names(self) -> frozenset[str]:
        """The names of the protocols the member supports."""
        return frozenset(name for name, _ in self.protocols)

    def metadata(self, protocol: str) -> bytes:
        """The member's metadata for ``protocol``. Raises KeyError if it does not support it."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        """True if ``protocols`` are the member's, in the same order with the same metadata."""
        return tuple(protocols) == self.protocols

    def vote(self, candidates: frozenset[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise KeyError(f"member {self.member_id} supports none of {sorted(candidates)}")

    @property
    def has_satisfied_heartbeat(self) -> bool:
        """Whether the member's current delayed heartbeat may complete: a member with a parked
        JoinGroup or SyncGroup is alive by definition, unless it is new (a new member that
        never got its JoinGroup answer may expire while waiting)."""
        if self.is_new:
            return self.heartbeat_satisfied
        if self.awaiting_join is not None or self.awaiting_sync is not None:
            return True
        return self.heartbeat_satisfied


class GroupMetadata:
    """The membership state of group ``group_id`` (Kafka's ``GroupMetadata``).

    ``state_timestamp`` is the time (ms, from ``clock``) of the last state change.
    """

    def __init__(self, group_id: str, clock: Callable[[], int], state: GroupState = _EMPTY) -> None:
        self.group_id = group_id
        self._clock = clock
        self._state = state
        self.state_timestamp = clock()
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        #: Set when a member joins a new group during its first rebalance: the initial
        #: delayed join then waits once more (see coordinator.delayed_join).
        self.new_member_added = False
        self._members: dict[str, MemberMetadata] = {}
        self._pending_members: set[str] = set()
        self._pending_sync_members: set[str] = set()
        self._num_awaiting_join = 0
        self._supported_protocols: dict[str, int] = {}

    def __repr__(self) -> str:
        return (
            f"GroupMetadata({self.group_id!r}, {self._state.value}, "
            f"generation={self.generation_id}, members={list(self._members)})"
        )

    # -- state ------------------------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        """The group's current state."""
        return self._state

    def is_(self, state: GroupState) -> bool:
        """True if the group is in ``state``."""
        return self._state is state

    def transition_to(self, state: GroupState) -> None:
        """Move to ``state``; raises IllegalGroupStateError unless the current state
        is one of :data:`VALID_PREVIOUS_STATES` of ``state``."""
        if self._state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalGroupStateError(
                f"group {self.group_id!r} cannot move from {self._state.value} to {state.value}"
                f" (only from {sorted(s.value for s in VALID_PREVIOUS_STATES[state])})"
            )
        self._state = state
        self.state_timestamp = self._clock()

    @property
    def can_rebalance(self) -> bool:
        """True if the group may enter PREPARING_REBALANCE now."""
        return self._state in VALID_PREVIOUS_STATES[_PREPARING]

    # -- members ----------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        """True if ``member_id`` is a member (pending members are not)."""
        return member_id in self._members

    def get(self, member_id: str) -> MemberMetadata:
        """The member ``member_id``. Raises KeyError if it is not a member."""
        return self._members[member_id]

    @property
    def members(self) -> list[MemberMetadata]:
        """The members, in the order they joined."""
        return list(self._members.values())

    def is_leader(self, member_id: str) -> bool:
        """True if ``member_id`` leads the group."""
        return self.leader_id is not None and self.leader_id == member_id

    def add(self, member: MemberMetadata, callback: JoinCallback | None = None) -> None:
        """Add ``member`` with its parked JoinGroup ``callback`` (None when loaded from the
        log). The first member sets the group's protocol type and becomes leader if there is
        none; a pending member of that id stops being pending."""
        if not self._members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self._members[member.member_id] = member
        self._count_protocols(member, 1)
        member.awaiting_join = callback
        if callback is not None:
            self._num_awaiting_join += 1
        self._pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        """Remove a member or a pending member (unknown ids are ignored). If it led the group,
        the first remaining member leads."""
        member = self._members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.awaiting_join is not None:
                self._num_awaiting_join -= 1
        if self.is_leader(member_id):
            self.leader_id = next(iter(self._members), None)
        self._pending_members.discard(member_id)
        self._pending_sync_members.discard(member_id)

    def update_member(
        self,
        member: MemberMetadata,
        protocols: Sequence[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        callback: JoinCallback | None,
    ) -> JoinCallback | None:
        """Replace a member's protocols and timeouts and park its JoinGroup ``callback``.
        Returns the callback it replaces (a JoinGroup the member sent before and that is
        still parked), which the caller must answer."""
        self._count_protocols(member, -1)
        member.protocols = tuple(protocols)
        self._count_protocols(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        replaced = member.awaiting_join
        self._num_awaiting_join += (callback is not None) - (replaced is not None)
        member.awaiting_join = callback
        return replaced

    def _count_protocols(self, member: MemberMetadata, delta: int) -> None:
        for name in member.protocol_names:
            self._supported_protocols[name] = self._supported_protocols.get(name, 0) + delta

    def invoke_join_callback(self, member: MemberMetadata, result: JoinGroupResult) -> bool:
        """Answer the member's parked JoinGroup with ``result``; False if it has none."""
        callback = member.awaiting_join
        if callback is None:
            return False
        member.awaiting_join = None
        self._num_awaiting_join -= 1
        callback(result)
        return True

    def invoke_sync_callback(self, member: MemberMetadata, result: SyncGroupResult) -> bool:
        """Answer the member's parked SyncGroup with ``result``; False if it has none."""
        callback = member.awaiting_sync
        if callback is None:
            return False
        member.awaiting_sync = None
        callback(result)
        return True

    @property
    def has_all_members_joined(self) -> bool:
        """True when every member has a parked JoinGroup and no member id is pending."""
        return len(self._members) == self._num_awaiting_join and not self._pending_members

    @property
    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        """The members without a parked JoinGroup, in join order."""
        return [m for m in self._members.values() if m.awaiting_join is None]

    @property
    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout of the members (0 without members)."""
        return max((m.rebalance_timeout_ms for m in self._members.values()), default=0)

    # -- pending members --------------------------------------------------------------------

    def is_pending_member(self, member_id: str) -> bool:
        """True if ``member_id`` was handed out by MEMBER_ID_REQUIRED and has not joined."""
        return member_id in self._pending_members

    def add_pending_member(self, member_id: str) -> None:
        """Remember a member id handed out by MEMBER_ID_REQUIRED."""
        self._pending_members.add(member_id)

    def add_pending_sync_member(self, member_id: str) -> None:
        """Expect a SyncGroup from ``member_id`` in this generation."""
        self._pending_sync_members.add(member_id)

    def remove_pending_sync_member(self, member_id: str) -> None:
        """``member_id`` sent its SyncGroup."""
        self._pending_sync_members.discard(member_id)

    def clear_pending_sync_members(self) -> None:
        """Expect no SyncGroup any more."""
        self._pending_sync_members.clear()

    @property
    def pending_sync_members(self) -> list[str]:
        """The members expected to send SyncGroup, in join order."""
        return [m for m in self._members if m in self._pending_sync_members]

    # -- protocols and generations ----------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocols: frozenset[str]) -> bool:
        """Whether a member with these protocols may join: an empty group takes any non-empty
        type and protocols; otherwise the type must match and one protocol must be supported
        by every member."""
        if self._state is _EMPTY:
            return bool(protocol_type) and bool(protocols)
        return self.protocol_type == protocol_type and any(
            self._supported_protocols.get(name, 0) == len(self._members) for name in protocols
        )

    def select_protocol(self) -> str:
        """The protocol of the next generation: among those every member supports, the one
        most members prefer (each votes for its first supported candidate). A tie goes to the
        protocol voted for by the earliest joined member. Raises KeyError without members."""
        if not self._members:
            raise KeyError(f"group {self.group_id!r} has no members to select a protocol")
        count = len(self._members)
        candidates = frozenset(n for n, c in self._supported_protocols.items() if c == count)
        votes: dict[str, int] = {}
        for member in self._members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])  # max keeps the first of equals

    def init_next_generation(self) -> None:
        """Start the next generation: COMPLETING_REBALANCE with a selected protocol, or EMPTY
        without members; nobody is expected to sync yet."""
        self.generation_id += 1
        if self._members:
            self.protocol_name = self.select_protocol()
            self.transition_to(_COMPLETING)
        else:
            self.protocol_name = None
            self.transition_to(_EMPTY)
        self._pending_sync_members.clear()

    def current_member_metadata(self) -> tuple[JoinGroupResultMember, ...]:
        """Every member with its metadata for the selected protocol (the leader's JoinGroup
        response)."""
        protocol = self.protocol_name
        if protocol is None:
            raise IllegalGroupStateError(
                f"group {self.group_id!r} has no protocol in state {self._state.value}"
            )
        return tuple(
            JoinGroupResultMember(m.member_id, m.metadata(protocol)) for m in self._members.values()
        )

"""GroupCoordinator: Kafka's classic group membership protocol, built on two purgatories.

The coordinator of a group is the leader of the group's partition of ``__consumer_offsets``.
It serves the group protocol's requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and
checks offset commits against the group's membership before handing them to the
:class:`~coordinator.offset_manager.OffsetManager`, which stores them (as Kafka's
``GroupCoordinator`` sits on its ``GroupMetadataManager``).

A rebalance, from a group's point of view (states in :mod:`coordinator.group_metadata`):

1. A member joins (JoinGroup), an existing one rejoins with other protocols (or is the leader),
   a member leaves or its session ends: the group goes to PREPARING_REBALANCE and a
   :class:`~coordinator.delayed_rebalance.DelayedJoin` (an
   :class:`~coordinator.delayed_rebalance.InitialDelayedJoin` for an EMPTY group) waits in the
   **Rebalance purgatory** while the members' JoinGroup requests are parked.
2. When every member has rejoined, or at the rebalance timeout (members that did not rejoin
   are removed), the next generation starts: the protocol is selected, every parked JoinGroup
   is answered (the leader's with every member's metadata) and the group waits in
   COMPLETING_REBALANCE for SyncGroup, with a
   :class:`~coordinator.delayed_rebalance.DelayedSync` that removes members that never send it.
3. The leader's SyncGroup carries the assignment. It is stored in ``__consumer_offsets``
   (:meth:`OffsetManager.store_group <coordinator.offset_manager.OffsetManager.store_group>`,
   acks=-1); once stored, every parked SyncGroup gets its member's assignment and the group is
   STABLE. A store that fails answers them with the error and starts another rebalance.

Sessions live in the **Heartbeat purgatory**: one
:class:`~coordinator.delayed_heartbeat.DelayedHeartbeat` per member, keyed by ``(group id,
member id)``; whatever shows a member alive completes its current one and watches a fresh one
for its session timeout (a new member's first one lasts :data:`NEW_MEMBER_JOIN_TIMEOUT_MS`, as
it cannot heartbeat before its JoinGroup is answered). A member with a parked JoinGroup or
SyncGroup cannot expire. JoinGroup v4+ with no member id is answered MEMBER_ID_REQUIRED with a
generated id, which is *pending* until the member joins with it, and expires after the session
timeout like a member.

Moving coordinators: when this broker becomes leader of an offsets partition
(:meth:`GroupCoordinator.on_election`), the OffsetManager loads it and hands back each group's
latest metadata record; those groups come back STABLE (or EMPTY) with their generation,
members and assignment, and their members' sessions start anew. On resignation the partition's
groups become DEAD and their parked requests are answered NOT_COORDINATOR.

A group this coordinator holds is never DEAD: unloading removes it, and only the delayed
operations still holding it see the state (Kafka's request paths check for DEAD because a
concurrent unload may race them; here nothing runs concurrently).

Every request gets exactly one answer: a parked JoinGroup or SyncGroup that a newer one from
the same member replaces is answered REBALANCE_IN_PROGRESS, and a removed member's parked
requests are answered UNKNOWN_MEMBER_ID (Kafka drops the replaced callback).

Sans-IO: ``clock()`` gives milliseconds and the purgatories expire operations only when
:meth:`GroupCoordinator.advance_clock` is called; :meth:`GroupCoordinator.next_deadline` says
when that is due. Member ids are ``client id-UUID`` like Kafka's, but the UUID is made from
the broker id and a counter (skipping ids the group already has), so runs are deterministic.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import attrs

from coordinator.config import GroupConfig
from coordinator.delayed_heartbeat import DelayedHeartbeat
from coordinator.delayed_rebalance import (
    DelayedJoin,
    DelayedRebalance,
    DelayedSync,
    InitialDelayedJoin,
    join_key,
    sync_key,
)
from coordinator.group_metadata import (
    UNKNOWN_MEMBER_ID,
    GroupMetadata,
    GroupState,
    JoinCallback,
    JoinGroupResult,
    MemberMetadata,
    SyncCallback,
    SyncGroupResult,
)
from coordinator.group_record import GroupMemberValue, GroupMetadataValue
from coordinator.offset_manager import (
    OffsetCommitCallback,
    OffsetFetchResult,
    OffsetManager,
    OffsetsPartitionStatus,
)
from coordinator.offset_record import OffsetAndMetadata
from purgatory import DelayedOperationPurgatory
from replica.errors import Errors
from replica.types import TopicPartition

__all__ = ["NEW_MEMBER_JOIN_TIMEOUT_MS", "GroupCoordinator", "LeaveGroupResult"]

_logger = logging.getLogger(__name__)

#: How long a new member's first JoinGroup may stay parked before the member is dropped
#: (Kafka's ``NewMemberJoinTimeoutMs``): it cannot heartbeat before it has been answered.
NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 5 * 60 * 1000

_EMPTY: Final = GroupState.EMPTY
_PREPARING: Final = GroupState.PREPARING_REBALANCE
_COMPLETING: Final = GroupState.COMPLETING_REBALANCE
_STABLE: Final = GroupState.STABLE
_DEAD: Final = GroupState.DEAD


@attrs.define(frozen=True)
class LeaveGroupResult:
    """The answer to a LeaveGroup: a group-level error and, when it is NONE, one error per
    leaving member, in the request's order."""

    error: Errors
    members: tuple[tuple[str, Errors], ...] = ()


@attrs.define(frozen=True)
class _Joining:
    """What a JoinGroup says about the member that sends it."""

    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]


class GroupCoordinator:
    """The group coordinator of broker ``broker_id``: groups of the offsets partitions that
    ``offset_manager`` owns, with ``config``'s bounds and delays, on ``clock`` (ms)."""

    def __init__(
        self,
        broker_id: int,
        offset_manager: OffsetManager,
        config: GroupConfig,
        clock: Callable[[], int],
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self._offset_manager = offset_manager
        self._clock = clock
        start = clock()
        self.heartbeat_purgatory: DelayedOperationPurgatory[DelayedHeartbeat] = (
            DelayedOperationPurgatory("Heartbeat", clock=clock, start=start)
        )
        self.rebalance_purgatory: DelayedOperationPurgatory[DelayedRebalance] = (
            DelayedOperationPurgatory("Rebalance", clock=clock, start=start)
        )
        self._groups: dict[str, GroupMetadata] = {}
        self._member_ids = itertools.count(1)
        self._active = True

    def __repr__(self) -> str:
        return f"GroupCoordinator(broker={self.broker_id}, groups={sorted(self._groups)})"

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id`` (its coordinator leads it)."""
        return self._offset_manager.partition_for(group_id)

    def group(self, group_id: str) -> GroupMetadata | None:
        """The group ``group_id`` as this coordinator holds it, or None."""
        return self._groups.get(group_id)

    # -- time -------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """The earliest deadline of the two purgatories (None: nothing is waiting)."""
        deadlines = [
            t
            for t in (
                self.heartbeat_purgatory.next_deadline(),
                self.rebalance_purgatory.next_deadline(),
            )
            if t is not None
        ]
        return min(deadlines) if deadlines else None

    def advance_clock(self, now_ms: int) -> int:
        """Expire the sessions, joins and syncs due at ``now_ms``; returns how many expired."""
        return self.heartbeat_purgatory.advance_clock(
            now_ms
        ) + self.rebalance_purgatory.advance_clock(now_ms)

    def shutdown(self) -> None:
        """Stop: every later request gets COORDINATOR_NOT_AVAILABLE; waiting operations are
        dropped without running (as Kafka drops them), so parked requests stay unanswered."""
        self._active = False
        self.heartbeat_purgatory.shutdown()
        self.rebalance_purgatory.shutdown()

    # -- JoinGroup --------------------------------------------------------------------------

    def handle_join_group(
        self,
        group_id: str,
        member_id: str,
        *,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        require_known_member_id: bool,
        callback: JoinCallback,
    ) -> None:
        """Join (or rejoin) ``group_id``; ``callback`` gets the answer exactly once, at once
        or when the rebalance moves on.

        Errors: the group's status (INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE,
        COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR); a session timeout outside
        ``group.min/max.session.timeout.ms``: INVALID_SESSION_TIMEOUT; protocols the group
        cannot take: INCONSISTENT_GROUP_PROTOCOL; a member id the group does not know (or an
        unknown group with a member id): UNKNOWN_MEMBER_ID. With no member id and
        ``require_known_member_id`` (JoinGroup v4+): MEMBER_ID_REQUIRED with the id to join
        with.
        """
        error = self._group_status_error(group_id)
        if error is None and not (
            self.config.group_min_session_timeout_ms
            <= session_timeout_ms
            <= self.config.group_max_session_timeout_ms
        ):
            error = Errors.INVALID_SESSION_TIMEOUT
        if error is not None:
            callback(JoinGroupResult(member_id, error))
            return
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self._groups.get(group_id)
        if group is None:
            if not is_unknown:
                callback(JoinGroupResult(member_id, Errors.UNKNOWN_MEMBER_ID))
                return
            group = self._groups[group_id] = GroupMetadata(group_id, self._clock)
        joining = _Joining(
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            protocol_type,
            tuple(protocols),
        )
        if is_unknown:
            self._new_member_join(group, joining, require_known_member_id, callback)
        else:
            self._current_member_join(group, member_id, joining, callback)
        if group.is_(_PREPARING):
            self.rebalance_purgatory.check_and_complete(join_key(group_id))

    def _join_refusal(self, group: GroupMetadata, joining: _Joining) -> Errors | None:
        if not group.supports_protocols(
            joining.protocol_type, frozenset(name for name, _ in joining.protocols)
        ):
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _new_member_join(
        self,
        group: GroupMetadata,
        joining: _Joining,
        require_known_member_id: bool,
        callback: JoinCallback,
    ) -> None:
        error = self._join_refusal(group, joining)
        if error is not None:
            callback(JoinGroupResult(UNKNOWN_MEMBER_ID, error))
            return
        member_id = self._generate_member_id(group, joining.client_id)
        if require_known_member_id:
            group.add_pending_member(member_id)
            key = (group.group_id, member_id)
            self.heartbeat_purgatory.try_complete_else_watch(
                DelayedHeartbeat(self, group, member_id, True, joining.session_timeout_ms), [key]
            )
            callback(JoinGroupResult(member_id, Errors.MEMBER_ID_REQUIRED))
        else:
            self._add_member_and_rebalance(group, member_id, joining, callback)

    def _generate_member_id(self, group: GroupMetadata, client_id: str) -> str:
        """``client id-UUID``, the UUID from the broker id and a counter, skipping ids the
        group already has (a fresh broker restarts its counter; its groups may hold ids it
        generated before)."""
        while True:
            unique = uuid.UUID(int=(self.broker_id << 64) | next(self._member_ids))
            member_id = f"{client_id}-{unique}"
            if not (group.has(member_id) or group.is_pending_member(member_id)):
                return member_id

    def _current_member_join(
        self, group: GroupMetadata, member_id: str, joining: _Joining, callback: JoinCallback
    ) -> None:
        error = self._join_refusal(group, joining)
        if error is not None:
            callback(JoinGroupResult(member_id, error))
        elif group.is_pending_member(member_id):
            self._add_member_and_rebalance(group, member_id, joining, callback)
        elif not group.has(member_id):  # an EMPTY group has no members
            callback(JoinGroupResult(member_id, Errors.UNKNOWN_MEMBER_ID))
        else:
            member = group.get(member_id)
            unchanged = member.matches(joining.protocols)
            if group.is_(_COMPLETING) and unchanged:
                # It missed its JoinGroup answer: the current generation's again.
                callback(self._join_result(group, member_id))
            elif group.is_(_STABLE) and unchanged and not group.is_leader(member_id):
                callback(self._join_result(group, member_id))
            else:  # PREPARING_REBALANCE, changed protocols, or the leader asks for one
                self._update_member_and_rebalance(group, member, joining, callback)

    def _join_result(self, group: GroupMetadata, member_id: str) -> JoinGroupResult:
        """The current generation as ``member_id`` sees it (the leader gets the members)."""
        leader = group.is_leader(member_id)
        return JoinGroupResult(
            member_id,
            Errors.NONE,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            group.current_member_metadata() if leader else (),
        )

    def _add_member_and_rebalance(
        self, group: GroupMetadata, member_id: str, joining: _Joining, callback: JoinCallback
    ) -> None:
        member = MemberMetadata(
            member_id,
            joining.client_id,
            joining.client_host,
            joining.rebalance_timeout_ms,
            joining.session_timeout_ms,
            joining.protocol_type,
            joining.protocols,
            is_new=True,
        )
        if group.is_(_PREPARING) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, callback)
        self._complete_and_schedule_next_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        joining: _Joining,
        callback: JoinCallback,
    ) -> None:
        replaced = group.update_member(
            member,
            joining.protocols,
            joining.rebalance_timeout_ms,
            joining.session_timeout_ms,
            callback,
        )
        if replaced is not None:
            replaced(JoinGroupResult(member.member_id, Errors.REBALANCE_IN_PROGRESS))
        self._maybe_prepare_rebalance(group)

    # -- SyncGroup --------------------------------------------------------------------------

    def handle_sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        *,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        callback: SyncCallback,
    ) -> None:
        """Sync with generation ``generation_id``: the leader hands in ``assignments`` (member
        id -> assignment; members it leaves out get an empty one). ``callback`` gets the
        member's assignment exactly once, when the leader's assignment is stored.

        Errors: the group's status (COORDINATOR_LOAD_IN_PROGRESS is answered
        REBALANCE_IN_PROGRESS, as Kafka does, so the member rejoins); unknown group or member,
        or an EMPTY group: UNKNOWN_MEMBER_ID; another generation: ILLEGAL_GENERATION; a
        protocol type or name that is not the group's: INCONSISTENT_GROUP_PROTOCOL; a group
        preparing a rebalance: REBALANCE_IN_PROGRESS; the store's error.
        """
        error = self._group_status_error(group_id)
        if error is Errors.COORDINATOR_LOAD_IN_PROGRESS:
            error = Errors.REBALANCE_IN_PROGRESS
        group = self._groups.get(group_id)
        if error is None:
            error = self._sync_refusal(
                group, generation_id, member_id, protocol_type, protocol_name
            )
        if error is not None or group is None:
            callback(SyncGroupResult(Errors.UNKNOWN_MEMBER_ID if error is None else error))
            return
        member = group.get(member_id)
        if group.is_(_STABLE):
            group.remove_pending_sync_member(member_id)
            self.rebalance_purgatory.check_and_complete(sync_key(group_id))
            callback(
                SyncGroupResult(
                    Errors.NONE, member.assignment, group.protocol_type, group.protocol_name
                )
            )
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
            return
        # COMPLETING_REBALANCE: park the request until the leader's assignment is stored.
        if member.awaiting_sync is not None:
            group.invoke_sync_callback(member, SyncGroupResult(Errors.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = callback
        group.remove_pending_sync_member(member_id)
        self.rebalance_purgatory.check_and_complete(sync_key(group_id))
        if group.is_leader(member_id):
            self._store_assignment(
                group, {m.member_id: assignments.get(m.member_id, b"") for m in group.members}
            )

    def _sync_refusal(
        self,
        group: GroupMetadata | None,
        generation_id: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> Errors | None:
        if group is None or not group.has(member_id):  # an EMPTY group has no members
            return Errors.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        if protocol_type is not None and protocol_type != group.protocol_type:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and protocol_name != group.protocol_name:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        if group.is_(_PREPARING):
            return Errors.REBALANCE_IN_PROGRESS
        return None

    def _store_assignment(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        generation_id = group.generation_id

        def stored(error: Errors) -> None:
            # The group may have moved on (a member joined, the coordinator moved) meanwhile.
            if not (group.is_(_COMPLETING) and group.generation_id == generation_id):
                return
            if error is Errors.NONE:
                for member in group.members:
                    member.assignment = assignment[member.member_id]
                self._propagate_assignment(group, Errors.NONE)
                group.transition_to(_STABLE)
            else:
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(group)

        self._offset_manager.store_group(group.group_id, _stored_value(group, assignment), stored)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: Errors) -> None:
        for member in group.members:
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: Errors) -> None:
        """Answer every parked SyncGroup (with its member's assignment, or ``error``) and start
        those members' sessions anew."""
        ok = error is Errors.NONE
        for member in group.members:
            result = SyncGroupResult(
                error,
                member.assignment,
                group.protocol_type if ok else None,
                group.protocol_name if ok else None,
            )
            if group.invoke_sync_callback(member, result):
                self._complete_and_schedule_next_heartbeat_expiration(group, member)

    # -- Heartbeat and LeaveGroup -----------------------------------------------------------

    def handle_heartbeat(self, group_id: str, member_id: str, generation_id: int) -> Errors:
        """A member's heartbeat: restarts its session. Returns NONE, REBALANCE_IN_PROGRESS
        (the member must rejoin; its session still restarts) or an error: the group's status
        (COORDINATOR_LOAD_IN_PROGRESS is answered NONE, as Kafka does), UNKNOWN_MEMBER_ID
        (unknown group or member, EMPTY group), ILLEGAL_GENERATION."""
        error = self._group_status_error(group_id)
        if error is not None:
            return Errors.NONE if error is Errors.COORDINATOR_LOAD_IN_PROGRESS else error
        group = self._groups.get(group_id)
        if group is None or not group.has(member_id):
            return Errors.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
        return Errors.REBALANCE_IN_PROGRESS if group.is_(_PREPARING) else Errors.NONE

    def handle_leave_group(self, group_id: str, member_ids: Sequence[str]) -> LeaveGroupResult:
        """Remove ``member_ids`` (members or pending members) from ``group_id``; the group
        rebalances. A member the group does not know gets UNKNOWN_MEMBER_ID (the others still
        leave); the group-level error is the group's status."""
        error = self._group_status_error(group_id)
        if error is not None:
            return LeaveGroupResult(error)
        group = self._groups.get(group_id)
        results: list[tuple[str, Errors]] = []
        for member_id in member_ids:
            if group is None or not (group.has(member_id) or group.is_pending_member(member_id)):
                results.append((member_id, Errors.UNKNOWN_MEMBER_ID))
                continue
            if group.is_pending_member(member_id):
                self._remove_pending_member_and_update_group(group, member_id)
            else:
                self._remove_member_and_update_group(group, group.get(member_id))
            self.heartbeat_purgatory.check_and_complete((group_id, member_id))
            results.append((member_id, Errors.NONE))
        return LeaveGroupResult(Errors.NONE, tuple(results))

    # -- offsets ----------------------------------------------------------------------------

    def handle_commit_offsets(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        callback: OffsetCommitCallback,
    ) -> None:
        """Check a commit against the group's membership, then store it through the
        OffsetManager (whose errors and callback rules apply).

        Allowed: a commit with generation -1 (from outside group management) to a group that
        is EMPTY or unknown here; one from a member of the current generation of a STABLE or
        PREPARING_REBALANCE group (the previous generation still commits while the group
        rebalances; it restarts the member's session). Refused for every partition: the
        group's status; an unknown group with a generation >= 0: ILLEGAL_GENERATION; an unknown
        member, or no member id for a group with members: UNKNOWN_MEMBER_ID; another
        generation: ILLEGAL_GENERATION; COMPLETING_REBALANCE: REBALANCE_IN_PROGRESS.
        """
        error = self._group_status_error(group_id)
        group = self._groups.get(group_id)
        if error is None:
            error = self._commit_refusal(group, member_id, generation_id)
        if error is not None:
            callback({tp: error for tp in offsets})
            return
        if group is not None and group.state in (_STABLE, _PREPARING):
            self._complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
        self._offset_manager.put_offsets(group_id, offsets, callback)

    def _commit_refusal(
        self, group: GroupMetadata | None, member_id: str, generation_id: int
    ) -> Errors | None:
        if group is None:
            return None if generation_id < 0 else Errors.ILLEGAL_GENERATION
        if generation_id < 0 and group.is_(_EMPTY):
            return None
        if not group.has(member_id):
            return Errors.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        if group.is_(_COMPLETING):
            return Errors.REBALANCE_IN_PROGRESS
        return None

    def handle_fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> OffsetFetchResult:
        """The group's committed offsets, whatever its membership (see
        :meth:`OffsetManager.get_offsets <coordinator.offset_manager.OffsetManager.get_offsets>`);
        COORDINATOR_NOT_AVAILABLE after :meth:`shutdown`."""
        if not self._active:
            return OffsetFetchResult(Errors.COORDINATOR_NOT_AVAILABLE, {})
        return self._offset_manager.get_offsets(group_id, partitions)

    # -- leadership of offsets partitions ---------------------------------------------------

    def on_election(self, partition: int) -> None:
        """This broker leads offsets ``partition``: load its offsets and groups (the loaded
        groups' members start new sessions). A group already held here is kept as it is."""
        self._offset_manager.on_election(partition, self._on_groups_loaded)

    def _on_groups_loaded(self, values: dict[str, GroupMetadataValue]) -> None:
        for group_id, value in values.items():
            if group_id in self._groups:
                continue
            group = self._groups[group_id] = _loaded_group(group_id, value, self._clock)
            for member in group.members:
                self._complete_and_schedule_next_heartbeat_expiration(group, member)

    def on_resignation(self, partition: int) -> None:
        """This broker no longer leads offsets ``partition``: its groups become DEAD, their
        parked requests are answered NOT_COORDINATOR, their sessions end."""
        self._offset_manager.on_resignation(partition)
        for group_id in [
            g for g in self._groups if self._offset_manager.partition_for(g) == partition
        ]:
            self._unload(self._groups.pop(group_id))

    def _unload(self, group: GroupMetadata) -> None:
        previous = group.state
        group.transition_to(_DEAD)
        for member in group.members:
            if previous is _PREPARING:
                group.invoke_join_callback(
                    member, JoinGroupResult(member.member_id, Errors.NOT_COORDINATOR)
                )
            group.invoke_sync_callback(member, SyncGroupResult(Errors.NOT_COORDINATOR))
            self.heartbeat_purgatory.check_and_complete((group.group_id, member.member_id))
        self.rebalance_purgatory.check_and_complete(join_key(group.group_id))
        self._remove_sync_expiration(group)

    # -- rebalancing ------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        """Enter PREPARING_REBALANCE: parked SyncGroups are answered REBALANCE_IN_PROGRESS and
        the join phase waits in the Rebalance purgatory."""
        if group.is_(_COMPLETING):
            self._reset_and_propagate_assignment_error(group, Errors.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        delayed: DelayedJoin
        if group.is_(_EMPTY):
            delay = self.config.group_initial_rebalance_delay_ms
            delayed = InitialDelayedJoin(
                self,
                self.rebalance_purgatory,
                group,
                delay,
                delay,
                max(group.rebalance_timeout_ms - delay, 0),
            )
        else:
            delayed = DelayedJoin(self, group, group.rebalance_timeout_ms)
        group.transition_to(_PREPARING)
        self.rebalance_purgatory.try_complete_else_watch(delayed, [join_key(group.group_id)])

    def try_complete_join(self, group: GroupMetadata) -> bool:
        """Whether the join phase is over: every member rejoined (or the group is DEAD)."""
        return group.is_(_DEAD) or group.has_all_members_joined

    def on_complete_join(self, group: GroupMetadata) -> None:
        """End the join phase: drop the members that did not rejoin and start the next
        generation (EMPTY without members, stored; else every parked JoinGroup is answered and
        the sync phase begins)."""
        for member in group.not_yet_rejoined_members:
            self._remove_member(group, member)
            self.heartbeat_purgatory.check_and_complete((group.group_id, member.member_id))
        if group.is_(_DEAD):
            return
        group.init_next_generation()
        if group.is_(_EMPTY):
            self._offset_manager.store_group(
                group.group_id, _stored_value(group, {}), _warn_on_failed_store(group)
            )
            return
        for member in group.members:
            group.invoke_join_callback(member, self._join_result(group, member.member_id))
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
            member.is_new = False
            group.add_pending_sync_member(member.member_id)
        self.rebalance_purgatory.try_complete_else_watch(
            DelayedSync(self, group, group.generation_id, group.rebalance_timeout_ms),
            [sync_key(group.group_id)],
        )

    def try_complete_pending_sync(self, group: GroupMetadata, generation_id: int) -> bool:
        """Whether the sync phase of ``generation_id`` is over: every member synced, or the
        group moved to another generation or state."""
        if generation_id != group.generation_id or group.state not in (_COMPLETING, _STABLE):
            return True
        return not group.pending_sync_members

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None:
        """The sync phase timed out: remove the members that never sent SyncGroup and
        rebalance."""
        if generation_id != group.generation_id or group.state not in (_COMPLETING, _STABLE):
            return
        pending = group.pending_sync_members
        if not pending:
            return
        for member_id in pending:
            self._remove_member(group, group.get(member_id))
            self.heartbeat_purgatory.check_and_complete((group.group_id, member_id))
        self._prepare_rebalance(group)

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.clear_pending_sync_members()
        self.rebalance_purgatory.check_and_complete(sync_key(group.group_id))

    # -- members ----------------------------------------------------------------------------

    def _remove_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        """Remove a member, answering its parked requests UNKNOWN_MEMBER_ID."""
        group.invoke_join_callback(
            member, JoinGroupResult(UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID)
        )
        group.invoke_sync_callback(member, SyncGroupResult(Errors.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._remove_member(group, member)
        if group.state in (_STABLE, _COMPLETING):
            self._maybe_prepare_rebalance(group)
        elif group.is_(_PREPARING):
            self.rebalance_purgatory.check_and_complete(join_key(group.group_id))

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        if group.is_(_PREPARING):
            self.rebalance_purgatory.check_and_complete(join_key(group.group_id))

    def _complete_and_schedule_next_heartbeat_expiration(
        self, group: GroupMetadata, member: MemberMetadata
    ) -> None:
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int
    ) -> None:
        """End the member's current session period and watch a new one of ``timeout_ms``."""
        key = (group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        self.heartbeat_purgatory.check_and_complete(key)
        member.heartbeat_satisfied = False
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member.member_id, False, timeout_ms), [key]
        )

    def try_complete_heartbeat(
        self, group: GroupMetadata, member_id: str, is_pending: bool
    ) -> bool:
        """Whether a member's session period may end now: it showed it is alive, joined (a
        pending member), or is gone."""
        if group.is_(_DEAD):
            return True
        if is_pending:
            return group.has(member_id)
        return not group.has(member_id) or group.get(member_id).has_satisfied_heartbeat

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        """A session ended without a sign of life: remove the (pending) member."""
        if group.is_(_DEAD):
            return
        if is_pending:
            self._remove_pending_member_and_update_group(group, member_id)
        elif group.has(member_id) and not group.get(member_id).has_satisfied_heartbeat:
            self._remove_member_and_update_group(group, group.get(member_id))

    def _group_status_error(self, group_id: str) -> Errors | None:
        """Why this coordinator cannot serve ``group_id`` now, or None."""
        if not group_id:
            return Errors.INVALID_GROUP_ID
        if not self._active:
            return Errors.COORDINATOR_NOT_AVAILABLE
        status = self._offset_manager.partition_status(self._offset_manager.partition_for(group_id))
        if status is OffsetsPartitionStatus.LOADING:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        if status is OffsetsPartitionStatus.NOT_OWNED:
            return Errors.NOT_COORDINATOR
        return None


def _stored_value(group: GroupMetadata, assignment: Mapping[str, bytes]) -> GroupMetadataValue:
    """What :meth:`OffsetManager.store_group` writes for ``group`` with ``assignment``."""
    protocol = group.protocol_name
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation_id=group.generation_id,
        protocol_name=protocol,
        leader_id=group.leader_id,
        state_timestamp=group.state_timestamp,
        members=tuple(
            GroupMemberValue(
                m.member_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(protocol) if protocol is not None else b"",
                assignment[m.member_id],
            )
            for m in group.members
        ),
    )


def _loaded_group(
    group_id: str, value: GroupMetadataValue, clock: Callable[[], int]
) -> GroupMetadata:
    """A group rebuilt from its stored value: STABLE with its members, or EMPTY."""
    group = GroupMetadata(group_id, clock, _STABLE if value.members else _EMPTY)
    group.generation_id = value.generation_id
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol_name
    group.state_timestamp = value.state_timestamp
    for stored in value.members:
        member = MemberMetadata(
            stored.member_id,
            stored.client_id,
            stored.client_host,
            stored.rebalance_timeout_ms,
            stored.session_timeout_ms,
            value.protocol_type,
            ((value.protocol_name or "", stored.subscription),),
            stored.assignment,
        )
        group.add(member)
    group.leader_id = value.leader_id
    return group


def _warn_on_failed_store(group: GroupMetadata) -> Callable[[Errors], None]:
    """The callback of an EMPTY group's store: a failure only leaves the previous generation
    in the log, which has no members to lose (Kafka only warns too)."""

    def warn(error: Errors) -> None:
        if error is not Errors.NONE:
            _logger.warning(
                "failed to store the empty generation %d of group %s: %s",
                group.generation_id,
                group.group_id,
                error.name,
            )

    return warn

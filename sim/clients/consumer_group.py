"""Group membership: a subscribed consumer as a member of its group (Kafka 3.9's classic
``ConsumerCoordinator`` / ``AbstractCoordinator``, eager rebalancing).

Theory of operation. A member is in one :class:`MemberState` (Kafka's ``MemberState``) and
moves along the edges of :data:`TRANSITIONS`:

* **Join** (UNJOINED -> PREPARING_REBALANCE): find the group's coordinator in the metadata
  view (a FindCoordinator answer; missing: refresh and try again) and send JoinGroup with the
  subscription as the metadata of protocol ``"range"``, ``session_timeout_ms`` and
  ``max_poll_interval_ms`` as the rebalance timeout, in version 4 or later: a new member is
  answered MEMBER_ID_REQUIRED with its member id, and joins again with it at once. The client
  waits for the answer up to the rebalance timeout plus 5 s (Kafka's lapse), as the
  coordinator holds it until every member has rejoined.
* **Sync** (PREPARING_REBALANCE -> COMPLETING_REBALANCE): the JoinGroup answer gives the
  generation, the member id and the leader; the leader (alone given every member's
  subscription) computes the range assignment (:mod:`sim.clients.range_assignor`) and sends
  it in SyncGroup; the others send an empty SyncGroup.
* **Stable** (COMPLETING_REBALANCE -> STABLE): the SyncGroup answer carries the member's
  partitions, handed to ``on_assigned``; from then on a heartbeat every
  ``heartbeat_interval_ms`` (one in flight at a time) keeps the session alive.
* **Rebalance** (STABLE -> UNJOINED): a heartbeat or a commit answered REBALANCE_IN_PROGRESS
  (another member joined or left, or one's session expired), ILLEGAL_GENERATION (the
  generation is gone: forget it) or UNKNOWN_MEMBER_ID (so is the member: forget the id too).
  Heartbeats stop; ``prepare_revoke(then)`` lets the consumer do what Kafka's
  ``onJoinPrepare`` does (in ``poll()``: commit the consumed positions if it auto-commits,
  revoke every partition) and then calls ``then`` to join again.
* A JoinGroup or SyncGroup that fails goes back to UNJOINED and joins again: after a metadata
  refresh for coordinator errors, at once for REBALANCE_IN_PROGRESS (the group moved on),
  after ``retry_backoff_ms`` otherwise (the client timeout included); UNKNOWN_MEMBER_ID
  and ILLEGAL_GENERATION forget the member id and the generation as above.

Commits carry :attr:`GroupMembership.generation` (generation id and member id; -1 and ``""``
outside a generation) and report their errors to :meth:`GroupMembership.commit_failed`.

Not modelled: static membership, the cooperative protocol, a heartbeat thread that keeps
beating during COMPLETING_REBALANCE, max.poll.interval.ms enforced on the client (it is only
the rebalance timeout here), and the member leaving on a client-side session timeout.
:meth:`GroupMembership.close` stops everything; :meth:`GroupMembership.leave` then sends
LeaveGroup (a graceful close), without waiting for the answer.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Final

from apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse
from apis.leave_group import LeaveGroupRequest
from apis.sync_group import SyncGroupRequest, SyncGroupResponse
from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_requests import COORDINATOR_ERRORS, ConsumerRequests
from sim.clients.errors import ClientStateError
from sim.clients.network import MetadataView
from sim.clients.range_assignor import (
    RANGE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from sim.core.engine import Repeating, Scheduler, every

__all__ = ["REJOIN_ERRORS", "TRANSITIONS", "GroupMembership", "MemberEvent", "MemberState"]

_US_PER_MS: Final = 1000
_JOIN_TIMEOUT_LAPSE_MS: Final = 5000  # Kafka's AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE
NO_GENERATION: Final = -1

REJOIN_ERRORS: Final = frozenset(
    {Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID}
)
"""Errors of a heartbeat or a commit after which a member rejoins its group."""


class MemberState(enum.Enum):
    """Where a member is in the group's rebalance protocol (Kafka's ``MemberState``)."""

    UNJOINED = "unjoined"
    """In no generation: about to join, revoking its partitions first, or backing off."""
    PREPARING_REBALANCE = "preparing rebalance"
    """JoinGroup sent; the coordinator answers when the group's members have (re)joined."""
    COMPLETING_REBALANCE = "completing rebalance"
    """In a generation, SyncGroup sent; waiting for the assignment."""
    STABLE = "stable"
    """Assigned; heartbeating."""


class MemberEvent(enum.Enum):
    """What moves a member from one :class:`MemberState` to the next."""

    JOIN = "JoinGroup sent"
    JOINED = "JoinGroup answered with a generation"
    SYNCED = "SyncGroup answered with the assignment"
    RESET = "a JoinGroup or SyncGroup failed, or a rebalance began"


_S = MemberState
_E = MemberEvent

TRANSITIONS: Final[Mapping[tuple[MemberState, MemberEvent], MemberState]] = {
    (_S.UNJOINED, _E.JOIN): _S.PREPARING_REBALANCE,
    (_S.PREPARING_REBALANCE, _E.JOINED): _S.COMPLETING_REBALANCE,
    (_S.COMPLETING_REBALANCE, _E.SYNCED): _S.STABLE,
    **{
        (state, _E.RESET): _S.UNJOINED
        for state in (_S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.STABLE)
    },
}
"""``(state, event) -> next state``; every pair not in it is a bug (ClientStateError)."""


class GroupMembership:
    """One consumer's membership of its group (see the module doc)."""

    __slots__ = (
        "_closed",
        "_config",
        "_generation",
        "_group_id",
        "_heartbeat_in_flight",
        "_heartbeats",
        "_member_id",
        "_metadata",
        "_on_assigned",
        "_prepare_revoke",
        "_requests",
        "_scheduler",
        "_state",
        "_subscription",
        "rebalances",
    )

    def __init__(
        self,
        scheduler: Scheduler,
        config: ConsumerConfig,
        metadata: MetadataView,
        requests: ConsumerRequests,
        *,
        topics: tuple[str, ...],
        prepare_revoke: Callable[[Callable[[], None]], None],
        on_assigned: Callable[[tuple[TopicPartition, ...]], None],
    ) -> None:
        if config.group_id is None:
            raise ClientStateError("group membership needs a group_id")
        self._scheduler = scheduler
        self._config = config
        self._group_id = config.group_id
        self._metadata = metadata
        self._requests = requests
        self._subscription = encode_subscription(topics)
        self._prepare_revoke = prepare_revoke
        self._on_assigned = on_assigned
        self._state = MemberState.UNJOINED
        self._generation = NO_GENERATION
        self._member_id = ""
        self._heartbeats: Repeating | None = None
        self._heartbeat_in_flight = False
        self._closed = False
        self.rebalances = 0
        """Rebalances this member went through after its first assignment."""

    @property
    def state(self) -> MemberState:
        return self._state

    @property
    def generation(self) -> tuple[int, str]:
        """(generation id, member id) a commit carries."""
        return self._generation, self._member_id

    def start(self) -> None:
        """Join the group."""
        self._join()

    def commit_failed(self, error: Errors) -> None:
        """A commit was answered ``error``: rejoin if it says the member must (see the module
        doc)."""
        if error in REJOIN_ERRORS:
            self._rebalance(error)

    def close(self) -> None:
        """Stop heartbeating and rejoining (the consumer is closing or has stopped)."""
        self._closed = True
        self._stop_heartbeats()

    def leave(self) -> None:
        """Send LeaveGroup if this member has an id (the answer is not waited for)."""
        coordinator = self._metadata.coordinator_for(self._group_id)
        if self._member_id and coordinator is not None:
            request = LeaveGroupRequest(self._group_id, [self._member_id])
            self._requests.send(coordinator, request, _ignore)

    # -- the protocol -------------------------------------------------------------------------

    def _transition(self, event: MemberEvent) -> None:
        try:
            self._state = TRANSITIONS[self._state, event]
        except KeyError:
            raise ClientStateError(
                f"group member cannot handle {event.name} in state {self._state.name}"
            ) from None

    def _join(self) -> None:
        if self._closed:
            return
        coordinator = self._metadata.coordinator_for(self._group_id)
        if coordinator is None:
            self._requests.after_refresh(self._join)
            return
        self._transition(MemberEvent.JOIN)
        config = self._config
        request = JoinGroupRequest(
            self._group_id,
            config.session_timeout_ms,
            [JoinGroupRequestProtocol(RANGE, self._subscription)],
            member_id=self._member_id,
            rebalance_timeout_ms=config.max_poll_interval_ms,
        )
        timeout_ms = max(
            config.request_timeout_ms, config.max_poll_interval_ms + _JOIN_TIMEOUT_LAPSE_MS
        )
        self._requests.send(coordinator, request, self._joined, timeout_ms)

    def _joined(self, response: JoinGroupResponse | None) -> None:
        if self._closed:
            return
        if response is None or response.error != Errors.NONE:
            error = Errors.REQUEST_TIMED_OUT if response is None else response.error
            if error == Errors.MEMBER_ID_REQUIRED:
                assert response is not None
                self._member_id = response.member_id
                self._transition(MemberEvent.RESET)
                self._join()
            else:
                self._failed(error)
            return
        self._generation = response.generation_id
        self._member_id = response.member_id
        self._transition(MemberEvent.JOINED)
        assignments: dict[str, bytes] = {}
        if response.leader == response.member_id:
            subscriptions = {m.member_id: decode_subscription(m.metadata) for m in response.members}
            assigned = range_assign(subscriptions, self._metadata.partition_count)
            assignments = {member: encode_assignment(tps) for member, tps in assigned.items()}
        coordinator = self._metadata.coordinator_for(self._group_id)
        if coordinator is None:
            self._failed(Errors.COORDINATOR_NOT_AVAILABLE)
            return
        request = SyncGroupRequest(
            self._group_id, self._generation, self._member_id, assignments, "consumer", RANGE
        )
        self._requests.send(coordinator, request, self._synced)

    def _synced(self, response: SyncGroupResponse | None) -> None:
        if self._closed:
            return
        if response is None or response.error != Errors.NONE:
            self._failed(Errors.REQUEST_TIMED_OUT if response is None else response.error)
            return
        self._transition(MemberEvent.SYNCED)
        interval_us = self._config.heartbeat_interval_ms * _US_PER_MS
        self._heartbeats = every(self._scheduler, interval_us, self._heartbeat)
        self._on_assigned(decode_assignment(response.assignment))

    def _failed(self, error: Errors) -> None:
        """A JoinGroup or SyncGroup failed with ``error``: join again (see the module doc)."""
        self._forget(error)
        self._transition(MemberEvent.RESET)
        if error in COORDINATOR_ERRORS:
            self._requests.after_refresh(self._join)
        elif error == Errors.REBALANCE_IN_PROGRESS:
            self._join()
        else:
            self._requests.later(self._join)

    def _forget(self, error: Errors) -> None:
        """ILLEGAL_GENERATION: the generation is gone; UNKNOWN_MEMBER_ID: the member too."""
        if error in (Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID):
            self._generation = NO_GENERATION
        if error == Errors.UNKNOWN_MEMBER_ID:
            self._member_id = ""

    def _heartbeat(self) -> None:
        if self._heartbeat_in_flight or self._closed:
            return
        coordinator = self._metadata.coordinator_for(self._group_id)
        if coordinator is None:
            self._requests.after_refresh(_nothing)
            return
        self._heartbeat_in_flight = True
        generation = self._generation
        request = HeartbeatRequest(self._group_id, generation, self._member_id)

        def answered(response: HeartbeatResponse | None) -> None:
            self._heartbeat_in_flight = False
            if response is None or self._generation != generation:
                return  # the next beat tries again; or a stale answer
            if response.error in REJOIN_ERRORS:
                self._rebalance(response.error)
            elif response.error in COORDINATOR_ERRORS:
                self._requests.after_refresh(_nothing)

        self._requests.send(coordinator, request, answered)

    def _rebalance(self, error: Errors) -> None:
        """A STABLE member learnt (``error``) that it must rejoin: revoke, then join."""
        if self._state is not MemberState.STABLE or self._closed:
            return  # a join is under way already, or the consumer is closing
        self.rebalances += 1
        self._forget(error)
        self._transition(MemberEvent.RESET)
        self._stop_heartbeats()
        self._prepare_revoke(self._join)

    def _stop_heartbeats(self) -> None:
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            self._heartbeats = None


def _nothing() -> None:
    """After a metadata refresh: nothing more (the next heartbeat uses the new view)."""


def _ignore(_response: object) -> None:
    """LeaveGroup's answer: not waited for."""

"""DelayedHeartbeat: a member's session, as an operation of the Heartbeat purgatory.

Each member (and each pending member) of a group has one delayed heartbeat, watched under
the key ``(group id, member id)`` with the member's session timeout. Whatever shows the
member is alive (a heartbeat, its JoinGroup answered, a SyncGroup, an offset commit) marks it
satisfied, completes the current operation with ``check_and_complete`` and watches a fresh one
(:meth:`GroupCoordinator._complete_and_schedule_next_expiration
<coordinator.group_coordinator.GroupCoordinator>`). An operation that expires finds the
member still unsatisfied: the member's session is over, the coordinator removes it and the
group rebalances. A pending member's operation completes as soon as it joins, or removes the
pending id when it expires.

The operation holds no state of its own besides whom it watches: the decisions are the
coordinator's (Kafka's ``tryCompleteHeartbeat`` and ``onExpireHeartbeat``), reached through
the small :class:`HeartbeatCoordinator` protocol so that this module does not import the
coordinator's.
"""

from __future__ import annotations

from typing import Protocol

from coordinator.group_metadata import GroupMetadata
from purgatory import DelayedOperation

__all__ = ["DelayedHeartbeat", "HeartbeatCoordinator"]


class HeartbeatCoordinator(Protocol):
    """What a delayed heartbeat needs of the group coordinator."""

    def try_complete_heartbeat(
        self, group: GroupMetadata, member_id: str, is_pending: bool
    ) -> bool: ...

    def on_expire_heartbeat(
        self, group: GroupMetadata, member_id: str, is_pending: bool
    ) -> None: ...


class DelayedHeartbeat(DelayedOperation):
    """The session of ``member_id`` in ``group`` (``is_pending``: a pending member's), for
    ``timeout_ms``."""

    __slots__ = ("coordinator", "group", "is_pending", "member_id")

    def __init__(
        self,
        coordinator: HeartbeatCoordinator,
        group: GroupMetadata,
        member_id: str,
        is_pending: bool,
        timeout_ms: int,
    ) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    def try_complete(self) -> bool:
        """Complete if the coordinator says the member has shown it is alive (or is gone)."""
        if self.coordinator.try_complete_heartbeat(self.group, self.member_id, self.is_pending):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        """Nothing: completion only ends this session period."""

    def on_expiration(self) -> None:
        """The session timed out: let the coordinator remove the member."""
        self.coordinator.on_expire_heartbeat(self.group, self.member_id, self.is_pending)

"""The Rebalance purgatory's operations: DelayedJoin, InitialDelayedJoin and DelayedSync.

A rebalance has two waits, each one operation per group in the Rebalance purgatory:

* **Join** (key ``("join", group id)``): while the group is PREPARING_REBALANCE, a
  :class:`DelayedJoin` waits until every known member has sent JoinGroup (and no member id is
  pending); each JoinGroup, LeaveGroup or member removal checks it. At the group's rebalance
  timeout (the longest of its members') it completes anyway. Completing, it drops the members
  that did not rejoin and starts the next generation (the coordinator's ``on_complete_join``).
* **Initial join**: an EMPTY group's first rebalance is an :class:`InitialDelayedJoin`, which
  never completes early. It waits ``group.initial.rebalance.delay.ms``; if members joined
  meanwhile and time is left within the rebalance timeout it watches a new one for another
  delay (at most the time left), else it completes like a DelayedJoin. A group of consumers
  started together then rebalances once instead of once per consumer.
* **Sync** (key ``("sync", group id)``): after a generation starts, a :class:`DelayedSync`
  waits for a SyncGroup from every member, up to the rebalance timeout. It completes when all
  have synced or the group has moved on (another generation, or a state without a pending
  sync); at expiry the members that never sent SyncGroup are removed and the group
  rebalances (Kafka 3.x, KAFKA-13127).

The decisions are the coordinator's (Kafka's ``tryCompleteJoin``, ``onCompleteJoin``,
``tryCompletePendingSync`` and ``onExpirePendingSync``), reached through the small
:class:`RebalanceCoordinator` protocol so that this module does not import the coordinator's.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from coordinator.group_metadata import GroupMetadata
from purgatory import DelayedOperation, DelayedOperationPurgatory

__all__ = [
    "DelayedJoin",
    "DelayedRebalance",
    "DelayedSync",
    "InitialDelayedJoin",
    "RebalanceCoordinator",
    "join_key",
    "sync_key",
]


def join_key(group_id: str) -> Hashable:
    """The Rebalance purgatory key of ``group_id``'s join phase (Kafka's ``GroupJoinKey``)."""
    return ("join", group_id)


def sync_key(group_id: str) -> Hashable:
    """The Rebalance purgatory key of ``group_id``'s sync phase (Kafka's ``GroupSyncKey``)."""
    return ("sync", group_id)


class RebalanceCoordinator(Protocol):
    """What the rebalance operations need of the group coordinator."""

    def try_complete_join(self, group: GroupMetadata) -> bool: ...

    def on_complete_join(self, group: GroupMetadata) -> None: ...

    def try_complete_pending_sync(self, group: GroupMetadata, generation_id: int) -> bool: ...

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None: ...


class DelayedRebalance(DelayedOperation):
    """Base of the operations of the Rebalance purgatory: one group's wait, for
    ``timeout_ms``."""

    __slots__ = ("coordinator", "group")

    def __init__(
        self, coordinator: RebalanceCoordinator, group: GroupMetadata, timeout_ms: int
    ) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group


class DelayedJoin(DelayedRebalance):
    """The join phase of a rebalance (see the module docstring)."""

    __slots__ = ()

    def try_complete(self) -> bool:
        """Complete once every known member has rejoined."""
        if self.coordinator.try_complete_join(self.group):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        """Start the next generation with the members that rejoined."""
        self.coordinator.on_complete_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """The first rebalance of an EMPTY group: waits ``delay_ms``, then again (at most
    ``configured_delay_ms`` each time) while members keep joining and ``remaining_ms`` of the
    rebalance timeout is left; ``purgatory`` is where it watches its successor."""

    __slots__ = ("configured_delay_ms", "purgatory", "remaining_ms")

    def __init__(
        self,
        coordinator: RebalanceCoordinator,
        purgatory: DelayedOperationPurgatory[DelayedRebalance],
        group: GroupMetadata,
        configured_delay_ms: int,
        delay_ms: int,
        remaining_ms: int,
    ) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.purgatory = purgatory
        self.configured_delay_ms = configured_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        """Never early: the initial delay always runs out."""
        return False

    def on_complete(self) -> None:
        """Wait once more if members joined and time is left, else complete the join."""
        group = self.group
        if group.new_member_added and self.remaining_ms != 0:
            group.new_member_added = False
            delay = min(self.configured_delay_ms, self.remaining_ms)
            successor = InitialDelayedJoin(
                self.coordinator,
                self.purgatory,
                group,
                self.configured_delay_ms,
                delay,
                max(self.remaining_ms - self.timeout, 0),
            )
            self.purgatory.try_complete_else_watch(successor, [join_key(group.group_id)])
        else:
            super().on_complete()


class DelayedSync(DelayedRebalance):
    """The sync phase of generation ``generation_id`` (see the module docstring)."""

    __slots__ = ("generation_id",)

    def __init__(
        self,
        coordinator: RebalanceCoordinator,
        group: GroupMetadata,
        generation_id: int,
        timeout_ms: int,
    ) -> None:
        super().__init__(coordinator, group, timeout_ms)
        self.generation_id = generation_id

    def try_complete(self) -> bool:
        """Complete once every member synced or the group has moved on."""
        if self.coordinator.try_complete_pending_sync(self.group, self.generation_id):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        """Nothing: the members' SyncGroup requests are answered by the coordinator."""

    def on_expiration(self) -> None:
        """Remove the members that never sent SyncGroup and rebalance."""
        self.coordinator.on_expire_pending_sync(self.group, self.generation_id)

"""The leader's view of a follower replica: its log end offset and fetch/catch-up times."""

from __future__ import annotations

from replica.types import UNKNOWN_OFFSET, UNKNOWN_OFFSET_METADATA, LogOffsetMetadata


class Replica:
    """State a leader keeps for one follower (Kafka's ``Replica``/``ReplicaState``).

    ``log_end_offset_metadata`` is the follower's last fetch offset as a position in the
    leader's log (unknown until its first fetch to this leader). ``last_caught_up_time_ms``
    is the last time the follower was known to have reached the leader's log end offset; the
    follower is out of sync when that is more than replica.lag.time.max.ms ago (and it is not
    at the log end offset right now). Compared by identity.
    """

    # A plain class, not attrs: compiled, its fields are read and written natively (the
    # leader updates one per follower fetch and partition).
    __slots__ = (
        "broker_id",
        "last_caught_up_time_ms",
        "last_fetch_leader_log_end_offset",
        "last_fetch_time_ms",
        "log_end_offset_metadata",
        "log_start_offset",
    )

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.log_end_offset_metadata: LogOffsetMetadata = UNKNOWN_OFFSET_METADATA
        self.log_start_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
        self.last_fetch_time_ms = 0
        self.last_caught_up_time_ms = 0

    @property
    def log_end_offset(self) -> int:
        """The follower's log end offset (``UNKNOWN_OFFSET`` before its first fetch)."""
        return self.log_end_offset_metadata.message_offset

    def update_fetch_state(
        self,
        fetch_offset_metadata: LogOffsetMetadata,
        follower_start_offset: int,
        fetch_time_ms: int,
        leader_end_offset: int,
    ) -> None:
        """Record a fetch at ``fetch_time_ms`` from offset ``fetch_offset_metadata``.

        Caught up now if the fetch offset reached the leader's current log end offset; caught
        up as of the previous fetch if it reached the log end offset of that time.
        """
        fetch_offset = fetch_offset_metadata.message_offset
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_start_offset = follower_start_offset
        self.log_end_offset_metadata = fetch_offset_metadata
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms

    def record_idle_fetch(self, fetch_time_ms: int) -> None:
        """Record this follower's fetch at ``fetch_time_ms`` of a partition its fetch session
        skipped as idle (see :mod:`replica.session_partitions`): its last read of it, with
        the same fetch data, was at the leader's log end offset while it was in the ISR, and
        the log has not changed since. :meth:`update_fetch_state` would then find the fetch
        offset at the log end offset: the follower is caught up now, and its position stays
        as it is."""
        self.last_caught_up_time_ms = self.last_fetch_time_ms = fetch_time_ms

    def is_caught_up(
        self, leader_end_offset: int, now_ms: int, replica_lag_time_max_ms: int
    ) -> bool:
        """In sync: at the leader's log end offset, or caught up within the lag limit."""
        return (
            self.log_end_offset == leader_end_offset
            or now_ms - self.last_caught_up_time_ms <= replica_lag_time_max_ms
        )

    def reset_replica_state(
        self, now_ms: int, leader_end_offset: int, is_new_leader: bool, is_follower_in_sync: bool
    ) -> None:
        """Reset when the local broker becomes leader or the leader epoch changes (Kafka
        3.3+ ``Replica.resetReplicaState``).

        An in-sync follower counts as caught up now; one outside the ISR gets no grace (time
        0), so it cannot hold the high watermark back. A new leader forgets the positions. The
        same leader in a new epoch keeps them, and counts the leader's log end offset
        (``leader_end_offset``, where the epoch starts) as the one seen by the follower's last
        fetch, made now by an in-sync follower and at time 0 by one outside the ISR: that one
        earns no caught-up credit, to stay in or re-enter the ISR, until it fetches.
        """
        since = now_ms if is_follower_in_sync else 0
        self.last_caught_up_time_ms = since
        if is_new_leader:
            self.log_end_offset_metadata = UNKNOWN_OFFSET_METADATA
            self.log_start_offset = UNKNOWN_OFFSET
            self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_time_ms = 0
        else:
            self.last_fetch_leader_log_end_offset = leader_end_offset
            self.last_fetch_time_ms = since

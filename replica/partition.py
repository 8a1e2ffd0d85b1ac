"""Partition: one partition's replica on this broker, as leader, follower or stopped.

On the leader it keeps the ISR and the followers' positions (:class:`~replica.replica.Replica`)
and maintains the high watermark: the smallest log end offset over the ISR, which only moves
forward, and does not move at all while the ISR is smaller than min.insync.replicas (Kafka 3.7+,
KIP-966 / KAFKA-15583, whether or not eligible leader replicas are enabled): records a smaller
ISR holds are not committed. Everywhere it is used, min.insync.replicas is capped at the
replication factor (Kafka's ``effectiveMinIsr``). A follower joins the ISR when its log end
offset reaches the high watermark (and the start of the current leader epoch); it leaves when it
has not caught up with the leader's log end for replica.lag.time.max.ms
(:meth:`Partition.maybe_shrink_isr`). ISR changes take effect at once: the model has no
controller round trip (Kafka's AlterPartition), so the high watermark is the minimum over the
ISR only.

The leader also answers where a follower's last fetched leader epoch ends in the leader's log
(:meth:`Partition.diverging_epoch`, truncation on fetch) and which offset a ListOffsets
timestamp maps to (:meth:`Partition.fetch_offset_for_timestamp`).

Methods that a request can make fail raise :class:`~replica.exceptions.ApiError` with the
Kafka error code; the :class:`~replica.replica_manager.ReplicaManager` turns it into a
response. Methods report whether the high watermark moved; triggering delayed operations is
the ReplicaManager's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from replica.config import LOG_APPEND_TIME, BrokerConfig
from replica.errors import Errors
from replica.exceptions import ApiError
from replica.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from replica.log import Log
from replica.records import NO_TIMESTAMP, ProducerBatchInfo, Record, RecordBatch
from replica.replica import Replica
from replica.types import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    LOG_END_ISOLATION,
    NO_ERROR,
    EpochEndOffset,
    FetchDataInfo,
    FetchIsolation,
    IsolationLevel,
    ListOffsetsResult,
    LogAppendInfo,
    LogOffsetMetadata,
    OffsetForLeaderEpochResult,
    PartitionState,
    TopicPartition,
)

#: ``leader_id`` of a partition with no known leader (stopped, or a follower told "no leader").
NO_LEADER: Final = -1


class Partition:
    """The local replica of ``topic_partition`` on broker ``local_broker_id``."""

    def __init__(
        self, topic_partition: TopicPartition, local_broker_id: int, config: BrokerConfig
    ) -> None:
        self.topic_partition = topic_partition
        self.local_broker_id = local_broker_id
        self.config = config
        self.log = Log(topic_partition, config.log_segment_bytes, config.message_max_bytes)
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.assigned_replicas: tuple[int, ...] = ()
        #: min.insync.replicas capped at the replication factor (set with the assignment).
        self.effective_min_isr = config.min_insync_replicas
        self.isr: tuple[int, ...] = ()
        #: LEO when this broker became leader of the current epoch (None unless leader).
        self.leader_epoch_start_offset: int | None = None
        self._remote_replicas: dict[int, Replica] = {}
        self._log_append_time = config.log_message_timestamp_type == LOG_APPEND_TIME

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic_partition}, broker={self.local_broker_id}, "
            f"leader={self.leader_id}, epoch={self.leader_epoch}, isr={list(self.isr)}, "
            f"hw={self.log.high_watermark}, leo={self.log.log_end_offset})"
        )

    @property
    def is_leader(self) -> bool:
        """True if the local broker is the leader."""
        return self.leader_id == self.local_broker_id

    @property
    def remote_replicas(self) -> Mapping[int, Replica]:
        """On the leader: broker id -> follower state, for every other assigned replica."""
        return MappingProxyType(self._remote_replicas)

    def remote_replica(self, broker_id: int) -> Replica | None:
        """On the leader: the follower state of ``broker_id`` (None: not a remote assigned
        replica). The object stays the same until the log's change marker moves (leadership
        and assignment changes move it)."""
        return self._remote_replicas.get(broker_id)

    # -- state changes ----------------------------------------------------------------------

    def make_leader(self, state: PartitionState, now_ms: int) -> bool:
        """Become (or stay) leader with ``state``'s epoch, replicas and ISR.

        A new leader forgets its followers' positions (they are reported again by their next
        fetch); ISR members count as caught up now. A new leader, or a new epoch, starts at the
        log end offset: it is recorded in the log's leader-epoch cache, so the previous epochs
        end there. Returns True if this broker was not the leader before. The high watermark
        may move (if the ISR is just the leader).
        """
        is_new_leader = not self.is_leader
        self._update_assignment(state)
        self.isr = state.isr
        leader_end_offset = self.log.log_end_offset
        if is_new_leader or state.leader_epoch > self.leader_epoch:
            self.leader_epoch_start_offset = leader_end_offset
            self.log.maybe_assign_epoch_start_offset(state.leader_epoch, leader_end_offset)
        for replica in self._remote_replicas.values():
            replica.reset_replica_state(
                now_ms, leader_end_offset, is_new_leader, replica.broker_id in self.isr
            )
        self.leader_id = self.local_broker_id
        self.leader_epoch = state.leader_epoch
        self.log.mark_changed()
        self.maybe_increment_leader_hw()
        return is_new_leader

    def make_follower(self, state: PartitionState, _now_ms: int) -> bool:
        """Become a follower of ``state.leader`` (``NO_LEADER``: none) with its epoch.

        Returns True if the leader or the epoch changed (the follower must then restart
        fetching, from its log end offset). The log is not truncated here: the new leader tells
        the follower where their logs diverge in its first fetch response (see
        :meth:`diverging_epoch`). The ISR is kept as the controller sent it, for information
        only.
        """
        changed = state.leader != self.leader_id or state.leader_epoch > self.leader_epoch
        self._update_assignment(state)
        self._remote_replicas.clear()
        self.isr = state.isr
        self.leader_epoch_start_offset = None
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.log.mark_changed()
        return changed

    def stop(self) -> None:
        """Stop being leader or follower (StopReplica without delete); the log is kept."""
        self.leader_id = NO_LEADER
        self.leader_epoch_start_offset = None
        self._remote_replicas.clear()
        self.log.mark_changed()

    def _update_assignment(self, state: PartitionState) -> None:
        self.assigned_replicas = state.replicas
        self.effective_min_isr = min(self.config.min_insync_replicas, len(state.replicas))
        old = self._remote_replicas
        self._remote_replicas = {
            broker_id: old.get(broker_id) or Replica(broker_id)
            for broker_id in state.replicas
            if broker_id != self.local_broker_id
        }

    # -- leader: appends, follower positions, ISR, high watermark ----------------------------

    def append_records_to_leader(
        self,
        records: Sequence[Record],
        required_acks: int,
        now_ms: int,
        producer: ProducerBatchInfo | None = None,
    ) -> tuple[LogAppendInfo, bool]:
        """Append ``records`` as one batch (stamped by ``producer``, an idempotent producer,
        if given: see ``Log.append_as_leader``); return the append info and whether the high
        watermark moved.

        Raises:
            ApiError: NOT_LEADER_OR_FOLLOWER if not the leader; NOT_ENOUGH_REPLICAS if
                ``required_acks == -1`` and the ISR is smaller than min.insync.replicas
                (capped at the replication factor; checked before appending); the log's
                errors (INVALID_RECORD, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
                INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER).
        """
        if not self.is_leader:
            raise ApiError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"broker {self.local_broker_id} is not the leader of {self.topic_partition}",
            )
        if required_acks == -1 and len(self.isr) < self.effective_min_isr:
            raise ApiError(
                Errors.NOT_ENOUGH_REPLICAS,
                f"{self.topic_partition}: ISR {list(self.isr)} is smaller than the effective "
                f"min.insync.replicas {self.effective_min_isr}",
            )
        append_time = now_ms if self._log_append_time else NO_TIMESTAMP
        info = self.log.append_as_leader(records, self.leader_epoch, append_time, producer)
        return info, self.maybe_increment_leader_hw()

    def update_follower_fetch_state(
        self,
        replica_id: int,
        fetch_offset_metadata: LogOffsetMetadata,
        follower_start_offset: int,
        fetch_time_ms: int,
        leader_end_offset: int,
    ) -> bool:
        """Record follower ``replica_id``'s fetch; it may join the ISR. Returns True if the
        high watermark moved.

        Raises:
            ApiError: NOT_LEADER_OR_FOLLOWER if ``replica_id`` is not a remote assigned replica.
        """
        replica = self._remote_replicas.get(replica_id)
        if replica is None:
            raise ApiError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"{replica_id} is not an assigned replica of {self.topic_partition}",
            )
        previous_end_offset = replica.log_end_offset
        replica.update_fetch_state(
            fetch_offset_metadata, follower_start_offset, fetch_time_ms, leader_end_offset
        )
        self._maybe_expand_isr(replica)
        if replica.log_end_offset != previous_end_offset:
            return self.maybe_increment_leader_hw()
        return False

    def _maybe_expand_isr(self, replica: Replica) -> None:
        broker_id = replica.broker_id
        if broker_id in self.isr or self.leader_epoch_start_offset is None:
            return
        end_offset = replica.log_end_offset
        if end_offset >= self.log.high_watermark and end_offset >= self.leader_epoch_start_offset:
            self.isr = (*self.isr, broker_id)

    def maybe_shrink_isr(self, now_ms: int) -> bool:
        """Leader: drop ISR followers not caught up for replica.lag.time.max.ms (and not at the
        log end offset now). Returns True if the high watermark moved as a result."""
        if not self.is_leader:
            return False
        leader_end_offset = self.log.log_end_offset
        max_lag = self.config.replica_lag_time_max_ms
        remote = self._remote_replicas
        in_sync = tuple(
            broker_id
            for broker_id in self.isr
            if broker_id == self.local_broker_id
            or remote[broker_id].is_caught_up(leader_end_offset, now_ms, max_lag)
        )
        if len(in_sync) == len(self.isr):
            return False
        self.isr = in_sync
        return self.maybe_increment_leader_hw()

    def maybe_increment_leader_hw(self) -> bool:
        """Leader: move the high watermark up to the smallest log end offset over the ISR,
        unless the ISR is smaller than min.insync.replicas (capped at the replication factor).

        It never moves back. Returns True if it moved.
        """
        if not self.is_leader or len(self.isr) < self.effective_min_isr:
            return False
        new_high_watermark = self.log.log_end_offset_metadata
        remote = self._remote_replicas
        for broker_id in self.isr:
            if broker_id != self.local_broker_id:
                position = remote[broker_id].log_end_offset_metadata
                if position.message_offset < new_high_watermark.message_offset:
                    new_high_watermark = position
        return self.log.maybe_increment_high_watermark(new_high_watermark)

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, Errors]:
        """For a delayed produce: (done, error) for records ending before ``required_offset``.

        Done with NONE when the high watermark reached it and the ISR has at least
        min.insync.replicas members (capped at the replication factor), with
        NOT_ENOUGH_REPLICAS_AFTER_APPEND when it reached it with a smaller ISR (the ISR shrank
        after the high watermark passed the records: below min.insync.replicas the high
        watermark does not move); NOT_LEADER_OR_FOLLOWER (not done) if this broker is not the
        leader; (False, NONE) while waiting.
        """
        if not self.is_leader:
            return False, Errors.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark >= required_offset:
            if len(self.isr) >= self.effective_min_isr:
                return True, NO_ERROR
            return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, NO_ERROR

    # -- reads ------------------------------------------------------------------------------

    def _check_leader(self, current_leader_epoch: int | None, require_leader: bool = True) -> None:
        if current_leader_epoch is not None:
            if current_leader_epoch < self.leader_epoch:
                raise ApiError(
                    Errors.FENCED_LEADER_EPOCH,
                    f"{self.topic_partition}: epoch {current_leader_epoch} is older than the "
                    f"current leader epoch {self.leader_epoch}",
                )
            if current_leader_epoch > self.leader_epoch:
                raise ApiError(
                    Errors.UNKNOWN_LEADER_EPOCH,
                    f"{self.topic_partition}: epoch {current_leader_epoch} is newer than the "
                    f"current leader epoch {self.leader_epoch}",
                )
        if require_leader and self.leader_id != self.local_broker_id:  # one call less per read
            raise ApiError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"broker {self.local_broker_id} is not the leader of {self.topic_partition}",
            )

    def check_follower_fetch(self, replica_id: int, current_leader_epoch: int | None) -> None:
        """Leader: accept a fetch from follower ``replica_id`` before reading for it (Kafka
        3.3+ ``fetchRecords``: the leader and epoch checks, then ``followerReplicaOrThrow``).

        Raises:
            ApiError: the errors of :meth:`read_records`' leader and epoch checks; then, if
                ``replica_id`` is not a remote assigned replica, UNKNOWN_LEADER_EPOCH when
                the fetch names the current leader epoch (the leader may not know of a newly
                assigned replica yet: the follower retries), else NOT_LEADER_OR_FOLLOWER.
        """
        self._check_leader(current_leader_epoch)
        if replica_id not in self._remote_replicas:
            error = (
                Errors.NOT_LEADER_OR_FOLLOWER
                if current_leader_epoch is None
                else Errors.UNKNOWN_LEADER_EPOCH
            )
            raise ApiError(
                error,
                f"{replica_id} is not an assigned replica of {self.topic_partition} in leader "
                f"epoch {self.leader_epoch}",
            )

    def fetch_end_offset_metadata(
        self, current_leader_epoch: int | None, isolation: FetchIsolation
    ) -> LogOffsetMetadata | None:
        """Leader: how far a fetch with ``isolation`` may read (the LEO or the high
        watermark); None unless this broker is the leader in ``current_leader_epoch`` (None:
        any epoch), when a read fails with the error :meth:`read_records` raises.

        Every try of every delayed fetch asks this of each of its partitions, so unlike the
        reads it raises nothing (Kafka's ``fetchOffsetSnapshot`` throws the read's error).
        """
        if self.leader_id != self.local_broker_id or (
            current_leader_epoch is not None and current_leader_epoch != self.leader_epoch
        ):
            return None
        log = self.log
        if isolation is LOG_END_ISOLATION:
            return log.log_end_offset_metadata
        return log.high_watermark_metadata

    def diverging_epoch(
        self, current_leader_epoch: int | None, last_fetched_epoch: int, fetch_offset: int
    ) -> EpochEndOffset | None:
        """Leader: check a fetch that says its log ends at ``fetch_offset`` in leader epoch
        ``last_fetched_epoch`` (Kafka's fetch-time check, KIP-320 / KIP-595).

        Returns None if this log has that epoch and it reaches ``fetch_offset`` (the fetcher's
        log is a prefix of this one, as far as epochs tell). Otherwise returns this log's
        largest epoch <= ``last_fetched_epoch`` and where it ends here: the fetcher must
        truncate there. O(1) when ``last_fetched_epoch`` is the latest epoch, else
        O(log epochs). A leader's latest epoch is always its current one (assigned when it
        was elected), so a fetch in the current epoch up to the log end never diverges.

        Raises:
            ApiError: FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER (see
                :meth:`read_records`); OFFSET_OUT_OF_RANGE if this log cannot place the epoch
                at all (newer than any epoch here, or an empty epoch cache), as Kafka answers.
        """
        self._check_leader(current_leader_epoch)
        log = self.log
        epoch, end_offset = log.end_offset_for_epoch(last_fetched_epoch)
        if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_EPOCH_OFFSET:
            raise ApiError(
                Errors.OFFSET_OUT_OF_RANGE,
                f"{self.topic_partition}: cannot find the end offset of last fetched epoch "
                f"{last_fetched_epoch} (epochs here: {log.leader_epoch_cache.entries})",
            )
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return EpochEndOffset(epoch, end_offset)
        return None

    def last_offset_for_leader_epoch(
        self, current_leader_epoch: int | None, leader_epoch: int, fetch_only_from_leader: bool
    ) -> OffsetForLeaderEpochResult:
        """Where ``leader_epoch`` ends in this log (Kafka's ``lastOffsetForLeaderEpoch``): the
        largest epoch <= it that the log knows and that epoch's end offset (the log end offset
        for the latest epoch), or -1 and -1 when the log cannot place it (a newer epoch than
        any here, no epochs). A consumer asks after a leader change, to check that the
        records it read are still in the log (KIP-320).

        Raises:
            ApiError: FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH (``current_leader_epoch``
                older / newer than this replica's), NOT_LEADER_OR_FOLLOWER (not the leader,
                when ``fetch_only_from_leader``).
        """
        self._check_leader(current_leader_epoch, fetch_only_from_leader)
        epoch, end_offset = self.log.end_offset_for_epoch(leader_epoch)
        if end_offset == UNDEFINED_EPOCH_OFFSET:
            return OffsetForLeaderEpochResult(Errors.NONE)
        return OffsetForLeaderEpochResult(Errors.NONE, epoch, end_offset)

    def fetch_offset_for_timestamp(
        self,
        timestamp: int,
        isolation: IsolationLevel | None,
        current_leader_epoch: int | None,
    ) -> ListOffsetsResult:
        """Leader: answer a ListOffsets lookup (Kafka's ``Partition.fetchOffsetForTimestamp``).

        ``isolation`` is the consumer's level, or None for a replica asking; it sets the last
        offset a lookup may return: the high watermark for READ_UNCOMMITTED and for
        READ_COMMITTED (the last stable offset, which is the high watermark here: there are no
        transactions), the log end offset for None.

        * LATEST (-1): that offset, with the current leader epoch;
        * EARLIEST (-2): the log start offset, with the epoch of the earliest leader-epoch
          entry if it starts there (else None);
        * a timestamp >= 0: the first record with a timestamp >= it, if its offset is below the
          last offset allowed; else offset -1 and timestamp -1 (``UNKNOWN_OFFSET`` /
          ``NO_TIMESTAMP``).

        Raises:
            ApiError: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (``current_leader_epoch``
                older / newer than the leader's), NOT_LEADER_OR_FOLLOWER, INVALID_REQUEST (a
                negative timestamp other than -1 and -2), OFFSET_NOT_AVAILABLE (a consumer
                asking LATEST, or a timestamp found at or past the high watermark, while the
                high watermark of a new leader is still below the start offset of its epoch:
                the records before that may not all be committed yet; KIP-207).
        """
        self._check_leader(current_leader_epoch)
        log = self.log
        last_fetchable_offset = log.log_end_offset if isolation is None else log.high_watermark
        epoch_start = self.leader_epoch_start_offset
        offsets_not_available = (
            isolation is not None and epoch_start is not None and epoch_start > log.high_watermark
        )
        if timestamp == LATEST_TIMESTAMP:
            if offsets_not_available:
                raise self._offset_not_available()
            return ListOffsetsResult(
                Errors.NONE, NO_TIMESTAMP, last_fetchable_offset, self.leader_epoch
            )
        if timestamp == EARLIEST_TIMESTAMP:
            start = log.log_start_offset
            earliest = log.leader_epoch_cache.earliest_entry
            epoch = earliest[0] if earliest is not None and earliest[1] <= start else None
            return ListOffsetsResult(Errors.NONE, NO_TIMESTAMP, start, epoch)
        if timestamp < 0:
            raise ApiError(
                Errors.INVALID_REQUEST,
                f"{self.topic_partition}: timestamp {timestamp} is neither >= 0 nor "
                f"LATEST ({LATEST_TIMESTAMP}) or EARLIEST ({EARLIEST_TIMESTAMP})",
            )
        found = log.find_offset_by_timestamp(timestamp)
        if found is not None and found[1] < last_fetchable_offset:
            found_timestamp, offset, batch_epoch = found
            return ListOffsetsResult(
                Errors.NONE, found_timestamp, offset, batch_epoch if batch_epoch >= 0 else None
            )
        if offsets_not_available:
            raise self._offset_not_available()
        return ListOffsetsResult(Errors.NONE)

    def _offset_not_available(self) -> ApiError:
        return ApiError(
            Errors.OFFSET_NOT_AVAILABLE,
            f"{self.topic_partition}: the high watermark {self.log.high_watermark} of leader "
            f"epoch {self.leader_epoch} is still below the epoch's start offset "
            f"{self.leader_epoch_start_offset}",
        )

    def read_records(
        self,
        fetch_offset: int,
        current_leader_epoch: int | None,
        max_bytes: int,
        isolation: FetchIsolation,
        min_one_message: bool,
    ) -> FetchDataInfo:
        """Leader: read from the local log (see :meth:`replica.log.Log.read`).

        Raises:
            ApiError: FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER,
                OFFSET_OUT_OF_RANGE.
        """
        self._check_leader(current_leader_epoch)
        return self.log.read(fetch_offset, max_bytes, isolation, min_one_message)

    # -- follower ---------------------------------------------------------------------------

    def append_records_to_follower(self, batch: RecordBatch) -> None:
        """Follower: append a batch fetched from the leader (see ``Log.append_as_follower``)."""
        self.log.append_as_follower(batch)

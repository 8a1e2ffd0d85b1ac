"""An in-memory, append-only partition log of record batches, split into segments.

The log assigns offsets (as leader) or takes them from the leader's batches (as follower),
rolls a new segment when the next batch would make the active one larger than
``log.segment.bytes``, reads whole batches by offset up to a byte limit, and truncates whole
batches from the end. Positions are :class:`~replica.types.LogOffsetMetadata`: the offset, the
segment's base offset, and the byte position of the batch holding the offset in that segment.

Every offset lookup is a binary search (over segment base offsets, then over the segment's
batch base offsets): appends are O(1) amortised, reads O(log n + batches returned). Batches are
immutable and shared, never copied.

The log also keeps the replica's high watermark (Kafka keeps it in ``UnifiedLog`` too): the
leader only moves it forward (:meth:`Log.maybe_increment_high_watermark`), a follower sets it
from the leader's (:meth:`Log.update_high_watermark`), and truncation clamps it. And it keeps
the replica's :class:`~replica.leader_epoch_cache.LeaderEpochCache` (which leader epoch wrote
which offsets), derived from the batches' ``partition_leader_epoch`` as they are appended and
cut back with the log.

Retention (Kafka's ``UnifiedLog.deleteOldSegments``): :meth:`Log.delete_old_segments` deletes
whole segments from the front -- those whose largest timestamp is older than ``retention.ms``,
those the log can lose while staying at or above ``retention.bytes``, and those wholly below
the log start offset -- but only segments wholly below the high watermark, so nothing a
consumer could still be owed goes. The log start offset moves to the first remaining offset;
reads below it get OFFSET_OUT_OF_RANGE. Deleting the active segment rolls an empty one at the
log end first. :meth:`Log.maybe_increment_log_start_offset` moves the start without deleting
(a follower follows its leader's start; the next retention pass frees the segments).

Idempotent producers: the log keeps a :class:`~replica.producer_state.ProducerStateManager`,
updated by every batch appended (as leader or follower) and cut back with the log, so that a
leader appends a producer's retried batch once (:meth:`Log.append_as_leader` answers a
duplicate with the offsets it got the first time) and refuses one out of sequence.

Timestamp lookups (:meth:`Log.find_offset_by_timestamp`, for ListOffsets) walk the segments'
largest timestamps and binary-search a per-segment running maximum of batch timestamps, built
lazily on the first lookup after appends, so appends pay nothing for it.

Change marker: :attr:`Log.change_marker` takes a new value at every change of what a read or
a divergence check of this log depends on: the log end offset (appends, truncation, a reset),
the high watermark, the log start offset and the leader-epoch cache; the partition adds its
leadership changes (:meth:`Log.mark_changed`). Two reads with the same arguments at the same
marker return the same result, so a fetch session can skip a partition whose marker has not
moved since its last, empty, read (see
:meth:`replica.replica_manager.ReplicaManager.read_from_local_log`).
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from typing import Final

from replica.errors import Errors
from replica.exceptions import ApiError, ReplicaArgumentError, UnexpectedAppendOffsetError
from replica.leader_epoch_cache import LeaderEpochCache
from replica.producer_state import BatchMetadata, ProducerStateManager
from replica.records import (
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    ProducerBatchInfo,
    Record,
    RecordBatch,
    RecordColumns,
    batch_size_in_bytes,
)
from replica.types import (
    LOG_END_ISOLATION,
    FetchDataInfo,
    FetchIsolation,
    LogAppendInfo,
    LogOffsetMetadata,
    TopicPartition,
)

_CHANGE_MARKERS: Final = itertools.count(1)
"""Where every log's change markers come from: each change gets a value no other change of any
log had, so equal markers mean the same log in the same state even across a deleted and
recreated partition (markers are only compared, never output: determinism is unaffected)."""


class LogSegment:
    """Consecutive batches starting at ``base_offset``, with their byte positions."""

    __slots__ = (
        "_base_offsets",
        "_max_timestamps_so_far",
        "_positions",
        "base_offset",
        "batches",
        "size",
    )

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self.batches: list[RecordBatch] = []
        self._base_offsets: list[int] = []
        self._positions: list[int] = []
        #: [i] = the largest max_timestamp of batches[0..i]; filled lazily by timestamp lookups.
        self._max_timestamps_so_far: list[int] = []
        self.size = 0

    def __repr__(self) -> str:
        return (
            f"LogSegment(base_offset={self.base_offset}, batches={len(self.batches)}, "
            f"size={self.size})"
        )

    @property
    def next_offset(self) -> int:
        """The offset after the segment's last batch (its base offset when empty)."""
        return self.batches[-1].next_offset if self.batches else self.base_offset

    def append(self, batch: RecordBatch) -> None:
        self._positions.append(self.size)
        self._base_offsets.append(batch.base_offset)
        self.batches.append(batch)
        self.size += batch.size_in_bytes

    def _index_of(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (offsets are contiguous), or -1."""
        index = bisect_right(self._base_offsets, offset) - 1
        if index < 0 or self.batches[index].last_offset < offset:
            return -1
        return index

    def position_of(self, offset: int) -> int | None:
        """Byte position of the batch holding ``offset``, or None if not in this segment."""
        index = self._index_of(offset)
        return None if index < 0 else self._positions[index]

    def read(
        self, start_offset: int, max_size: int, max_position: int, min_one_message: bool
    ) -> FetchDataInfo | None:
        """Whole batches from the one holding ``start_offset``, ending at or before
        ``max_position`` and within ``max_size`` bytes (at least the first batch when
        ``min_one_message``, unless ``max_position`` cuts it). None if the offset is past
        this segment."""
        index = self._index_of(start_offset)
        if index < 0:
            return None
        positions = self._positions
        start_position = positions[index]
        metadata = LogOffsetMetadata(start_offset, self.base_offset, start_position)
        if min_one_message:
            max_size = max(max_size, self.batches[index].size_in_bytes)
        end_limit = start_position + min(max_position - start_position, max_size)
        # positions[j] is where batch j starts and batch j-1 ends.
        stop = bisect_right(positions, end_limit, index + 1)
        if stop == len(positions) and self.size <= end_limit:
            end_position = self.size
        else:
            stop -= 1
            end_position = positions[stop]
        if stop <= index:
            return FetchDataInfo(metadata, (), 0)
        return FetchDataInfo(metadata, self.batches[index:stop], end_position - start_position)

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= ``offset``."""
        index = bisect_right(self._base_offsets, offset) - 1
        if index >= 0 and self.batches[index].last_offset < offset:
            index += 1  # the batch before ``offset`` survives whole
        index = max(index, 0)
        if index < len(self.batches):
            self.size = self._positions[index]
            del self.batches[index:], self._base_offsets[index:], self._positions[index:]
            del self._max_timestamps_so_far[index:]

    def largest_timestamp(self) -> int:
        """The largest batch timestamp in this segment (``NO_TIMESTAMP`` when empty). Extends
        the lazy timestamp index over the batches appended since the previous call."""
        batches = self.batches
        so_far = self._max_timestamps_so_far
        if len(so_far) < len(batches):
            current = so_far[-1] if so_far else NO_TIMESTAMP
            for batch in batches[len(so_far) :]:
                current = max(current, batch.max_timestamp)
                so_far.append(current)
        return so_far[-1] if so_far else NO_TIMESTAMP

    def find_offset_by_timestamp(self, target_timestamp: int) -> tuple[int, int, int] | None:
        """``(timestamp, offset, partition leader epoch)`` of the first record in this segment
        whose timestamp is >= ``target_timestamp``, or None (Kafka's
        ``LogSegment.findOffsetByTimestamp``). O(log batches) plus the batches appended since
        the previous lookup, plus the records of the batch found."""
        if self.largest_timestamp() < target_timestamp:
            return None
        # The first batch whose running maximum reaches the target is the first batch whose own
        # maximum does.
        batch = self.batches[bisect_left(self._max_timestamps_so_far, target_timestamp)]
        found = batch.find_offset_by_timestamp(target_timestamp)
        assert found is not None, "the batch's max_timestamp reaches the target"
        return found[0], found[1], batch.partition_leader_epoch


class Log:
    """The log of one partition replica.

    ``segment_bytes`` is log.segment.bytes, ``max_message_bytes`` the largest batch a leader
    append accepts (message.max.bytes). Offsets start at ``log_start_offset``.
    """

    def __init__(
        self,
        topic_partition: TopicPartition,
        segment_bytes: int,
        max_message_bytes: int,
        log_start_offset: int = 0,
    ) -> None:
        if segment_bytes < 1:
            raise ReplicaArgumentError(f"segment_bytes must be >= 1, got {segment_bytes}")
        if log_start_offset < 0:
            raise ReplicaArgumentError(f"log_start_offset must be >= 0, got {log_start_offset}")
        self.topic_partition = topic_partition
        self.segment_bytes = segment_bytes
        self.max_message_bytes = max_message_bytes
        #: Moved by every change a read can see (see the module docstring); only compared.
        self.change_marker = next(_CHANGE_MARKERS)
        self._reset(log_start_offset)

    def _reset(self, start_offset: int) -> None:
        self._leader_epoch_cache = LeaderEpochCache()
        self._producer_state = ProducerStateManager(self.topic_partition)
        self._segments = [LogSegment(start_offset)]
        self._segment_base_offsets = [start_offset]
        self._log_start_offset = start_offset
        self._update_log_end_offset()
        self._high_watermark = self._log_end_offset_metadata

    def __repr__(self) -> str:
        return (
            f"Log({self.topic_partition}, start={self._log_start_offset}, "
            f"end={self._log_end_offset}, hw={self._high_watermark.message_offset}, "
            f"segments={len(self._segments)})"
        )

    # -- state ------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The first offset of the log."""
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets (LEO)."""
        return self._log_end_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        """The position of the log end: the end of the active segment."""
        return self._log_end_offset_metadata

    def mark_changed(self) -> None:
        """Something outside the log that its reads depend on changed (the partition's
        leadership or leader epoch): move :attr:`change_marker`."""
        self.change_marker = next(_CHANGE_MARKERS)

    def _update_log_end_offset(self) -> None:
        self.change_marker = next(_CHANGE_MARKERS)
        active = self._segments[-1]
        self._log_end_offset = active.next_offset
        self._log_end_offset_metadata = LogOffsetMetadata(
            self._log_end_offset, active.base_offset, active.size
        )
        #: What a read at the log end returns (no batches), built once per log end: most
        #: reads of a follower's fetch are of idle partitions, at the log end.
        self._read_at_end = FetchDataInfo(self._log_end_offset_metadata, (), 0)

    @property
    def high_watermark(self) -> int:
        """The replica's high watermark: offsets below it are committed."""
        return self._high_watermark.message_offset

    @property
    def high_watermark_metadata(self) -> LogOffsetMetadata:
        """The position of the high watermark."""
        return self._high_watermark

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache:
        """The leader epochs of this log and where each starts (read it; the log updates it)."""
        return self._leader_epoch_cache

    @property
    def latest_epoch(self) -> int | None:
        """The newest leader epoch in the leader-epoch cache (None if empty): what a follower
        sends as ``last_fetched_epoch``."""
        return self._leader_epoch_cache.latest_epoch

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """``(epoch, end_offset)``: the largest epoch <= ``leader_epoch`` this log knows and
        the offset where it ends here (the log end offset for the latest epoch); see
        :meth:`~replica.leader_epoch_cache.LeaderEpochCache.end_offset_for` for the edge cases
        (``(-1, -1)`` when unknown). O(log epochs)."""
        return self._leader_epoch_cache.end_offset_for(leader_epoch, self._log_end_offset)

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Record that ``leader_epoch`` starts at ``start_offset`` (a new leader does this at its
        log end offset when elected).

        Raises:
            ReplicaArgumentError: ``leader_epoch`` or ``start_offset`` is negative.
        """
        self._leader_epoch_cache.assign(leader_epoch, start_offset)
        self.change_marker = next(_CHANGE_MARKERS)

    @property
    def producer_state(self) -> ProducerStateManager:
        """The idempotent producers of this log (read it; the log updates it)."""
        return self._producer_state

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers that wrote nothing for ``expiration_ms`` (see
        :meth:`ProducerStateManager.remove_expired_producers`); returns how many."""
        return self._producer_state.remove_expired_producers(now_ms, expiration_ms)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first (the last is the active one)."""
        return tuple(self._segments)

    @property
    def size_in_bytes(self) -> int:
        """Total bytes of all batches."""
        return sum(segment.size for segment in self._segments)

    # -- appends ----------------------------------------------------------------------------

    def append_as_leader(
        self,
        records: Sequence[Record],
        leader_epoch: int,
        log_append_time: int = NO_TIMESTAMP,
        producer: ProducerBatchInfo | None = None,
    ) -> LogAppendInfo:
        """Append ``records`` as one batch at the log end offset.

        ``log_append_time`` is stamped on the batch (pass ``NO_TIMESTAMP`` for CreateTime).
        ``producer`` is an idempotent producer's stamp (None or ``NO_PRODUCER_ID``: none): a
        batch that repeats one of the producer's last batches is not appended again, and the
        returned info gives the offsets (and log append time) it got then; a new one is checked
        against the producer's state (see :mod:`replica.producer_state`).

        Raises:
            ApiError: INVALID_RECORD if ``records`` is empty or a producer's batch has a
                negative sequence number, MESSAGE_TOO_LARGE if the batch exceeds
                ``max_message_bytes``, RECORD_LIST_TOO_LARGE if it exceeds
                ``segment_bytes``, INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER from
                the producer checks. Nothing is appended then.
        """
        if not records:
            raise ApiError(Errors.INVALID_RECORD, f"empty batch for {self.topic_partition}")
        size = batch_size_in_bytes(records)
        if size > self.max_message_bytes:
            raise ApiError(
                Errors.MESSAGE_TOO_LARGE,
                f"batch of {size} bytes exceeds message.max.bytes={self.max_message_bytes}",
            )
        if size > self.segment_bytes:
            raise ApiError(
                Errors.RECORD_LIST_TOO_LARGE,
                f"batch of {size} bytes exceeds log.segment.bytes={self.segment_bytes}",
            )
        stored = records if isinstance(records, RecordColumns) else tuple(records)
        if producer is None or producer.producer_id == NO_PRODUCER_ID:
            batch = RecordBatch(self._log_end_offset, stored, size, leader_epoch, log_append_time)
        else:
            duplicate = self._check_producer(producer, len(stored))
            if duplicate is not None:
                return LogAppendInfo(
                    duplicate.first_offset,
                    duplicate.last_offset,
                    duplicate.timestamp if log_append_time != NO_TIMESTAMP else NO_TIMESTAMP,
                    self._log_start_offset,
                )
            batch = RecordBatch(
                self._log_end_offset,
                stored,
                size,
                leader_epoch,
                log_append_time,
                producer.producer_id,
                producer.producer_epoch,
                producer.base_sequence,
            )
        self._append(batch)
        return LogAppendInfo(
            batch.base_offset, batch.last_offset, log_append_time, self._log_start_offset
        )

    def _check_producer(self, producer: ProducerBatchInfo, count: int) -> BatchMetadata | None:
        """The batch a leader append stamped ``producer`` repeats, or None once the append is
        checked (raises as :meth:`append_as_leader` says)."""
        if producer.base_sequence < 0:
            raise ApiError(
                Errors.INVALID_RECORD,
                f"{self.topic_partition}: producer {producer.producer_id} sent a batch with "
                f"sequence number {producer.base_sequence}",
            )
        duplicate = self._producer_state.find_duplicate(producer, count)
        if duplicate is None:
            self._producer_state.check(producer)
        return duplicate

    def append_as_follower(self, batch: RecordBatch) -> None:
        """Append a batch copied from the leader (keeping its offsets).

        Raises:
            UnexpectedAppendOffsetError: ``batch.base_offset`` is not the log end offset.
        """
        if batch.base_offset != self._log_end_offset:
            raise UnexpectedAppendOffsetError(
                f"{self.topic_partition}: batch base offset {batch.base_offset} is not the log "
                f"end offset {self._log_end_offset}"
            )
        self._append(batch)

    def _append(self, batch: RecordBatch) -> None:
        active = self._segments[-1]
        if active.size and active.size + batch.size_in_bytes > self.segment_bytes:
            self._roll(batch.base_offset)
            active = self._segments[-1]
        active.append(batch)
        if batch.partition_leader_epoch >= 0:
            self._leader_epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)
        if batch.producer_id != NO_PRODUCER_ID:
            self._producer_state.update(batch)
        self._update_log_end_offset()

    # -- retention --------------------------------------------------------------------------

    def maybe_increment_log_start_offset(self, new_start_offset: int) -> bool:
        """Move the log start offset forward to ``new_start_offset``, capped at the high
        watermark (offsets below the start are no longer readable; their segments go at the
        next :meth:`delete_old_segments`). Returns True if it moved."""
        new_start_offset = min(new_start_offset, self._high_watermark.message_offset)
        if new_start_offset <= self._log_start_offset:
            return False
        self._log_start_offset = new_start_offset
        self._leader_epoch_cache.truncate_from_start(new_start_offset)
        self.change_marker = next(_CHANGE_MARKERS)
        return True

    def delete_old_segments(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """Delete the segments retention no longer keeps (see the module docstring): older
        than ``retention_ms`` by their largest timestamp at ``now_ms``, beyond
        ``retention_bytes`` of log, or below the log start offset; -1 turns a limit off.
        Returns the number of segments deleted."""
        excess_bytes = self.size_in_bytes - retention_bytes if retention_bytes >= 0 else 0
        high_watermark = self._high_watermark.message_offset
        segments = self._segments
        deleted = 0
        for index, segment in enumerate(segments):
            end = segments[index + 1].base_offset if index + 1 < len(segments) else None
            if end is None:
                end = segment.next_offset
                if segment.size == 0:
                    break
            if end > high_watermark:
                break
            expired = retention_ms >= 0 and now_ms - segment.largest_timestamp() > retention_ms
            oversized = excess_bytes >= segment.size > 0
            if not (expired or oversized or end <= self._log_start_offset):
                break
            excess_bytes -= segment.size
            deleted += 1
        if deleted == 0:
            return 0
        if deleted == len(segments):
            self._roll(self._log_end_offset)
            self._update_log_end_offset()
            self._high_watermark = self._log_end_offset_metadata
        del segments[:deleted], self._segment_base_offsets[:deleted]
        self.maybe_increment_log_start_offset(segments[0].base_offset)
        return deleted

    def _roll(self, base_offset: int) -> None:
        self._segments.append(LogSegment(base_offset))
        self._segment_base_offsets.append(base_offset)

    # -- reads ------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_length: int,
        isolation: FetchIsolation,
        min_one_message: bool,
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset``, at most ``max_length`` bytes
        (but at least one batch when ``min_one_message``), never past the isolation's end
        (the LEO for ``LOG_END``, else the high watermark), from a single segment.

        Reading at or past that end returns no batches (and the fetch offset's position).

        Raises:
            ApiError: OFFSET_OUT_OF_RANGE if ``start_offset`` is below the log start offset
                or above the log end offset.
        """
        end = self._log_end_offset
        if start_offset == end:
            return self._read_at_end
        if start_offset > end or start_offset < self._log_start_offset:
            raise ApiError(
                Errors.OFFSET_OUT_OF_RANGE,
                f"{self.topic_partition}: offset {start_offset} is outside "
                f"[{self._log_start_offset}, {end}]",
            )
        max_offset = (
            self.log_end_offset_metadata if isolation is LOG_END_ISOLATION else self._high_watermark
        )
        if start_offset == max_offset.message_offset:
            # Also right when a segment rolled at the high watermark after it was set.
            return FetchDataInfo(max_offset, (), 0)
        if start_offset > max_offset.message_offset:
            return FetchDataInfo(self.convert_to_offset_metadata(start_offset), (), 0)
        segments = self._segments
        for index in range(
            bisect_right(self._segment_base_offsets, start_offset) - 1, len(segments)
        ):
            segment = segments[index]
            max_position = (
                max_offset.relative_position_in_segment
                if max_offset.segment_base_offset == segment.base_offset
                else segment.size
            )
            info = segment.read(start_offset, max_length, max_position, min_one_message)
            if info is not None:
                return info
        return self._read_at_end

    def find_offset_by_timestamp(self, target_timestamp: int) -> tuple[int, int, int] | None:
        """``(timestamp, offset, partition leader epoch)`` of the first record (lowest offset)
        whose timestamp is >= ``target_timestamp``, or None if no record has one. A record's
        timestamp is its batch's log append time when the log uses ``LogAppendTime``, else its
        create time. Not bounded by the high watermark: the caller bounds it.

        Like Kafka, it walks the segments to the first whose largest timestamp reaches the
        target (O(segments)), then binary-searches that segment (O(log batches)).
        """
        for segment in self._segments:
            if segment.largest_timestamp() >= target_timestamp:
                return segment.find_offset_by_timestamp(target_timestamp)
        return None

    def convert_to_offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """The position of ``offset`` (the start of the batch holding it; the log end's
        position for the LEO).

        Raises:
            ApiError: OFFSET_OUT_OF_RANGE if ``offset`` is outside [log start, log end].
        """
        if offset == self._log_end_offset:
            return self.log_end_offset_metadata
        if self._log_start_offset <= offset < self._log_end_offset:
            segment = self._segments[bisect_right(self._segment_base_offsets, offset) - 1]
            position = segment.position_of(offset)
            if position is not None:
                return LogOffsetMetadata(offset, segment.base_offset, position)
        raise ApiError(
            Errors.OFFSET_OUT_OF_RANGE,
            f"{self.topic_partition}: offset {offset} is outside "
            f"[{self._log_start_offset}, {self._log_end_offset}]",
        )

    # -- high watermark ---------------------------------------------------------------------

    def maybe_increment_high_watermark(self, new_high_watermark: LogOffsetMetadata) -> bool:
        """Leader: move the high watermark to ``new_high_watermark`` if that is forward.

        Returns True if it moved. The high watermark never decreases through this method.

        Raises:
            ReplicaArgumentError: the new value is beyond the log end offset.
        """
        if new_high_watermark.message_offset > self._log_end_offset:
            raise ReplicaArgumentError(
                f"{self.topic_partition}: high watermark {new_high_watermark.message_offset} "
                f"cannot exceed the log end offset {self._log_end_offset}"
            )
        if new_high_watermark.message_offset > self._high_watermark.message_offset:
            self._high_watermark = new_high_watermark
            self.change_marker = next(_CHANGE_MARKERS)
            return True
        return False

    def update_high_watermark(self, high_watermark: int) -> int:
        """Follower: set the high watermark to ``high_watermark`` clamped to [log start, LEO]
        (it may go down). Returns the value set."""
        current = self._high_watermark.message_offset
        if high_watermark == current and self._log_start_offset <= current <= self._log_end_offset:
            return current  # unchanged: every response of an idle partition says so
        offset = min(max(high_watermark, self._log_start_offset), self._log_end_offset)
        if offset != current:
            self._high_watermark = self.convert_to_offset_metadata(offset)
            self.change_marker = next(_CHANGE_MARKERS)
        return offset

    # -- truncation -------------------------------------------------------------------------

    def truncate_to(self, target_offset: int) -> bool:
        """Remove every batch holding an offset >= ``target_offset`` (batches are atomic, so
        the new LEO is at most ``target_offset``). The high watermark is clamped to the new
        LEO, and leader epochs starting at or after it leave the leader-epoch cache. Returns
        True if any batch was removed. A target below the log start offset empties the log and
        restarts it there (:meth:`truncate_fully_and_start_at`).

        A target at or past the log end offset removes no batch but still drops epochs that
        start at the log end (as Kafka does): an epoch a former leader assigned when elected
        and never wrote in.
        """
        if target_offset >= self._log_end_offset:
            self._leader_epoch_cache.truncate_from_end(self._log_end_offset)
            self.change_marker = next(_CHANGE_MARKERS)
            return False
        if target_offset < self._log_start_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        keep = bisect_right(self._segment_base_offsets, target_offset)
        # Keep the segment holding target_offset (and a segment based exactly there).
        keep = max(keep, 1)
        del self._segments[keep:], self._segment_base_offsets[keep:]
        active = self._segments[-1]
        active.truncate_to(target_offset)
        self._update_log_end_offset()
        self._leader_epoch_cache.truncate_from_end(self._log_end_offset)
        if len(self._producer_state):
            self._producer_state.truncate(self._log_end_offset, self._batches_newest_first())
        if self._high_watermark.message_offset >= self._log_end_offset:
            self._high_watermark = self.log_end_offset_metadata
        return True

    def _batches_newest_first(self) -> Iterator[RecordBatch]:
        for segment in reversed(self._segments):
            yield from reversed(segment.batches)

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete everything, leader epochs included; the log restarts empty at ``new_offset``
        (start = LEO = HW).

        Raises:
            ReplicaArgumentError: ``new_offset`` is negative.
        """
        if new_offset < 0:
            raise ReplicaArgumentError(f"new_offset must be >= 0, got {new_offset}")
        self._reset(new_offset)

"""Value types shared by the replica layer and the layers built on it.

Everything here is immutable, so results can be handed to callbacks without copies. Offsets
are Kafka offsets (``int``); times are milliseconds.

The types built once per request or per partition of a request are plain classes with
slots: in the compiled build a plain class is a native class, which costs about a fifteenth of
a frozen attrs instance and an eighth of a named tuple to build (22 against 339 and 177 ns;
an attrs ``__init__`` or a named tuple's ``__new__`` is a Python-level call from compiled
code, ~1,800-2,800 instructions) and is read without a dictionary or descriptor lookup; in
pure Python a frozen attrs instance costs about three times a named tuple (each field is set
through ``object.__setattr__``). They are immutable by convention, and the values among them
(offsets, a fetch's partitions, a produce's partition response, an append's result) are
compared and hashed by their fields; :class:`TopicPartition`, the key of every per-partition
dictionary, keeps its hash (see there). The rarer results are frozen attrs
classes (the two whose fields are validated, :class:`EpochEndOffset` and
:class:`PartitionState`, are declared in :mod:`replica.validated_types`, which the compiled
build leaves interpreted, and exported here).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final

import attrs

from replica.errors import Errors
from replica.exceptions import ReplicaArgumentError
from replica.records import NO_TIMESTAMP, RecordBatch
from replica.validated_types import EpochEndOffset, PartitionState

__all__ = [
    "CONSUMER_REPLICA_ID",
    "EARLIEST_TIMESTAMP",
    "EMPTY_FETCH_DATA_INFO",
    "GROUP_METADATA_TOPIC_NAME",
    "INTERNAL_TOPICS",
    "LATEST_TIMESTAMP",
    "LOG_END_ISOLATION",
    "NO_ERROR",
    "UNKNOWN_OFFSET",
    "UNKNOWN_OFFSET_METADATA",
    "EpochEndOffset",
    "FetchDataInfo",
    "FetchIsolation",
    "FetchParams",
    "FetchPartitionData",
    "IsolationLevel",
    "ListOffsetsResult",
    "LogAppendInfo",
    "LogOffsetMetadata",
    "LogReadResult",
    "OffsetForLeaderEpochResult",
    "PartitionFetchInfo",
    "PartitionResponse",
    "PartitionState",
    "TopicPartition",
    "canonical_partition",
]

#: Kafka's ``FetchRequest.CONSUMER_REPLICA_ID``: the ``replica_id`` of a consumer's fetch.
CONSUMER_REPLICA_ID: Final = -1
#: Kafka's ``UnifiedLog.UnknownOffset``.
UNKNOWN_OFFSET: Final = -1
#: The group coordinator's topic of committed offsets and group metadata (Kafka's
#: ``Topic.GROUP_METADATA_TOPIC_NAME``); the one place its name is spelled.
GROUP_METADATA_TOPIC_NAME: Final = "__consumer_offsets"
#: Topics only brokers may append to (``append_messages(internal_topics_allowed=True)``).
INTERNAL_TOPICS: Final = frozenset({GROUP_METADATA_TOPIC_NAME, "__transaction_state"})
#: Kafka's ``ListOffsetsRequest.LATEST_TIMESTAMP``: ask for the end offset.
LATEST_TIMESTAMP: Final = -1
#: Kafka's ``ListOffsetsRequest.EARLIEST_TIMESTAMP``: ask for the log start offset.
EARLIEST_TIMESTAMP: Final = -2


class TopicPartition:
    """A partition of a topic; immutable (by convention), hashable and ordered by (topic,
    partition). A value: equal to the TopicPartitions of the same fields (not to a tuple).

    The key of every per-partition dict and purgatory watch list, so its hash is computed
    once, when made: a named tuple's is computed at every lookup from its fields (~100
    instructions), while a native class's hash slot returns the stored one (the compiled
    build; in pure Python ``__hash__`` and ``__eq__`` are Python calls).
    """

    __slots__ = ("_hash", "partition", "topic")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        # Shifted to fit a short int, which the compiled hash slot returns without unboxing.
        self._hash = hash((topic, partition)) >> 2

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TopicPartition)
            and self.partition == other.partition
            and self.topic == other.topic
        )

    def __lt__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __reduce__(self) -> tuple[type[TopicPartition], tuple[str, int]]:
        return (TopicPartition, (self.topic, self.partition))

    def __repr__(self) -> str:
        return f"TopicPartition(topic={self.topic!r}, partition={self.partition!r})"

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


_CANONICAL: Final[dict[TopicPartition, TopicPartition]] = {}


def canonical_partition(topic: str, partition: int) -> TopicPartition:
    """The process's one :class:`TopicPartition` object equal to ``(topic, partition)``: the
    first one made here, kept for the life of the process.

    Only a speed-up: a dict hit on a key that is the very object stored stops at the identity
    check, where an equal but distinct tuple is compared element by element. For the bounded
    set of partitions a cluster has, made once and used as keys of per-partition maps on both
    sides of a request (the simulator's controller and clients); not for partitions read off
    the wire, whose topic names are unbounded.
    """
    tp = TopicPartition(topic, partition)
    return _CANONICAL.setdefault(tp, tp)


class LogOffsetMetadata:
    """A position in a log: the offset, the base offset of the segment holding it and the
    byte position (in that segment) of the batch holding it. A value: compared and hashed by
    its fields, not to be changed once made.

    Two positions are only byte-comparable when they are on the same segment; delayed fetches
    use that to count the bytes between a fetch position and the end offset.
    """

    __slots__ = ("message_offset", "relative_position_in_segment", "segment_base_offset")

    def __init__(
        self, message_offset: int, segment_base_offset: int, relative_position_in_segment: int
    ) -> None:
        self.message_offset = message_offset
        self.segment_base_offset = segment_base_offset
        self.relative_position_in_segment = relative_position_in_segment

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LogOffsetMetadata)
            and self.message_offset == other.message_offset
            and self.segment_base_offset == other.segment_base_offset
            and self.relative_position_in_segment == other.relative_position_in_segment
        )

    def __hash__(self) -> int:
        return hash(
            (self.message_offset, self.segment_base_offset, self.relative_position_in_segment)
        )

    def __repr__(self) -> str:
        return (
            f"LogOffsetMetadata({self.message_offset}, {self.segment_base_offset}, "
            f"{self.relative_position_in_segment})"
        )

    def on_older_segment(self, that: LogOffsetMetadata) -> bool:
        """True if this position is on a segment older than ``that``'s."""
        return self.segment_base_offset < that.segment_base_offset

    def on_same_segment(self, that: LogOffsetMetadata) -> bool:
        """True if both positions are on the same segment."""
        return self.segment_base_offset == that.segment_base_offset

    def position_diff(self, that: LogOffsetMetadata) -> int:
        """Bytes from ``that`` to this position; both must be on the same segment.

        Raises:
            ReplicaArgumentError: the positions are on different segments.
        """
        if self.segment_base_offset != that.segment_base_offset:
            raise ReplicaArgumentError(
                f"position_diff needs positions on the same segment, got segments "
                f"{self.segment_base_offset} and {that.segment_base_offset}"
            )
        return self.relative_position_in_segment - that.relative_position_in_segment


#: The position of an offset nobody has reported yet (a follower the leader has not heard from).
UNKNOWN_OFFSET_METADATA: Final = LogOffsetMetadata(UNKNOWN_OFFSET, UNKNOWN_OFFSET, UNKNOWN_OFFSET)


class FetchIsolation(enum.Enum):
    """How far a read may go (Kafka's internal ``FetchIsolation``)."""

    #: Up to the log end offset: follower fetches and the coordinator's loading.
    LOG_END = "log_end"
    #: Up to the high watermark: consumers with read_uncommitted.
    HIGH_WATERMARK = "high_watermark"
    #: Up to the last stable offset: consumers with read_committed.
    TXN_COMMITTED = "txn_committed"


# Enum members the request path compares with, as module constants. An enum class's attributes
# are read through ``EnumType.__getattr__``'s attribute hook (CPython 3.11): ``Errors.NONE``
# costs ~60 ns, ~900 instructions from compiled code, where a ``Final`` module constant is a
# C static in the compiled build. Code visiting every partition of every request uses these.
#: ``Errors.NONE``.
NO_ERROR: Final = Errors.NONE
#: ``FetchIsolation.LOG_END``.
LOG_END_ISOLATION: Final = FetchIsolation.LOG_END


class IsolationLevel(enum.IntEnum):
    """A consumer's isolation level as sent in a fetch request."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class PartitionFetchInfo:
    """One partition of a fetch: where to read from and how many bytes at most. A value:
    compared and hashed by its fields, not to be changed once made.

    ``current_leader_epoch`` (optional) fences stale leaders: older than the leader's epoch
    gives FENCED_LEADER_EPOCH, newer gives UNKNOWN_LEADER_EPOCH. ``log_start_offset`` is the
    fetching follower's log start offset (``UNKNOWN_OFFSET`` for consumers).
    ``last_fetched_epoch`` (optional, Kafka's ``lastFetchedEpoch``) is the leader epoch of the
    fetcher's log end: the epoch of its last batch, as its leader-epoch cache says. When set,
    the leader first checks that its own log has that epoch reaching ``fetch_offset``; if not
    it answers with a ``diverging_epoch`` and no records (see :class:`FetchPartitionData`).
    A negative ``max_bytes`` or ``last_fetched_epoch`` is answered with INVALID_REQUEST for
    that partition.
    """

    __slots__ = (
        "current_leader_epoch",
        "fetch_offset",
        "last_fetched_epoch",
        "log_start_offset",
        "max_bytes",
    )

    def __init__(
        self,
        fetch_offset: int,
        max_bytes: int,
        current_leader_epoch: int | None = None,
        log_start_offset: int = UNKNOWN_OFFSET,
        last_fetched_epoch: int | None = None,
    ) -> None:
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.current_leader_epoch = current_leader_epoch
        self.log_start_offset = log_start_offset
        self.last_fetched_epoch = last_fetched_epoch

    def _fields(self) -> tuple[int, int, int | None, int, int | None]:
        return (
            self.fetch_offset,
            self.max_bytes,
            self.current_leader_epoch,
            self.log_start_offset,
            self.last_fetched_epoch,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionFetchInfo) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"PartitionFetchInfo(fetch_offset={self.fetch_offset}, max_bytes={self.max_bytes}, "
            f"current_leader_epoch={self.current_leader_epoch}, "
            f"log_start_offset={self.log_start_offset}, "
            f"last_fetched_epoch={self.last_fetched_epoch})"
        )


class FetchParams:
    """Request-level fetch parameters (Kafka's ``FetchParams``), not to be changed once made.

    ``replica_id >= 0`` marks a follower broker's fetch; any negative id is a consumer. A plain
    class, not an attrs one: one is made per fetch, and a plain class is native (cheap to
    build and read) in the compiled build.
    """

    __slots__ = ("isolation", "max_bytes", "max_wait_ms", "min_bytes", "replica_id")

    def __init__(
        self,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation: FetchIsolation,
    ) -> None:
        self.replica_id = replica_id
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.isolation = isolation

    def __repr__(self) -> str:
        return (
            f"FetchParams(replica_id={self.replica_id}, max_wait_ms={self.max_wait_ms}, "
            f"min_bytes={self.min_bytes}, max_bytes={self.max_bytes}, "
            f"isolation={self.isolation})"
        )

    @property
    def is_from_follower(self) -> bool:
        """True for a follower broker's fetch."""
        return self.replica_id >= 0


class FetchDataInfo:
    """What a log read returned: the position of the fetch offset and whole batches. Not to
    be changed once made.

    ``records`` holds whole batches only (Kafka may return a trailing partial batch, which
    clients drop; the model never returns it). ``records_size`` is their total size in bytes.
    """

    __slots__ = ("fetch_offset_metadata", "records", "records_size")

    def __init__(
        self,
        fetch_offset_metadata: LogOffsetMetadata,
        records: Sequence[RecordBatch],
        records_size: int,
    ) -> None:
        self.fetch_offset_metadata = fetch_offset_metadata
        self.records = records
        self.records_size = records_size

    def __repr__(self) -> str:
        return (
            f"FetchDataInfo({self.fetch_offset_metadata!r}, {len(self.records)} batches, "
            f"{self.records_size} bytes)"
        )


EMPTY_FETCH_DATA_INFO: Final = FetchDataInfo(UNKNOWN_OFFSET_METADATA, (), 0)


class LogAppendInfo:
    """Result of a successful append: the offsets assigned and the log's state after it. A
    value: compared and hashed by its fields, not to be changed once made."""

    __slots__ = ("first_offset", "last_offset", "log_append_time", "log_start_offset")

    def __init__(
        self, first_offset: int, last_offset: int, log_append_time: int, log_start_offset: int
    ) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset

    def _fields(self) -> tuple[int, int, int, int]:
        return (self.first_offset, self.last_offset, self.log_append_time, self.log_start_offset)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogAppendInfo) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"LogAppendInfo(first_offset={self.first_offset}, last_offset={self.last_offset}, "
            f"log_append_time={self.log_append_time}, log_start_offset={self.log_start_offset})"
        )


class FetchPartitionData:
    """One partition of a fetch response (what ``fetch_messages`` hands its callback). A
    value: compared by its fields, not to be changed once made.

    ``records`` are whole batches, ``records_size`` their total bytes. ``log_end_offset`` is
    the leader's log end offset at read time: the model's follower uses it to handle
    OFFSET_OUT_OF_RANGE where Kafka's follower asks with a ListOffsets request; a consumer-facing
    layer must not expose it.

    ``diverging_epoch`` is set (with error NONE and no records) when the fetch carried a
    ``last_fetched_epoch`` that the leader's log does not continue to the fetch offset: the
    leader's largest epoch <= ``last_fetched_epoch`` and where it ends on the leader. The
    fetcher must truncate its log (see :class:`~replica.replica_fetcher.ReplicaFetcher`) and
    fetch again.
    """

    __slots__ = (
        "diverging_epoch",
        "error",
        "high_watermark",
        "last_stable_offset",
        "log_end_offset",
        "log_start_offset",
        "records",
        "records_size",
    )

    def __init__(
        self,
        error: Errors,
        high_watermark: int,
        log_start_offset: int,
        last_stable_offset: int,
        records: Sequence[RecordBatch],
        records_size: int,
        log_end_offset: int,
        diverging_epoch: EpochEndOffset | None = None,
    ) -> None:
        self.error = error
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset
        self.last_stable_offset = last_stable_offset
        self.records = records
        self.records_size = records_size
        self.log_end_offset = log_end_offset
        self.diverging_epoch = diverging_epoch

    def _fields(
        self,
    ) -> tuple[Errors, int, int, int, Sequence[RecordBatch], int, int, EpochEndOffset | None]:
        return (
            self.error,
            self.high_watermark,
            self.log_start_offset,
            self.last_stable_offset,
            self.records,
            self.records_size,
            self.log_end_offset,
            self.diverging_epoch,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FetchPartitionData) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"FetchPartitionData(error={self.error!r}, high_watermark={self.high_watermark}, "
            f"log_start_offset={self.log_start_offset}, "
            f"last_stable_offset={self.last_stable_offset}, records={self.records!r}, "
            f"records_size={self.records_size}, log_end_offset={self.log_end_offset}, "
            f"diverging_epoch={self.diverging_epoch!r})"
        )


class LogReadResult:
    """One partition's result of :meth:`ReplicaManager.read_from_local_log`; not to be
    changed once made.

    On error, ``info`` is empty and the offsets are the leader's when known, else
    ``UNKNOWN_OFFSET``. ``leader_log_end_offset`` is internal (Kafka's
    ``LogReadResult.leaderLogEndOffset``); it is never meant for a consumer. With a
    ``diverging_epoch`` (see :class:`FetchPartitionData`) ``info`` is empty too.
    """

    __slots__ = (
        "diverging_epoch",
        "error",
        "fetch_time_ms",
        "high_watermark",
        "info",
        "last_stable_offset",
        "leader_log_end_offset",
        "leader_log_start_offset",
    )

    def __init__(
        self,
        info: FetchDataInfo,
        high_watermark: int,
        leader_log_start_offset: int,
        leader_log_end_offset: int,
        last_stable_offset: int,
        fetch_time_ms: int,
        error: Errors = Errors.NONE,
        diverging_epoch: EpochEndOffset | None = None,
    ) -> None:
        self.info = info
        self.high_watermark = high_watermark
        self.leader_log_start_offset = leader_log_start_offset
        self.leader_log_end_offset = leader_log_end_offset
        self.last_stable_offset = last_stable_offset
        self.fetch_time_ms = fetch_time_ms
        self.error = error
        self.diverging_epoch = diverging_epoch

    def __repr__(self) -> str:
        return (
            f"LogReadResult({self.info!r}, high_watermark={self.high_watermark}, "
            f"leader_log_start_offset={self.leader_log_start_offset}, "
            f"leader_log_end_offset={self.leader_log_end_offset}, "
            f"last_stable_offset={self.last_stable_offset}, fetch_time_ms={self.fetch_time_ms}, "
            f"error={self.error.name}, diverging_epoch={self.diverging_epoch!r})"
        )

    def to_fetch_partition_data(self, to_follower: bool = True) -> FetchPartitionData:
        """The fetch-response view of this result: with the leader's log end offset for a
        follower's fetch (``to_follower``), UNKNOWN_OFFSET in its place for a consumer's."""
        info = self.info
        return FetchPartitionData(
            self.error,
            self.high_watermark,
            self.leader_log_start_offset,
            self.last_stable_offset,
            info.records,
            info.records_size,
            self.leader_log_end_offset if to_follower else UNKNOWN_OFFSET,
            self.diverging_epoch,
        )


class PartitionResponse:
    """One partition of a produce response (what ``append_messages`` hands its callback). A
    value: compared and hashed by its fields, not to be changed once made.

    ``base_offset`` is the offset of the first appended record (``UNKNOWN_OFFSET`` on error),
    ``log_append_time`` the broker time of the append with ``LogAppendTime`` timestamps
    (else ``NO_TIMESTAMP``), ``log_start_offset`` the partition's log start offset.
    """

    __slots__ = ("base_offset", "error", "log_append_time", "log_start_offset")

    def __init__(
        self,
        error: Errors,
        base_offset: int = UNKNOWN_OFFSET,
        log_append_time: int = NO_TIMESTAMP,
        log_start_offset: int = UNKNOWN_OFFSET,
    ) -> None:
        self.error = error
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset

    def _fields(self) -> tuple[Errors, int, int, int]:
        return (self.error, self.base_offset, self.log_append_time, self.log_start_offset)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionResponse) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"PartitionResponse(error={self.error!r}, base_offset={self.base_offset}, "
            f"log_append_time={self.log_append_time}, log_start_offset={self.log_start_offset})"
        )


@attrs.define(frozen=True)
class OffsetForLeaderEpochResult:
    """One partition's answer to an OffsetForLeaderEpoch lookup
    (:meth:`~replica.replica_manager.ReplicaManager.last_offset_for_leader_epoch`): the largest
    leader epoch <= the one asked for that the log knows, and the offset where it ends there
    (the log end offset for the latest epoch); both -1 (``UNDEFINED_EPOCH``,
    ``UNDEFINED_EPOCH_OFFSET``) when the log cannot place the epoch, or on error."""

    error: Errors
    leader_epoch: int = -1
    end_offset: int = -1


@attrs.define(frozen=True)
class ListOffsetsResult:
    """One partition's answer to a ListOffsets lookup
    (:meth:`~replica.replica_manager.ReplicaManager.fetch_offset_for_timestamp`).

    ``offset`` is the offset found (``UNKNOWN_OFFSET`` on error or when no record matches),
    ``timestamp`` the found record's timestamp (``NO_TIMESTAMP`` for the LATEST and EARLIEST
    lookups, on error, and when nothing matches), ``leader_epoch`` the leader epoch that
    wrote that offset where known (for LATEST: the current leader epoch), else None.
    """

    error: Errors
    timestamp: int = NO_TIMESTAMP
    offset: int = UNKNOWN_OFFSET
    leader_epoch: int | None = None

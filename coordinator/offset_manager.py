"""OffsetManager: committed consumer offsets, stored in ``__consumer_offsets`` via ReplicaManager.

This is the "Coordinator / Offset Manager" of the Kafka API refactoring design. It talks to the
replica layer only through :class:`~replica.replica_manager.ReplicaManager`'s public methods:

* a commit (:meth:`OffsetManager.put_offsets`) appends one record per partition to the group's
  partition of ``__consumer_offsets`` with ``append_messages(acks=-1,
  timeout=offsets.commit.timeout.ms)``; the offsets enter the cache only when that append
  completes without error, and the response callback then gets the mapped error codes (the
  nested callback the design's "caveat" describes);
* a fetch (:meth:`OffsetManager.get_offsets`) answers from the cache;
* a group's metadata (:meth:`OffsetManager.store_group`, for the group coordinator) is
  appended the same way, one record keyed by the group (:mod:`coordinator.group_record`);
* when this broker becomes leader of an offsets partition (:meth:`OffsetManager.on_election`)
  it loads that partition's commits by reading its log with ``read_from_local_log``
  (``FetchIsolation.LOG_END``), so commits survive a coordinator move, and hands the latest
  metadata record of each group to the caller's ``on_groups_loaded``; on resignation
  (:meth:`OffsetManager.on_resignation`) it drops them.

A group belongs to partition ``abs(java_string_hash(group_id)) % offsets.topic.num.partitions``.
Requests for a group whose partition this broker does not lead get NOT_COORDINATOR; while the
partition loads, COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Final

import attrs
from mypy_extensions import mypyc_attr

from coordinator.config import OffsetConfig
from coordinator.group_record import (
    GroupMetadataValue,
    decode_group_record,
    encode_group_record,
    is_group_record,
)
from coordinator.hashing import partition_for_group
from coordinator.offset_record import (
    OffsetAndMetadata,
    OffsetCommitKey,
    decode_offset_record,
    encode_offset_record,
)
from replica.errors import Errors
from replica.records import NO_TIMESTAMP, Record
from replica.replica_manager import ReplicaManager
from replica.types import (
    CONSUMER_REPLICA_ID,
    GROUP_METADATA_TOPIC_NAME,
    FetchIsolation,
    FetchParams,
    PartitionFetchInfo,
    PartitionResponse,
    TopicPartition,
)

__all__ = [
    "NO_OFFSET",
    "OffsetCommitCallback",
    "OffsetFetchResult",
    "OffsetManager",
    "OffsetsPartitionStatus",
    "commit_error_for_append_error",
    "store_group_error_for_append_error",
]

#: What :meth:`OffsetManager.get_offsets` returns for a partition with no committed offset.
NO_OFFSET: Final = OffsetAndMetadata(offset=-1)

#: Called once per commit with the error code of every partition of the commit.
OffsetCommitCallback = Callable[[dict[TopicPartition, Errors]], None]

_APPEND_ERROR_TO_COMMIT_ERROR: Final = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.RECORD_LIST_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.INVALID_FETCH_SIZE: Errors.INVALID_COMMIT_OFFSET_SIZE,
}


def commit_error_for_append_error(error: Errors) -> Errors:
    """The commit error for the error of its ``__consumer_offsets`` append (Kafka's mapping
    in ``GroupMetadataManager.storeOffsets``); codes without a mapping, such as
    REQUEST_TIMED_OUT, pass through."""
    return _APPEND_ERROR_TO_COMMIT_ERROR.get(error, error)


#: Called once a partition's load finishes with the latest stored metadata of each of its
#: groups, in the order the groups were first stored.
GroupsLoadedCallback = Callable[[dict[str, GroupMetadataValue]], None]

_APPEND_ERROR_TO_STORE_GROUP_ERROR: Final = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.REQUEST_TIMED_OUT: Errors.REBALANCE_IN_PROGRESS,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.INVALID_FETCH_SIZE: Errors.UNKNOWN_SERVER_ERROR,
}


def store_group_error_for_append_error(error: Errors) -> Errors:
    """The error a group's stored assignment reports for the error of its
    ``__consumer_offsets`` append (Kafka's mapping in ``GroupMetadataManager.storeGroup``);
    codes without a mapping pass through."""
    return _APPEND_ERROR_TO_STORE_GROUP_ERROR.get(error, error)


class OffsetsPartitionStatus(enum.Enum):
    """Where this broker stands with one partition of ``__consumer_offsets``."""

    #: Not the leader: its groups get NOT_COORDINATOR.
    NOT_OWNED = "not_owned"
    #: Leader, reading the partition's log: its groups get COORDINATOR_LOAD_IN_PROGRESS.
    LOADING = "loading"
    #: Leader with the partition's offsets in the cache.
    ACTIVE = "active"


@attrs.define(frozen=True)
class OffsetFetchResult:
    """Answer of :meth:`OffsetManager.get_offsets`: a group-level error and, when it is NONE,
    the offsets (``NO_OFFSET`` for partitions with no commit)."""

    error: Errors
    offsets: dict[TopicPartition, OffsetAndMetadata]


@attrs.define
class _Ownership:
    generation: int
    loaded: bool = False


@attrs.define(frozen=True)
class _Committed:
    """A cached commit and the log offset of the record that stored it (newer record wins)."""

    value: OffsetAndMetadata
    record_offset: int


# offsets partition -> group -> partition -> commit
_Cache = dict[int, dict[str, dict[TopicPartition, _Committed]]]


@mypyc_attr(allow_interpreted_subclasses=True)  # tests override a method (compiled build)
class OffsetManager:
    """Committed offsets of the groups whose ``__consumer_offsets`` partitions this broker leads.

    ``clock()`` gives the current time in ms (used for commit timestamps left at
    ``NO_TIMESTAMP``). ``scheduler``, if given, is called with the loading task of a newly led
    partition instead of running it at once, modelling Kafka's asynchronous load: until the
    task runs, the partition's groups get COORDINATOR_LOAD_IN_PROGRESS. A task that runs after
    the partition was resigned (or re-elected) does nothing.
    """

    def __init__(
        self,
        broker_id: int,
        replica_manager: ReplicaManager,
        config: OffsetConfig,
        clock: Callable[[], int],
        *,
        scheduler: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self._replica_manager = replica_manager
        self._clock = clock
        self._scheduler = scheduler
        self._owned: dict[int, _Ownership] = {}
        self._cache: _Cache = {}
        self._generation = 0

    def __repr__(self) -> str:
        active = sorted(p for p, o in self._owned.items() if o.loaded)
        loading = sorted(p for p, o in self._owned.items() if not o.loaded)
        return f"OffsetManager(broker={self.broker_id}, active={active}, loading={loading})"

    # -- placement --------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition that stores ``group_id``'s offsets."""
        return partition_for_group(group_id, self.config.offsets_topic_num_partitions)

    def partition_status(self, partition: int) -> OffsetsPartitionStatus:
        """Whether this broker coordinates the groups of offsets ``partition``."""
        ownership = self._owned.get(partition)
        if ownership is None:
            return OffsetsPartitionStatus.NOT_OWNED
        return OffsetsPartitionStatus.ACTIVE if ownership.loaded else OffsetsPartitionStatus.LOADING

    def _group_error(self, group_id: str) -> Errors:
        """NONE if this broker can serve ``group_id`` now, else the error for the request."""
        if not group_id:
            return Errors.INVALID_GROUP_ID
        status = self.partition_status(self.partition_for(group_id))
        if status is OffsetsPartitionStatus.NOT_OWNED:
            return Errors.NOT_COORDINATOR
        if status is OffsetsPartitionStatus.LOADING:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        return Errors.NONE

    # -- commit -----------------------------------------------------------------------------

    def put_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        response_callback: OffsetCommitCallback,
    ) -> None:
        """Commit ``offsets`` for ``group_id``; ``response_callback`` gets one error per
        partition, exactly once.

        * empty group id: INVALID_GROUP_ID; partition not led here: NOT_COORDINATOR; still
          loading: COORDINATOR_LOAD_IN_PROGRESS (for every partition, nothing written);
        * metadata longer than ``offset_metadata_max_bytes``: OFFSET_METADATA_TOO_LARGE for that
          partition; the others are still committed;
        * the rest is appended (acks=-1, ``offsets_commit_timeout_ms``) and the callback runs
          when the append completes, with the append's error mapped by
          :func:`commit_error_for_append_error`. Only on NONE are the offsets cached.

        ``commit_timestamp == NO_TIMESTAMP`` is replaced by the current time. The callback runs
        before this method returns unless the append has to wait for replication.
        """
        group_error = self._group_error(group_id)
        if group_error is not Errors.NONE:
            response_callback({tp: group_error for tp in offsets})
            return
        now = self._clock()
        errors: dict[TopicPartition, Errors] = {}
        to_write: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, value in offsets.items():
            if _java_length(value.metadata) > self.config.offset_metadata_max_bytes:
                errors[tp] = Errors.OFFSET_METADATA_TOO_LARGE
            else:
                to_write[tp] = (
                    attrs.evolve(value, commit_timestamp=now)
                    if value.commit_timestamp == NO_TIMESTAMP
                    else value
                )
                errors[tp] = Errors.NONE
        if not to_write:
            response_callback(errors)
            return
        partition = self.partition_for(group_id)
        offsets_tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, partition)
        records = [
            encode_offset_record(OffsetCommitKey(group_id, tp), value)
            for tp, value in to_write.items()
        ]

        def on_append(responses: dict[TopicPartition, PartitionResponse]) -> None:
            response = responses[offsets_tp]
            error = commit_error_for_append_error(response.error)
            if error is Errors.NONE:
                for index, (tp, value) in enumerate(to_write.items()):
                    self._store(partition, group_id, tp, value, response.base_offset + index)
            for tp in to_write:
                errors[tp] = error
            response_callback(errors)

        self._replica_manager.append_messages(
            self.config.offsets_commit_timeout_ms,
            -1,
            {offsets_tp: records},
            on_append,
            internal_topics_allowed=True,
        )

    def _store(
        self,
        partition: int,
        group_id: str,
        tp: TopicPartition,
        value: OffsetAndMetadata,
        record_offset: int,
    ) -> None:
        """Cache a commit unless a commit stored by a later record is already cached.

        Only for partitions led and loaded here: a partition that is loading will read the
        record from its log, one that was resigned must not keep anything.
        """
        ownership = self._owned.get(partition)
        if ownership is None or not ownership.loaded:
            return
        group = self._cache.setdefault(partition, {}).setdefault(group_id, {})
        current = group.get(tp)
        if current is None or current.record_offset < record_offset:
            group[tp] = _Committed(value, record_offset)

    # -- group metadata ---------------------------------------------------------------------

    def store_group(
        self, group_id: str, value: GroupMetadataValue, callback: Callable[[Errors], None]
    ) -> None:
        """Append ``group_id``'s metadata record (acks=-1, ``offsets_commit_timeout_ms``);
        ``callback`` gets the append's error mapped by
        :func:`store_group_error_for_append_error`, exactly once, when the append completes.

        Nothing is checked here: the group coordinator stores only groups it coordinates, and
        a partition this broker no longer leads answers NOT_COORDINATOR through the append.
        """
        offsets_tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, self.partition_for(group_id))

        def on_append(responses: dict[TopicPartition, PartitionResponse]) -> None:
            callback(store_group_error_for_append_error(responses[offsets_tp].error))

        self._replica_manager.append_messages(
            self.config.offsets_commit_timeout_ms,
            -1,
            {offsets_tp: [encode_group_record(group_id, value)]},
            on_append,
            internal_topics_allowed=True,
        )

    # -- fetch ------------------------------------------------------------------------------

    def get_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> OffsetFetchResult:
        """The committed offsets of ``group_id`` for ``partitions`` (None: every partition the
        group has committed, ordered by topic and partition).

        The error is INVALID_GROUP_ID, NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS (then
        no offsets) or NONE; a partition without a commit maps to :data:`NO_OFFSET`.
        """
        error = self._group_error(group_id)
        if error is not Errors.NONE:
            return OffsetFetchResult(error, {})
        group = self._cache.get(self.partition_for(group_id), {}).get(group_id, {})
        if partitions is None:
            return OffsetFetchResult(Errors.NONE, {tp: group[tp].value for tp in sorted(group)})
        return OffsetFetchResult(
            Errors.NONE,
            {tp: group[tp].value if tp in group else NO_OFFSET for tp in partitions},
        )

    # -- leadership -------------------------------------------------------------------------

    def on_election(
        self, partition: int, on_groups_loaded: GroupsLoadedCallback | None = None
    ) -> None:
        """This broker became leader of offsets ``partition``: load its commits from the log.

        The partition is LOADING until the load runs (at once, or when the scheduler runs it),
        then ACTIVE; ``on_groups_loaded`` is then called with the partition's groups (see
        :data:`GroupsLoadedCallback`), unless the load was overtaken by a resignation. Raises
        :class:`~coordinator.errors.CorruptOffsetRecordError` from the load if the log holds a
        record this manager did not write.
        """
        self._generation += 1
        generation = self._generation
        self._owned[partition] = _Ownership(generation)
        self._cache.pop(partition, None)
        if self._scheduler is None:
            self._load(partition, generation, on_groups_loaded)
        else:
            self._scheduler(lambda: self._load(partition, generation, on_groups_loaded))

    def on_resignation(self, partition: int) -> None:
        """This broker no longer leads offsets ``partition``: forget its groups.

        Unknown partitions are ignored.
        """
        self._owned.pop(partition, None)
        self._cache.pop(partition, None)

    def _load(
        self, partition: int, generation: int, on_groups_loaded: GroupsLoadedCallback | None
    ) -> None:
        ownership = self._owned.get(partition)
        if ownership is None or ownership.generation != generation or ownership.loaded:
            return
        tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, partition)
        groups: dict[str, dict[TopicPartition, _Committed]] = {}
        metadata: dict[str, GroupMetadataValue] = {}
        next_offset = self._replica_manager.log_start_offset(tp)
        if next_offset is None:
            return  # not hosted any more: the resignation that follows cleans up
        buffer = self.config.offsets_load_buffer_size
        params = FetchParams(CONSUMER_REPLICA_ID, 0, 0, buffer, FetchIsolation.LOG_END)
        while True:
            result = self._replica_manager.read_from_local_log(
                params, {tp: PartitionFetchInfo(next_offset, buffer)}
            )[tp]
            if result.error is not Errors.NONE:
                # No longer readable as leader (a resignation follows): stay LOADING.
                return
            for batch in result.info.records:
                for index, record in enumerate(batch.records):
                    if is_group_record(record):
                        group_id, value = decode_group_record(record)
                        metadata[group_id] = value
                    else:
                        self._load_record(groups, record, batch.base_offset + index)
                next_offset = batch.next_offset
            if not result.info.records or next_offset >= result.leader_log_end_offset:
                break
        self._cache[partition] = groups
        ownership.loaded = True
        if on_groups_loaded is not None:
            on_groups_loaded(metadata)

    @staticmethod
    def _load_record(
        groups: dict[str, dict[TopicPartition, _Committed]], record: Record, record_offset: int
    ) -> None:
        key, value = decode_offset_record(record)
        groups.setdefault(key.group_id, {})[key.topic_partition] = _Committed(value, record_offset)


def _java_length(s: str) -> int:
    """Length of ``s`` in UTF-16 code units, like Java's ``String.length()``."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2

"""ReplicaManager: one broker's partitions, their logs, and the Produce and Fetch purgatories.

This is the "Replica Manager" of the Kafka API refactoring design: appending and fetching
(including waiting for replication and long-polling) live here, not in the request layer.
``apis`` calls :meth:`ReplicaManager.append_messages` and :meth:`ReplicaManager.fetch_messages`
with a response callback, and answers ListOffsets with
:meth:`ReplicaManager.fetch_offset_for_timestamp`; ``coordinator`` commits offsets with
``append_messages`` and loads them with :meth:`ReplicaManager.read_from_local_log`. Nothing
above this class touches a ``Partition`` or a ``Log`` directly.

Follower truncation is epoch based (KIP-101 / KIP-279, checked on fetch as since KIP-320 /
KIP-595): becoming a follower never truncates; the follower's fetches carry the leader epoch of
its log end (``PartitionFetchInfo.last_fetched_epoch``) and the leader answers a follower whose
log diverges from its own with a ``diverging_epoch`` instead of records, which the
:class:`~replica.replica_fetcher.ReplicaFetcher` truncates to. With clean leader elections
(from the ISR) and acks=-1 with min.insync.replicas >= 2, no acknowledged record is lost.

The fetchers, one per leader, belong to the broker's
:class:`~replica.replica_fetcher_manager.ReplicaFetcherManager`: state changes tell it which
partitions to stop fetching and which to fetch from where (Kafka's ``makeLeaders``,
``makeFollowers`` and ``stopReplicas``); :attr:`ReplicaManager.replica_fetchers` is its view of
them. The fetchers and the delayed operations see this class through small protocols
(:class:`~replica.replica_fetcher.LocalBroker`, :class:`~replica.delayed_fetch.LocalLogReader`,
:class:`~replica.delayed_produce.PartitionLookup`), so none of their modules imports this one.

Time: every method reads the injected ``clock()`` (integer milliseconds); timers fire only
when the owner calls :meth:`ReplicaManager.advance_clock`. A broker has three timers: the two
purgatories' and its scheduler (:attr:`ReplicaManager.scheduler`), one
:class:`~purgatory.TimingWheel` for its own periodic work: the ISR check while it leads a
partition, log retention and the expiry of idempotent producers' state (each a
:class:`~replica.periodic_task.PeriodicTask`) and the end
of its replica fetchers' back-offs. :meth:`ReplicaManager.next_deadline` is the earliest of the
three, found without scanning partitions or fetchers. Callbacks run synchronously, inside
the call that completed the operation (a request method, ``advance_clock`` or a state change);
every response callback runs exactly once per request, except for requests still pending at
:meth:`ReplicaManager.shutdown`, which are dropped unanswered like Kafka's.

What triggers completion of delayed operations (``check_and_complete`` on the partition key):

* a leader append: the Fetch purgatory, plus the Produce purgatory if the high watermark moved;
* a follower fetch that moves the high watermark, and an ISR shrink that moves it: both;
* a partition losing leadership (``become_leader_or_follower``, ``stop_replica``): both, after
  the state change, so the operations complete with NOT_LEADER_OR_FOLLOWER.

A partition this broker does not host is answered as Kafka's ``getPartitionOrError`` answers
it: NOT_LEADER_OR_FOLLOWER if the cluster's metadata has it (its replicas are elsewhere, or the
local one was deleted: the client must look the leader up again), UNKNOWN_TOPIC_OR_PARTITION if
not. The metadata belongs to the request layer above; the manager is told what it holds through
an injected ``metadata_contains`` callable (in a broker, the metadata cache's), so it stays
sans-IO and imports nothing from above.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from mypy_extensions import mypyc_attr

from purgatory import DelayedOperationPurgatory, TimingWheel
from replica.config import BrokerConfig
from replica.delayed_fetch import DelayedFetch, FetchPartitionStatus
from replica.delayed_produce import DelayedProduce, ProducePartitionStatus
from replica.errors import Errors
from replica.exceptions import ApiError
from replica.partition import Partition
from replica.periodic_task import PeriodicTask
from replica.records import ProducerBatchInfo, Record
from replica.replica import Replica
from replica.replica_fetcher import InitialFetchState, ReplicaFetcher
from replica.replica_fetcher_manager import ReplicaFetcherManager
from replica.session_partitions import SessionPartitions
from replica.types import (
    EMPTY_FETCH_DATA_INFO,
    INTERNAL_TOPICS,
    LOG_END_ISOLATION,
    NO_ERROR,
    UNKNOWN_OFFSET,
    FetchIsolation,
    FetchParams,
    FetchPartitionData,
    IsolationLevel,
    ListOffsetsResult,
    LogOffsetMetadata,
    LogReadResult,
    OffsetForLeaderEpochResult,
    PartitionFetchInfo,
    PartitionResponse,
    PartitionState,
    TopicPartition,
)

ProduceResponseCallback = Callable[[dict[TopicPartition, PartitionResponse]], None]
FetchResponseCallback = Callable[[dict[TopicPartition, FetchPartitionData]], None]
LeadershipChangeCallback = Callable[[list[TopicPartition], list[TopicPartition]], None]

VALID_REQUIRED_ACKS = (-1, 0, 1)


_Found = dict[TopicPartition, tuple[Partition, int, LogOffsetMetadata, Replica | None]]
"""Partitions a read found with nothing to send: the partition, its log's change marker, the
read's position and the fetching follower's replica (None for a consumer; see
:mod:`replica.session_partitions`)."""


def _record_idle(session: SessionPartitions, found: _Found) -> None:
    """A read's results were sent: the partitions it ``found`` with nothing to send are idle
    in the session (the others it read stay active)."""
    for tp, (partition, marker, end, replica) in found.items():
        session.rest(tp, partition, marker, end, replica)


def _no_metadata(_topic_partition: TopicPartition) -> bool:
    """The default metadata: it knows no partition (only hosted partitions are known)."""
    return False


@mypyc_attr(allow_interpreted_subclasses=True)  # tests override a method (compiled build)
class ReplicaManager:
    """The replica layer of broker ``broker_id``.

    ``clock()`` returns the current time in integer milliseconds; the purgatories compute
    deadlines from it and :meth:`advance_clock` must be called with times that do not go
    backwards. ``config`` applies to every partition. ``metadata_contains(tp)`` says whether
    the cluster's metadata, as this broker knows it, has partition ``tp`` (Kafka's
    ``metadataCache.contains``); it only decides the error for partitions not hosted here
    (:meth:`partition_or_error`). By default it knows none.
    """

    def __init__(
        self,
        broker_id: int,
        config: BrokerConfig,
        clock: Callable[[], int],
        *,
        metadata_contains: Callable[[TopicPartition], bool] = _no_metadata,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self._clock = clock
        self._metadata_contains = metadata_contains
        start = clock()
        self._produce_purgatory: DelayedOperationPurgatory[DelayedProduce] = (
            DelayedOperationPurgatory(
                "Produce",
                purge_interval=config.producer_purgatory_purge_interval_requests,
                clock=clock,
                start=start,
            )
        )
        self._fetch_purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory(
            "Fetch",
            purge_interval=config.fetch_purgatory_purge_interval_requests,
            clock=clock,
            start=start,
        )
        self._partitions: dict[TopicPartition, Partition] = {}
        # A live read-only view, made once: the dict is never replaced.
        self._partitions_view = MappingProxyType(self._partitions)
        self._scheduler = TimingWheel(start=start)
        self._fetcher_manager = ReplicaFetcherManager(self)
        self._isr_expiration = PeriodicTask(
            self._scheduler, max(1, config.replica_lag_time_max_ms // 2), self._maybe_shrink_isr
        )
        self._log_retention = PeriodicTask(
            self._scheduler, config.log_retention_check_interval_ms, self._delete_old_segments
        )
        self._log_retention.activate(
            config.log_retention_ms >= 0 or config.log_retention_bytes >= 0
        )
        self._producer_expiration = PeriodicTask(
            self._scheduler,
            config.producer_id_expiration_check_interval_ms,
            self._remove_expired_producers,
        )

    # -- monitoring and accessors -----------------------------------------------------------

    @property
    def produce_purgatory(self) -> DelayedOperationPurgatory[DelayedProduce]:
        """The Produce purgatory (``watched`` and ``num_delayed`` are its metrics)."""
        return self._produce_purgatory

    @property
    def clock(self) -> Callable[[], int]:
        """The injected clock (integer milliseconds) every method reads."""
        return self._clock

    @property
    def fetch_purgatory(self) -> DelayedOperationPurgatory[DelayedFetch]:
        """The Fetch purgatory (``watched`` and ``num_delayed`` are its metrics)."""
        return self._fetch_purgatory

    @property
    def partitions(self) -> Mapping[TopicPartition, Partition]:
        """Read-only view of the partitions hosted here (leader, follower or stopped)."""
        return self._partitions_view

    @property
    def scheduler(self) -> TimingWheel:
        """The broker's timer for its own periodic work (see the module docstring): advanced
        by :meth:`advance_clock`; do not advance it directly."""
        return self._scheduler

    @property
    def fetcher_manager(self) -> ReplicaFetcherManager:
        """This broker's replica fetchers (its driver pauses them and asks them for fetches
        through it; state changes here add and remove their partitions)."""
        return self._fetcher_manager

    @property
    def replica_fetchers(self) -> Mapping[int, ReplicaFetcher]:
        """Live read-only view: leader broker id -> the fetcher of the partitions followed
        from it, in leader id order (drivers start ready fetches in that order); it is the
        :attr:`ReplicaFetcherManager.fetchers` of this broker's fetcher manager.

        A fetcher is dropped once it has no partitions; look it up again after state changes.
        """
        return self._fetcher_manager.fetchers

    def get_partition(self, topic_partition: TopicPartition) -> Partition | None:
        """The hosted partition, or None if this broker has no replica of it."""
        return self._partitions.get(topic_partition)

    def partition_or_error(self, topic_partition: TopicPartition) -> Partition | Errors:
        """The hosted partition, or the error a request for it gets (Kafka's
        ``getPartitionOrError``): NOT_LEADER_OR_FOLLOWER if the metadata has the partition,
        else UNKNOWN_TOPIC_OR_PARTITION."""
        partition = self._partitions.get(topic_partition)
        if partition is not None:
            return partition
        return self._not_hosted_error(topic_partition)

    def _not_hosted_error(self, topic_partition: TopicPartition) -> Errors:
        if self._metadata_contains(topic_partition):
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.UNKNOWN_TOPIC_OR_PARTITION

    def is_leader(self, topic_partition: TopicPartition) -> bool:
        """True if this broker is the partition's leader."""
        partition = self._partitions.get(topic_partition)
        return partition is not None and partition.is_leader

    def high_watermark(self, topic_partition: TopicPartition) -> int | None:
        """The local replica's high watermark, or None if the partition is not hosted."""
        partition = self._partitions.get(topic_partition)
        return None if partition is None else partition.log.high_watermark

    def log_end_offset(self, topic_partition: TopicPartition) -> int | None:
        """The local replica's log end offset, or None if the partition is not hosted."""
        partition = self._partitions.get(topic_partition)
        return None if partition is None else partition.log.log_end_offset

    def log_start_offset(self, topic_partition: TopicPartition) -> int | None:
        """The local replica's log start offset, or None if the partition is not hosted."""
        partition = self._partitions.get(topic_partition)
        return None if partition is None else partition.log.log_start_offset

    def isr(self, topic_partition: TopicPartition) -> tuple[int, ...] | None:
        """The ISR as this broker knows it (exact on the leader), or None if not hosted."""
        partition = self._partitions.get(topic_partition)
        return None if partition is None else partition.isr

    def leader_epoch(self, topic_partition: TopicPartition) -> int | None:
        """The partition's leader epoch as this broker knows it, or None if not hosted."""
        partition = self._partitions.get(topic_partition)
        return None if partition is None else partition.leader_epoch

    # -- produce ----------------------------------------------------------------------------

    def append_messages(
        self,
        timeout_ms: int,
        required_acks: int,
        entries_per_partition: Mapping[TopicPartition, Sequence[Record]],
        response_callback: ProduceResponseCallback,
        *,
        internal_topics_allowed: bool = False,
        producers: Mapping[TopicPartition, ProducerBatchInfo] | None = None,
    ) -> None:
        """Append each partition's records, as one batch, to the local leader log.

        ``producers`` gives the idempotent producer's stamp of a partition's batch (partitions
        not in it have none): a batch repeating one of that producer's last five batches is
        not appended again and is answered with the offsets it got the first time (see
        :mod:`replica.producer_state`).

        ``response_callback`` is called exactly once with a :class:`PartitionResponse` for
        every partition of ``entries_per_partition`` (same order):

        * ``required_acks`` not in (-1, 0, 1): every partition gets INVALID_REQUIRED_ACKS and
          nothing is appended;
        * per partition errors: NOT_LEADER_OR_FOLLOWER (not the leader, or not hosted but in
          the metadata), UNKNOWN_TOPIC_OR_PARTITION (neither hosted nor in the metadata),
          INVALID_TOPIC_EXCEPTION (internal topic
          without ``internal_topics_allowed``), INVALID_RECORD (no records),
          MESSAGE_TOO_LARGE (batch > message.max.bytes), RECORD_LIST_TOO_LARGE (batch >
          log.segment.bytes), NOT_ENOUGH_REPLICAS (acks=-1 with ISR < min.insync.replicas,
          capped at the replication factor;
          checked before appending), INVALID_PRODUCER_EPOCH and
          OUT_OF_ORDER_SEQUENCE_NUMBER (a producer's batch out of its sequence);
        * acks 0 / 1, or acks -1 when no partition appended: called before this method
          returns, after the local appends;
        * acks -1: a :class:`DelayedProduce` waits (at most ``timeout_ms``, negative = 0) in the
          Produce purgatory until every appended partition's high watermark reaches its last
          offset + 1 (error NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR has shrunk
          below min.insync.replicas since; while it is below, the high watermark does not
          move), leadership is lost (NOT_LEADER_OR_FOLLOWER), or it expires
          (pending partitions get REQUEST_TIMED_OUT).

        The delayed fetches (and delayed produces when the high watermark moved) of the
        appended partitions are checked after the callback or the watch.
        """
        if required_acks not in VALID_REQUIRED_ACKS:
            response_callback(
                {
                    tp: PartitionResponse(Errors.INVALID_REQUIRED_ACKS)
                    for tp in entries_per_partition
                }
            )
            return
        now = self._clock()
        produce_status: dict[TopicPartition, ProducePartitionStatus] = {}
        hw_changes: list[tuple[TopicPartition, bool]] = []
        any_appended = False
        for tp, records in entries_per_partition.items():
            producer = None if producers is None else producers.get(tp)
            try:
                partition = self._leader_partition_for_append(tp, records, internal_topics_allowed)
                info, hw_incremented = partition.append_records_to_leader(
                    records, required_acks, now, producer
                )
            except ApiError as e:
                produce_status[tp] = ProducePartitionStatus(
                    UNKNOWN_OFFSET, PartitionResponse(e.error)
                )
                continue
            any_appended = True
            if producer is not None:
                self.note_producer_state()
            hw_changes.append((tp, hw_incremented))
            produce_status[tp] = ProducePartitionStatus(
                info.last_offset + 1,
                PartitionResponse(
                    NO_ERROR, info.first_offset, info.log_append_time, info.log_start_offset
                ),
            )
        if required_acks == -1 and any_appended:
            delayed = DelayedProduce(max(0, timeout_ms), produce_status, self, response_callback)
            self._produce_purgatory.try_complete_else_watch(delayed, list(produce_status))
        else:
            response_callback({tp: s.final_response() for tp, s in produce_status.items()})
        for tp, hw_incremented in hw_changes:
            if hw_incremented:
                self._produce_purgatory.check_and_complete(tp)
            self._fetch_purgatory.check_and_complete(tp)

    def _leader_partition_for_append(
        self, tp: TopicPartition, records: Sequence[Record], internal_topics_allowed: bool
    ) -> Partition:
        if tp.topic in INTERNAL_TOPICS and not internal_topics_allowed:
            raise ApiError(
                Errors.INVALID_TOPIC_EXCEPTION, f"cannot append to internal topic {tp.topic}"
            )
        partition = self._online_partition(tp)
        if not records:
            raise ApiError(Errors.INVALID_RECORD, f"no records to append to {tp}")
        return partition

    def _online_partition(self, tp: TopicPartition) -> Partition:
        partition = self._partitions.get(tp)
        if partition is None:
            raise ApiError(
                self._not_hosted_error(tp), f"broker {self.broker_id} does not host {tp}"
            )
        return partition

    # -- fetch ------------------------------------------------------------------------------

    def fetch_messages(
        self,
        replica_id: int,
        fetch_infos: Mapping[TopicPartition, PartitionFetchInfo],
        min_bytes: int,
        max_wait_ms: int,
        max_bytes: int,
        isolation: IsolationLevel,
        response_callback: FetchResponseCallback,
        *,
        session: SessionPartitions | None = None,
    ) -> None:
        """Read from the leader logs, waiting up to ``max_wait_ms`` for ``min_bytes``.

        ``replica_id >= 0`` is a follower broker: it reads up to the log end offset (so
        ``isolation`` is ignored) and its fetch offset becomes that follower's log end offset
        on the leader, which may expand the ISR and move the high watermark (then delayed
        produces and fetches of the partition are checked). A negative ``replica_id`` is a
        consumer: it reads up to the high watermark (READ_COMMITTED reads up to the last
        stable offset, which equals the high watermark: there are no transactions).

        ``max_bytes`` bounds the whole response and each partition's ``max_bytes`` its share;
        the first partition with data returns at least one whole batch even if larger.

        A partition whose ``last_fetched_epoch`` is set is first checked against the leader's
        leader-epoch cache (:meth:`Partition.diverging_epoch`): if the fetcher's log diverges
        from the leader's, the partition is answered with error NONE, no records and a
        ``diverging_epoch``, and a follower's position is not recorded. The check is O(1) for
        a follower in the leader's current epoch, O(log epochs) otherwise, and skipped when
        ``last_fetched_epoch`` is None.

        ``session`` holds a fetch session's partitions (see :mod:`replica.session_partitions`);
        then ``fetch_infos`` are (some of) its active ones. Its idle partitions whose log
        changed are woken and read too; the others are left out of
        the response (they have no news), and a follower's fetch of one is recorded without a
        read (:meth:`Replica.record_idle_fetch`). A waiting fetch is watched
        under them too, and completes when one of them gets what it waits for.

        ``response_callback`` is called exactly once with a :class:`FetchPartitionData` per
        partition read (the requested ones and, in a session, the woken ones): at once if
        ``max_wait_ms <= 0``, nothing was requested (and no idle session partition is left to
        wait on), at least ``min_bytes`` are available, or any partition has an error or a
        diverging epoch; otherwise when a :class:`DelayedFetch` completes (see there) or
        expires, and the data is read at that time. Per partition errors:
        UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER (not hosted, see
        :meth:`partition_or_error`), NOT_LEADER_OR_FOLLOWER (not the leader),
        OFFSET_OUT_OF_RANGE (fetch offset outside [log start, log end], or a
        ``last_fetched_epoch`` newer than any epoch of the leader's log), FENCED_LEADER_EPOCH /
        UNKNOWN_LEADER_EPOCH (``current_leader_epoch`` older / newer than the leader's),
        INVALID_REQUEST (negative partition ``max_bytes`` or ``last_fetched_epoch``); for a
        fetch from a broker that is not an assigned replica, UNKNOWN_LEADER_EPOCH (the fetch
        has a ``current_leader_epoch``) or NOT_LEADER_OR_FOLLOWER (Kafka 3.3+; see
        :meth:`Partition.check_follower_fetch`).
        """
        if replica_id >= 0:
            fetch_isolation = LOG_END_ISOLATION
        elif isolation == IsolationLevel.READ_COMMITTED:
            fetch_isolation = FetchIsolation.TXN_COMMITTED
        else:
            fetch_isolation = FetchIsolation.HIGH_WATERMARK
        params = FetchParams(replica_id, max_wait_ms, min_bytes, max_bytes, fetch_isolation)
        if session is not None:
            woken = self._wake_changed(session, replica_id)
            if woken:
                fetch_infos = session.in_order({**fetch_infos, **woken})
        found: _Found | None = None if session is None else {}
        results = self._read_partitions(params, fetch_infos, found)
        if replica_id >= 0:
            self._update_follower_fetch_state(replica_id, fetch_infos, results)
        bytes_readable = 0
        answer_now = False
        for result in results.values():
            bytes_readable += result.info.records_size
            if result.error is not NO_ERROR or result.diverging_epoch is not None:
                answer_now = True
        waits_on_idle = session is not None and bool(session.idle)
        if (
            max_wait_ms <= 0
            or not (fetch_infos or waits_on_idle)
            or bytes_readable >= min_bytes
            or answer_now
        ):
            if session is not None and found is not None:
                _record_idle(session, found)
            to_follower = replica_id >= 0
            response_callback(
                {tp: r.to_fetch_partition_data(to_follower) for tp, r in results.items()}
            )
            return
        status: dict[TopicPartition, FetchPartitionStatus] = {
            tp: (result.info.fetch_offset_metadata, fetch_infos[tp])
            for tp, result in results.items()
        }
        delayed = DelayedFetch(max_wait_ms, params, status, self, response_callback, session)
        keys: list[TopicPartition] = list(status)
        if session is not None:
            keys.extend(session.idle)
        self._fetch_purgatory.try_complete_else_watch(delayed, keys)

    def read_from_local_log(
        self,
        params: FetchParams,
        fetch_infos: Mapping[TopicPartition, PartitionFetchInfo],
        session: SessionPartitions | None = None,
    ) -> dict[TopicPartition, LogReadResult]:
        """Read each partition from its local leader log, now, without waiting.

        The reads follow ``params.isolation`` and share ``params.max_bytes``; the first
        partition that has data returns at least one whole batch. Only the leader can be read
        (NOT_LEADER_OR_FOLLOWER otherwise), and for a follower's fetch (``params.replica_id >=
        0``) only by an assigned replica. Errors are per partition (see
        :meth:`fetch_messages`); nothing raises for a bad request. The coordinator loads its
        offsets with ``FetchIsolation.LOG_END`` reads.

        ``session`` (an incremental fetch session's partitions, see
        :mod:`replica.session_partitions`): its idle partitions whose log changed since they
        went idle are woken and read with ``fetch_infos`` (in the session's order); the others
        are not read (the read would return what the read that found them idle did, which the
        session's last response carried). The results are taken as sent: the partitions read
        that have nothing to send become idle. "Nothing to send" is a read with no error, no
        diverging epoch and no records, whose fetch offset is the end offset of the fetch's
        isolation (the log end offset for a follower, which must also be in the ISR; the high
        watermark for a consumer): an empty read short of the end (the response's byte limit
        used up) still has data to send.
        """
        if session is None:
            return self._read_partitions(params, fetch_infos, None)
        woken = self._wake_changed(session, -1)
        if woken:
            fetch_infos = session.in_order({**fetch_infos, **woken})
        found: _Found = {}
        results = self._read_partitions(params, fetch_infos, found)
        _record_idle(session, found)
        return results

    def _wake_changed(
        self, session: SessionPartitions, follower_id: int
    ) -> dict[TopicPartition, PartitionFetchInfo]:
        """Wake ``session``'s idle partitions whose log changed (or that are no longer
        hosted: :meth:`stop_replica` moves a removed log's marker); return them with their
        fetch data. For a follower's fetch (``follower_id >= 0``) record its fetch of each one
        still idle, on the replica its entry keeps (:meth:`Replica.record_idle_fetch`)."""
        woken: dict[TopicPartition, PartitionFetchInfo] = {}
        idle = session.idle
        if not idle:
            return woken
        changed: list[TopicPartition] = []
        if follower_id >= 0:
            now = self._clock()
            for entry in idle.values():
                partition = entry.partition
                if partition.log.change_marker != entry.marker:
                    changed.append(partition.topic_partition)
                else:
                    replica = entry.replica
                    if replica is not None:
                        replica.record_idle_fetch(now)
        else:
            for entry in idle.values():
                partition = entry.partition
                if partition.log.change_marker != entry.marker:
                    changed.append(partition.topic_partition)
        for tp in changed:
            woken[tp] = session.wake(tp)
        return woken

    def _read_partitions(
        self,
        params: FetchParams,
        fetch_infos: Mapping[TopicPartition, PartitionFetchInfo],
        found: _Found | None,
    ) -> dict[TopicPartition, LogReadResult]:
        """Read ``fetch_infos``; the partitions found with nothing to send go to ``found`` (if
        given), with their log's marker and the read's position (``_record_idle`` applies
        them once the results are sent; the first read of a fetch that then waits is not)."""
        now = self._clock()
        limit_bytes = params.max_bytes
        min_one_message = True
        results: dict[TopicPartition, LogReadResult] = {}
        follower_id = params.replica_id
        isolation = params.isolation
        partitions = self._partitions
        for tp, fetch_info in fetch_infos.items():
            partition = partitions.get(tp)
            result = self._read(
                tp, partition, fetch_info, follower_id, isolation, limit_bytes, min_one_message, now
            )
            size = result.info.records_size
            if size > 0:
                min_one_message = False
                limit_bytes = max(0, limit_bytes - size)
            elif (
                found is not None
                and partition is not None
                and result.error is NO_ERROR
                and result.diverging_epoch is None
                and fetch_info.fetch_offset
                == (result.leader_log_end_offset if follower_id >= 0 else result.high_watermark)
                and (follower_id < 0 or follower_id in partition.isr)
            ):
                found[tp] = (
                    partition,
                    partition.log.change_marker,
                    result.info.fetch_offset_metadata,
                    partition.remote_replica(follower_id) if follower_id >= 0 else None,
                )
            results[tp] = result
        return results

    def _read(
        self,
        tp: TopicPartition,
        partition: Partition | None,
        fetch_info: PartitionFetchInfo,
        follower_id: int,
        isolation: FetchIsolation,
        limit_bytes: int,
        min_one_message: bool,
        now: int,
    ) -> LogReadResult:
        """One partition of :meth:`read_from_local_log`; ``follower_id`` is the fetching
        follower's broker id (negative: a consumer, or the coordinator); ``partition`` the
        hosted partition ``tp`` (None: not hosted)."""
        try:
            if partition is None:
                raise ApiError(self._not_hosted_error(tp), f"{tp} is not hosted here")
            if fetch_info.max_bytes < 0:
                raise ApiError(Errors.INVALID_REQUEST, f"negative max_bytes for {tp}")
            if follower_id >= 0:
                partition.check_follower_fetch(follower_id, fetch_info.current_leader_epoch)
            log = partition.log
            last_fetched_epoch = fetch_info.last_fetched_epoch
            # Skipped without an epoch, and for a fetch in the current epoch up to the log end
            # (a follower in sync): that never diverges, and read_records raises the same
            # fencing and leadership errors diverging_epoch would.
            if last_fetched_epoch is not None and (
                last_fetched_epoch != partition.leader_epoch
                or fetch_info.fetch_offset > log.log_end_offset
            ):
                if last_fetched_epoch < 0:
                    raise ApiError(Errors.INVALID_REQUEST, f"negative last_fetched_epoch for {tp}")
                diverging = partition.diverging_epoch(
                    fetch_info.current_leader_epoch, last_fetched_epoch, fetch_info.fetch_offset
                )
                if diverging is not None:
                    hw = log.high_watermark
                    return LogReadResult(
                        EMPTY_FETCH_DATA_INFO,
                        hw,
                        log.log_start_offset,
                        log.log_end_offset,
                        hw,
                        now,
                        diverging_epoch=diverging,
                    )
            max_bytes = min(fetch_info.max_bytes, limit_bytes)
            if follower_id >= 0:  # check_follower_fetch made read_records' checks already
                data = log.read(fetch_info.fetch_offset, max_bytes, isolation, min_one_message)
            else:
                data = partition.read_records(
                    fetch_info.fetch_offset,
                    fetch_info.current_leader_epoch,
                    max_bytes,
                    isolation,
                    min_one_message,
                )
        except ApiError as e:
            if partition is None:
                return LogReadResult(
                    EMPTY_FETCH_DATA_INFO,
                    UNKNOWN_OFFSET,
                    UNKNOWN_OFFSET,
                    UNKNOWN_OFFSET,
                    UNKNOWN_OFFSET,
                    now,
                    e.error,
                )
            log = partition.log
            return LogReadResult(
                EMPTY_FETCH_DATA_INFO,
                log.high_watermark,
                log.log_start_offset,
                log.log_end_offset,
                log.high_watermark,
                now,
                e.error,
            )
        hw = log.high_watermark
        return LogReadResult(data, hw, log.log_start_offset, log.log_end_offset, hw, now)

    def _update_follower_fetch_state(
        self,
        follower_id: int,
        fetch_infos: Mapping[TopicPartition, PartitionFetchInfo],
        results: Mapping[TopicPartition, LogReadResult],
    ) -> None:
        """Record a follower's fetch position on the leader.

        A failed read records nothing (a fetch from a broker that is not an assigned replica
        fails, see :meth:`Partition.check_follower_fetch`), nor does a diverging fetch: its
        fetch offset is not a position in this log. (A session's idle partitions are recorded
        by :meth:`_wake_changed`.)
        """
        for tp, result in results.items():
            if result.error is not NO_ERROR or result.diverging_epoch is not None:
                continue
            hw_incremented = self._partitions[tp].update_follower_fetch_state(
                follower_id,
                result.info.fetch_offset_metadata,
                fetch_infos[tp].log_start_offset,
                result.fetch_time_ms,
                result.leader_log_end_offset,
            )
            if hw_incremented:
                self._complete_delayed_requests(tp)

    def _complete_delayed_requests(self, tp: TopicPartition) -> None:
        self._produce_purgatory.check_and_complete(tp)
        self._fetch_purgatory.check_and_complete(tp)

    # -- list offsets -----------------------------------------------------------------------

    def fetch_offset_for_timestamp(
        self,
        topic_partition: TopicPartition,
        timestamp: int,
        *,
        isolation: IsolationLevel | None,
        current_leader_epoch: int | None = None,
    ) -> ListOffsetsResult:
        """Answer one partition of a ListOffsets request, now (Kafka's
        ``Partition.fetchOffsetForTimestamp``; see :meth:`Partition.fetch_offset_for_timestamp`).

        ``timestamp`` is -1 (LATEST: the high watermark for a consumer, READ_UNCOMMITTED or
        READ_COMMITTED; the log end offset for ``isolation=None``, a replica asking), -2
        (EARLIEST: the log start offset), or >= 0 (the first offset whose record timestamp is
        >= it, below that same bound; offset -1 and timestamp -1 if there is none).

        Errors come back in the result, never raised: UNKNOWN_TOPIC_OR_PARTITION /
        NOT_LEADER_OR_FOLLOWER (not hosted, see :meth:`partition_or_error`),
        NOT_LEADER_OR_FOLLOWER (not the leader), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
        (``current_leader_epoch`` older / newer than the leader's), INVALID_REQUEST (any other
        negative timestamp), OFFSET_NOT_AVAILABLE (a consumer's lookup while a new leader's
        high watermark is still below the start of its epoch; retriable).
        """
        partition = self.partition_or_error(topic_partition)
        if isinstance(partition, Errors):
            return ListOffsetsResult(partition)
        try:
            return partition.fetch_offset_for_timestamp(timestamp, isolation, current_leader_epoch)
        except ApiError as e:
            return ListOffsetsResult(e.error)

    def last_offset_for_leader_epoch(
        self,
        topic_partition: TopicPartition,
        leader_epoch: int,
        *,
        current_leader_epoch: int | None = None,
        fetch_only_from_leader: bool = True,
    ) -> OffsetForLeaderEpochResult:
        """Answer one partition of an OffsetForLeaderEpoch request, now (Kafka's
        ``lastOffsetForLeaderEpoch``; see :meth:`Partition.last_offset_for_leader_epoch`).
        ``fetch_only_from_leader`` is False only for Kafka's debugging replica id, which any
        replica answers.

        Errors come back in the result, never raised: UNKNOWN_TOPIC_OR_PARTITION /
        NOT_LEADER_OR_FOLLOWER (not hosted, see :meth:`partition_or_error`), and the
        partition's (not the leader, a fenced or unknown ``current_leader_epoch``).
        """
        partition = self.partition_or_error(topic_partition)
        if isinstance(partition, Errors):
            return OffsetForLeaderEpochResult(partition)
        try:
            return partition.last_offset_for_leader_epoch(
                current_leader_epoch, leader_epoch, fetch_only_from_leader
            )
        except ApiError as e:
            return OffsetForLeaderEpochResult(e.error)

    # -- state changes ----------------------------------------------------------------------

    def become_leader_or_follower(
        self,
        partition_states: Mapping[TopicPartition, PartitionState],
        on_leadership_change: LeadershipChangeCallback | None = None,
    ) -> dict[TopicPartition, Errors]:
        """Apply the controller's partition states (Kafka's LeaderAndIsr request).

        For each partition (created, with an empty log, if not hosted yet):

        * ``leader_epoch`` not newer than the known epoch: ignored, STALE_CONTROLLER_EPOCH;
        * this broker not in ``replicas``: ignored, UNKNOWN_TOPIC_OR_PARTITION;
        * ``leader == broker_id``: becomes (or stays) leader with the given ISR; it stops
          fetching the partition; a new leader starts with unknown follower positions;
        * otherwise: becomes a follower of ``leader`` (``-1``: no leader, nothing fetched).
          On a leader or epoch change it fetches from the new leader from its log end offset,
          without truncating: its fetches carry its last fetched epoch and the leader answers
          with a diverging epoch if their logs differ (see :meth:`fetch_messages`), which the
          fetcher truncates to.

        Afterwards the delayed operations of the partitions led here (whose high watermark
        may have moved with the new ISR) and of those that became followers are checked, so
        the latter complete with NOT_LEADER_OR_FOLLOWER; then ``on_leadership_change(new_leaders,
        new_followers)`` is called with the partitions whose role or leader changed (Kafka's
        hook for the group coordinator). Returns the per-partition error codes.
        """
        now = self._clock()
        errors: dict[TopicPartition, Errors] = {}
        leaders: dict[TopicPartition, PartitionState] = {}
        followers: dict[TopicPartition, PartitionState] = {}
        for tp, state in partition_states.items():
            partition = self._partitions.get(tp)
            if partition is not None and state.leader_epoch <= partition.leader_epoch:
                errors[tp] = Errors.STALE_CONTROLLER_EPOCH
                continue
            if self.broker_id not in state.replicas:
                errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            if partition is None:
                self._partitions[tp] = Partition(tp, self.broker_id, self.config)
            errors[tp] = Errors.NONE
            if state.leader == self.broker_id:
                leaders[tp] = state
            else:
                followers[tp] = state
        new_leaders = self._make_leaders(leaders, now)
        new_followers = self._make_followers(followers, now)
        self._isr_expiration.activate(self._leads_a_partition())
        for tp in (*leaders, *new_followers):
            self._complete_delayed_requests(tp)
        if on_leadership_change is not None:
            on_leadership_change(new_leaders, new_followers)
        return errors

    def _make_leaders(
        self, states: Mapping[TopicPartition, PartitionState], now: int
    ) -> list[TopicPartition]:
        self._fetcher_manager.remove_fetcher_for_partitions(states)
        return [tp for tp, state in states.items() if self._partitions[tp].make_leader(state, now)]

    def _make_followers(
        self, states: Mapping[TopicPartition, PartitionState], now: int
    ) -> list[TopicPartition]:
        changed = [
            tp for tp, state in states.items() if self._partitions[tp].make_follower(state, now)
        ]
        self._fetcher_manager.remove_fetcher_for_partitions(changed)
        to_fetch: dict[TopicPartition, tuple[int, InitialFetchState]] = {}
        for tp in changed:
            partition = self._partitions[tp]
            leader = states[tp].leader
            if leader >= 0:
                to_fetch[tp] = (
                    leader,
                    InitialFetchState(partition.log.log_end_offset, partition.leader_epoch),
                )
        self._fetcher_manager.add_fetcher_for_partitions(to_fetch)
        return changed

    def stop_replica(self, topic_partition: TopicPartition, delete: bool) -> Errors:
        """Stop the local replica (Kafka's StopReplica request); always returns NONE.

        It stops fetching and is neither leader nor follower any more: requests for it get
        NOT_LEADER_OR_FOLLOWER. With ``delete`` the partition and its log are removed (requests
        then get the error of a partition not hosted, see :meth:`partition_or_error`);
        otherwise the log and leader epoch are kept for a later
        :meth:`become_leader_or_follower`. Delayed operations of the partition are
        checked afterwards, so they complete with that error. Unknown partitions are ignored.
        """
        self._fetcher_manager.remove_fetcher_for_partitions([topic_partition])
        partition = self._partitions.get(topic_partition)
        if partition is None:
            return Errors.NONE
        if delete:
            del self._partitions[topic_partition]
            partition.log.mark_changed()  # fetch sessions holding it idle wake it (and fail)
        else:
            partition.stop()
        self._isr_expiration.activate(self._leads_a_partition())
        self._complete_delayed_requests(topic_partition)
        return Errors.NONE

    def _leads_a_partition(self) -> bool:
        return any(p.is_leader for p in self._partitions.values())

    # -- time -------------------------------------------------------------------------------

    def advance_clock(self, now_ms: int) -> int:
        """Move time to ``now_ms``: advance the scheduler (the ISR check when due; fetchers
        whose back-off ended become ready), then expire the delayed produces and fetches whose
        deadline has passed. Returns how many delayed operations expired.

        The ISR check runs every ``replica.lag.time.max.ms / 2`` (Kafka's isr-expiration
        task): leaders drop followers that have not caught up for replica.lag.time.max.ms,
        and if that moves a high watermark the partition's delayed operations are checked.
        Log retention runs every ``log.retention.check.interval.ms`` (Kafka's
        kafka-log-retention task) on every hosted replica, leader or follower, while a
        retention limit is set: see :meth:`replica.log.Log.delete_old_segments` (the fetchers
        are told of followed logs whose start moved: :meth:`ReplicaFetcher.log_changed`). Producer
        state expiry runs every ``producer.id.expiration.check.interval.ms`` while a hosted
        log holds an idempotent producer's state (see :meth:`note_producer_state`).

        Raises:
            purgatory.ClockWentBackwardsError: ``now_ms`` is earlier than a previous call's.
        """
        self._isr_expiration.advance_parked(now_ms)
        self._log_retention.advance_parked(now_ms)
        self._producer_expiration.advance_parked(now_ms)
        self._scheduler.advance(now_ms)
        return self._produce_purgatory.advance_clock(now_ms) + self._fetch_purgatory.advance_clock(
            now_ms
        )

    def _maybe_shrink_isr(self, now_ms: int) -> None:
        for tp, partition in list(self._partitions.items()):
            if partition.is_leader and partition.maybe_shrink_isr(now_ms):
                self._complete_delayed_requests(tp)

    def note_producer_state(self) -> None:
        """A hosted log has (maybe) taken an idempotent producer's batch: from now on expire
        producer state every ``producer.id.expiration.check.interval.ms`` (the task parks
        again once no hosted log has any)."""
        self._producer_expiration.activate(True)

    def _remove_expired_producers(self, now_ms: int) -> None:
        expiration_ms = self.config.producer_id_expiration_ms
        remaining = 0
        for partition in self._partitions.values():
            log = partition.log
            log.remove_expired_producers(now_ms, expiration_ms)
            remaining += len(log.producer_state)
        self._producer_expiration.activate(remaining > 0)

    def _delete_old_segments(self, now_ms: int) -> None:
        config = self.config
        moved: list[TopicPartition] = []  # followed logs whose start moved: fetchers are told
        for tp, partition in self._partitions.items():
            log = partition.log
            start = log.log_start_offset
            log.delete_old_segments(now_ms, config.log_retention_ms, config.log_retention_bytes)
            if log.log_start_offset != start:
                moved.append(tp)
        if moved:
            self._fetcher_manager.log_changed(moved)

    def next_deadline(self) -> int | None:
        """The earliest time this broker has work: a delayed operation's deadline, the next
        ISR check (only while this broker leads a partition) or the end of a replica
        fetcher's back-off (a time in the past: a fetcher is ready now). None: nothing is
        scheduled."""
        # Asked after every request a broker handles: no list, no generator.
        deadline = self._scheduler.next_deadline()
        for candidate in (
            self._produce_purgatory.timer.next_deadline(),
            self._fetch_purgatory.timer.next_deadline(),
        ):
            if candidate is not None and (deadline is None or candidate < deadline):
                deadline = candidate
        return deadline

    def shutdown(self) -> None:
        """Stop: drop pending delayed operations unanswered (as Kafka does) and all fetchers.

        Afterwards ``append_messages`` and ``fetch_messages`` that would wait raise
        ``purgatory.PurgatoryShutdownError``.
        """
        self._produce_purgatory.shutdown()
        self._fetch_purgatory.shutdown()
        self._fetcher_manager.shutdown()

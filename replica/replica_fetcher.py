"""ReplicaFetcher: what a follower broker does for the partitions it follows from one leader.

Sans-IO, like h11: the fetcher builds a fetch request (:meth:`ReplicaFetcher.build_fetch_request`)
and is handed the leader's answer (:meth:`ReplicaFetcher.handle_fetch_response`); whoever
drives it carries the request to the leader. The request is a :class:`ReplicaFetchRequest`
whose fields are exactly the arguments of the leader's
:meth:`~replica.replica_manager.ReplicaManager.fetch_messages`, and the response is what that
method's callback receives, so the fetcher depends on nothing above ``replica`` (the layering
forbids ``apis``). Wiring two brokers directly::

    request = follower_fetcher.build_fetch_request(now)
    if request is not None:
        leader.fetch_messages(request.replica_id, request.fetch_infos, request.min_bytes,
                              request.max_wait_ms, request.max_bytes,
                              IsolationLevel.READ_UNCOMMITTED,
                              lambda response: follower_fetcher.handle_fetch_response(
                                  response, clock()))

One fetch is in flight at a time (Kafka's fetcher thread). Each partition's fetch carries the
leader epoch of the local log's end (``last_fetched_epoch``, from the log's leader-epoch cache;
None for a log without epochs). Responses are applied through the local replica: batches are
appended to the follower's log, the follower's high watermark becomes ``min(leader high
watermark, local log end offset)``.

A response with a ``diverging_epoch`` ``(E, end)`` (the leader's largest epoch <= the
follower's last fetched epoch, and where it ends on the leader) truncates the local log, as
Kafka's ``AbstractFetcherThread`` does after KIP-279, and leaves the high watermark alone until
the next response:

* if the local log has epoch ``E`` (or only epochs newer than ``E``: ``E`` then ends where the
  first local epoch starts): truncate to ``min(end, local end offset of E, local log end
  offset)``;
* if it has epochs below and above ``E`` but not ``E``: truncate to the local end offset of
  its largest epoch below ``E`` (never past the log end) and fetch again: the next fetch
  carries that smaller epoch, and the leader answers for it;
* if it has no epoch at all, or only epochs older than ``E`` (a real leader never answers
  that: ``E`` is at most the follower's last fetched epoch): truncate to ``min(end, local log
  end offset)``.

Truncating never removes committed records: a leader elected from the ISR holds them all, so
every epoch that wrote them ends at or after them on the leader.

Errors, per partition:

* OFFSET_OUT_OF_RANGE: if the follower's log end offset is past the leader's, truncate to the
  leader's log end offset; if it is behind the leader's log start offset, empty the log and
  restart at the leader's log start offset (Kafka's ``fetchOffsetAndTruncate``). The leader's
  offsets come with the response (``FetchPartitionData.log_end_offset`` /
  ``log_start_offset``) where Kafka's follower asks for them with ListOffsets requests.
* FENCED_LEADER_EPOCH: the follower's view of the partition is stale; it stops fetching the
  partition until the next metadata change re-adds it (``add_partitions``).
* anything else (NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION,
  ...): the partition is left alone for replica.fetch.backoff.ms, or until a metadata change
  re-adds it, whichever comes first.

Fetch sessions (KIP-227): the fetcher keeps a session with its leader
(:class:`~replica.fetch_session_handler.FetchSessionHandler`); each request says both what
the leader fetches (``fetch_infos``) and what travels in the session (the partitions added or
changed since the last fetch, the ones dropped). A response then lists only the partitions
with news; the others need nothing done. A failed fetch or a session error makes the next
fetch full. Wired directly to ``fetch_messages`` (no session on the leader) every fetch is
full.

The change feed: building a request costs in proportion to the partitions whose fetch data
may have changed, not to the partitions followed (most of which, ``__consumer_offsets``
among them, have nothing new). The fetcher keeps the last request's fetch data and the set
of its partitions a response has touched since (records appended, a truncation, a high
watermark or log start offset taken); the next request copies the last one's fetch data,
rebuilds those partitions' (keeping the very object of one whose value is the same) and hands
them to :meth:`~replica.fetch_session_handler.FetchSessionHandler.build_changed`. Only when
the partitions to fetch may differ (partitions added or removed, a back-off started or
ended, replica.fetch.max.bytes changed) does a request walk every partition, as a full diff
(:meth:`~replica.fetch_session_handler.FetchSessionHandler.build`). Either way the request
is the same: the same fetch data, the same partitions in the session's part, in the same
order. A followed log changed by anything else than this fetcher's responses, e.g. retention
moving its start, is reported with :meth:`ReplicaFetcher.log_changed` (the
:class:`~replica.replica_manager.ReplicaManager` does). :meth:`~ReplicaFetcher.next_fetch_time_ms`
is kept the same way: recomputed over the partitions only when a back-off or the partitions
change.

Waking up: while nothing is in flight, a fetcher's next fetch is due at the earliest
``ready_at_ms`` of its partitions (at once unless they all back off). The fetcher keeps one
timer task on its broker's scheduler (the :class:`~purgatory.TimingWheel` of the broker's own
periodic work) at that time, re-armed by every call that changes it, so the broker's driver
learns when to wake up from the scheduler's next deadline instead of asking every fetcher. The
task does nothing when it fires: waking the broker is its purpose; the driver then asks the
ready fetchers for their requests. A paused or dropped fetcher keeps no task
(:meth:`~ReplicaFetcher.stop_waking`).

Fetchers are created and dropped, one per leader, by the follower's
:class:`~replica.replica_fetcher_manager.ReplicaFetcherManager`. Of the follower's
:class:`~replica.replica_manager.ReplicaManager` a fetcher uses its broker id, its
configuration, its partitions (looked up one by one) and its scheduler, stated by the
:class:`LocalBroker` protocol; this module does not import the manager.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from purgatory import TimerTask, TimingWheel
from replica.config import BrokerConfig
from replica.errors import Errors
from replica.exceptions import ReplicaArgumentError
from replica.fetch_session_handler import (
    INVALID_SESSION_ID,
    FetchRequestData,
    FetchSessionHandler,
)
from replica.leader_epoch_cache import UNDEFINED_EPOCH_OFFSET
from replica.partition import Partition
from replica.types import (
    NO_ERROR,
    UNKNOWN_OFFSET,
    EpochEndOffset,
    FetchPartitionData,
    PartitionFetchInfo,
    TopicPartition,
)


class LocalBroker(Protocol):
    """The follower broker, as its fetchers see it (the ReplicaManager)."""

    @property
    def broker_id(self) -> int:
        """The follower's id: the ``replica_id`` of its fetches."""

    @property
    def config(self) -> BrokerConfig:
        """The replica.fetch.* settings of the fetches."""

    def get_partition(self, topic_partition: TopicPartition) -> Partition | None:
        """The hosted partition (the log fetched into), or None if there is none. Asked when
        the partition is added to a fetcher, whose answer it keeps while it follows it: the
        broker stops a partition's fetch before it deletes the partition, and adds it again
        after hosting a new one."""

    @property
    def scheduler(self) -> TimingWheel:
        """The broker's timer for its own periodic work (ms): where back-offs end."""

    def note_producer_state(self) -> None:
        """A fetched batch of an idempotent producer was appended: its state must expire."""


@attrs.define(frozen=True)
class InitialFetchState:
    """Where to start fetching a partition, and the leader epoch the follower knows."""

    fetch_offset: int
    current_leader_epoch: int


class PartitionFetchState:
    """A followed partition: the next offset to fetch and when it may be fetched again.

    A plain class (native in the compiled build): every fetch reads it for every partition."""

    __slots__ = ("current_leader_epoch", "fetch_info", "fetch_info_marker", "fetch_offset",
                 "partition", "ready_at_ms")  # fmt: skip

    def __init__(
        self,
        fetch_offset: int,
        current_leader_epoch: int,
        ready_at_ms: int = 0,
        partition: Partition | None = None,
    ) -> None:
        self.fetch_offset = fetch_offset
        self.current_leader_epoch = current_leader_epoch
        #: The local partition fetched into (None: not hosted), looked up once, when added.
        self.partition = partition
        #: The partition is left out of requests before this time (after an error).
        self.ready_at_ms = ready_at_ms
        #: The partition's part of the last request built, and the local log's change marker
        #: then (-1: not hosted): the next request reuses the object while its value is the
        #: same, and checks the value only when this state or the log changed.
        self.fetch_info: PartitionFetchInfo | None = None
        self.fetch_info_marker = -1

    def __repr__(self) -> str:
        return (
            f"PartitionFetchState(fetch_offset={self.fetch_offset}, "
            f"current_leader_epoch={self.current_leader_epoch}, ready_at_ms={self.ready_at_ms})"
        )


class ReplicaFetchRequest:
    """A follower's fetch: the arguments of the leader's ``ReplicaManager.fetch_messages``
    (``fetch_infos``: every partition to fetch), and the same fetch in the fetcher's session
    with the leader (``session``: what a Fetch request carries on the wire, see
    :mod:`replica.fetch_session_handler`). Read-only (a plain class: one per fetch)."""

    __slots__ = ("fetch_infos", "max_bytes", "max_wait_ms", "min_bytes", "replica_id", "session")

    def __init__(
        self,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        fetch_infos: Mapping[TopicPartition, PartitionFetchInfo],
        session: FetchRequestData,
    ) -> None:
        self.replica_id = replica_id
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.fetch_infos = fetch_infos
        self.session = session

    def __repr__(self) -> str:
        return (
            f"ReplicaFetchRequest(replica_id={self.replica_id}, max_wait_ms={self.max_wait_ms}, "
            f"min_bytes={self.min_bytes}, max_bytes={self.max_bytes}, "
            f"fetch_infos={self.fetch_infos!r}, session={self.session!r})"
        )


class _NextFetchDue(TimerTask):
    """A fetcher's wake-up on its broker's scheduler: firing is all it does."""

    __slots__ = ()

    def run(self) -> None:
        pass


class ReplicaFetcher:
    """Fetches, for the local ``replica_manager``, the partitions it follows from ``leader_id``."""

    def __init__(self, replica_manager: LocalBroker, leader_id: int) -> None:
        self.replica_manager = replica_manager
        self.leader_id = leader_id
        self._states: dict[TopicPartition, PartitionFetchState] = {}
        self._in_flight: ReplicaFetchRequest | None = None
        self._next_fetch_due = _NextFetchDue()
        self._next_fetch_ms: int | None = None  # next_fetch_time_ms(), kept by _rearm
        self._waking = True
        self._session = FetchSessionHandler()
        # The change feed (see the module docstring). The last request's fetch data (its
        # partitions in the order of ``_states``) and each one's place in it:
        self._fetch_infos: dict[TopicPartition, PartitionFetchInfo] = {}
        self._places: dict[TopicPartition, int] = {}
        # Its partitions whose fetch data may have changed since it was built:
        self._changed: set[TopicPartition] = set()
        # Whether the next request must walk every partition: the partitions to fetch may
        # differ (added, removed, backing off; configuration changed):
        self._walk = True
        self._walked_max_bytes = -1  # replica.fetch.max.bytes at the last walk
        self._waiting_until: int | None = None  # the earliest back-off end the walk left out
        self._earliest_ready_ms = 0  # the earliest ready_at_ms of the partitions

    def __repr__(self) -> str:
        return (
            f"ReplicaFetcher(broker={self.replica_manager.broker_id}, leader={self.leader_id}, "
            f"partitions={len(self._states)}, in_flight={self._in_flight is not None})"
        )

    @property
    def partition_states(self) -> Mapping[TopicPartition, PartitionFetchState]:
        """The followed partitions and their fetch state (read only)."""
        return self._states

    @property
    def in_flight(self) -> ReplicaFetchRequest | None:
        """The request awaiting a response, if any."""
        return self._in_flight

    def add_partitions(self, initial_states: Mapping[TopicPartition, InitialFetchState]) -> None:
        """Start (or restart, forgetting any back-off) fetching these partitions."""
        get_partition = self.replica_manager.get_partition
        for tp, initial in initial_states.items():
            self._states[tp] = PartitionFetchState(
                initial.fetch_offset, initial.current_leader_epoch, partition=get_partition(tp)
            )
        self._states_changed()

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop fetching these partitions (unknown ones are ignored). A response still in
        flight for them is ignored when it arrives."""
        for tp in partitions:
            self._states.pop(tp, None)
        self._states_changed()

    def log_changed(self, partitions: Iterable[TopicPartition]) -> None:
        """The local logs of these partitions changed other than through this fetcher's
        responses (their log start offset or leader epochs may have moved, e.g. retention
        deleted segments): their next fetch data is built afresh. Unknown ones are ignored."""
        fetch_infos = self._fetch_infos
        for tp in partitions:
            if tp in fetch_infos:
                self._changed.add(tp)

    def _states_changed(self) -> None:
        """Partitions were added or removed or their ``ready_at_ms`` moved: the next request
        walks them all, and the wake-up moves."""
        self._walk = True
        states = self._states
        self._earliest_ready_ms = min([s.ready_at_ms for s in states.values()]) if states else 0
        self._rearm()

    def next_fetch_time_ms(self) -> int | None:
        """The earliest time :meth:`build_fetch_request` returns a request (a time in the
        past means now), or None while a fetch is in flight or nothing is followed. Kept up to
        date by every call that changes it (drivers ask at every settle)."""
        return self._next_fetch_ms

    def stop_waking(self) -> None:
        """Keep no wake-up on the scheduler until :meth:`start_waking` (the fetcher is paused
        or dropped)."""
        self._waking = False
        self._next_fetch_due.cancel()

    def start_waking(self) -> None:
        """Keep a wake-up on the scheduler at :meth:`next_fetch_time_ms` again."""
        self._waking = True
        self._rearm()

    def _rearm(self) -> None:
        """Recompute :meth:`next_fetch_time_ms` and put the wake-up there (or remove it if
        there is none, or the fetcher is not waking the broker)."""
        if self._in_flight is not None or not self._states:
            self._next_fetch_ms = None
        else:
            self._next_fetch_ms = self._earliest_ready_ms
        task = self._next_fetch_due
        due = self._next_fetch_ms if self._waking else None
        if due is None:
            task.cancel()
        elif not task.scheduled or task.deadline != due:
            self.replica_manager.scheduler.reschedule(task, due)

    def build_fetch_request(self, now_ms: int) -> ReplicaFetchRequest | None:
        """The next fetch for every partition not backing off at ``now_ms``, or None if a
        fetch is in flight or no partition is ready. The request counts as in flight until
        :meth:`handle_fetch_response` or :meth:`handle_fetch_failure`.

        Uses replica.fetch.wait.max.ms, replica.fetch.min.bytes,
        replica.fetch.response.max.bytes, and replica.fetch.max.bytes per partition; each
        partition carries the local log's start offset and latest leader epoch. Walks every
        partition only when the partitions to fetch may differ from the last request's (see
        the module docstring); otherwise rebuilds the fetch data of those that changed.
        """
        if self._in_flight is not None:
            return None
        config = self.replica_manager.config
        partition_max_bytes = config.replica_fetch_max_bytes
        waiting_until = self._waiting_until
        if (
            self._walk
            or partition_max_bytes != self._walked_max_bytes
            or (waiting_until is not None and waiting_until <= now_ms)
        ):
            fetch_infos = self._walk_partitions(now_ms, partition_max_bytes)
            if not fetch_infos:
                return None
            session = self._session.build(fetch_infos)
        else:
            fetch_infos = self._fetch_infos
            if not fetch_infos:
                return None
            changed = self._changed
            if len(changed) > 1:
                places = self._places
                order: Iterable[TopicPartition] = [
                    tp for _, tp in sorted([(places[tp], tp) for tp in changed])
                ]
            else:
                order = changed
            if changed:
                fetch_infos = dict(fetch_infos)  # the last request's stays as it was sent
                states = self._states
                for tp in order:
                    fetch_infos[tp] = self._fetch_info(states[tp], partition_max_bytes)
                self._fetch_infos = fetch_infos
            session = self._session.build_changed(fetch_infos, order)
            changed.clear()
        self._in_flight = ReplicaFetchRequest(
            self.replica_manager.broker_id,
            config.replica_fetch_wait_max_ms,
            config.replica_fetch_min_bytes,
            config.replica_fetch_response_max_bytes,
            fetch_infos,
            session,
        )
        self._next_fetch_ms = None
        self._next_fetch_due.cancel()
        return self._in_flight

    def _walk_partitions(
        self, now_ms: int, partition_max_bytes: int
    ) -> dict[TopicPartition, PartitionFetchInfo]:
        """The fetch data of every partition not backing off at ``now_ms``, in order; the
        change feed restarts from it."""
        fetch_infos: dict[TopicPartition, PartitionFetchInfo] = {}
        waiting_until: int | None = None
        for tp, state in self._states.items():
            ready_at = state.ready_at_ms
            if ready_at > now_ms:
                if waiting_until is None or ready_at < waiting_until:
                    waiting_until = ready_at
                continue
            fetch_infos[tp] = self._fetch_info(state, partition_max_bytes)
        self._fetch_infos = fetch_infos
        self._places = {tp: place for place, tp in enumerate(fetch_infos)}
        self._changed.clear()
        self._walk = False
        self._walked_max_bytes = partition_max_bytes
        self._waiting_until = waiting_until
        return fetch_infos

    def _fetch_info(
        self, state: PartitionFetchState, partition_max_bytes: int
    ) -> PartitionFetchInfo:
        """The fetch data of ``state``'s partition now: the very object last built for it while
        its value is the same (the session compares fetch data by identity on the change
        feed's path)."""
        info = state.fetch_info
        partition = state.partition
        if partition is None:
            marker = -1
            log_start_offset = UNKNOWN_OFFSET
            latest_epoch: int | None = None
        else:
            log = partition.log
            marker = log.change_marker
            if (
                info is not None
                and state.fetch_info_marker == marker
                and info.fetch_offset == state.fetch_offset
                and info.current_leader_epoch == state.current_leader_epoch
                and info.max_bytes == partition_max_bytes
            ):
                return info  # the log's start offset and latest epoch move its marker
            log_start_offset = log.log_start_offset
            latest_epoch = log.latest_epoch
        state.fetch_info_marker = marker
        if (
            info is None
            or info.fetch_offset != state.fetch_offset
            or info.current_leader_epoch != state.current_leader_epoch
            or info.max_bytes != partition_max_bytes
            or info.log_start_offset != log_start_offset
            or info.last_fetched_epoch != latest_epoch
        ):
            info = state.fetch_info = PartitionFetchInfo(
                state.fetch_offset,
                partition_max_bytes,
                state.current_leader_epoch,
                log_start_offset,
                latest_epoch,
            )
        return info

    def handle_fetch_failure(self, now_ms: int) -> None:
        """The in-flight fetch got no response (e.g. the leader is unreachable): back off
        every partition it asked for.

        Raises:
            ReplicaArgumentError: no fetch is in flight.
        """
        request = self._take_in_flight()
        self._session.handle_error()
        ready_at = now_ms + self.replica_manager.config.replica_fetch_backoff_ms
        for tp in request.fetch_infos:
            state = self._states.get(tp)
            if state is not None:
                state.ready_at_ms = ready_at
        self._states_changed()

    def handle_fetch_response(
        self,
        response: Mapping[TopicPartition, FetchPartitionData],
        now_ms: int,
        *,
        session_id: int = INVALID_SESSION_ID,
        error: Errors = Errors.NONE,
    ) -> None:
        """Apply the leader's response to the in-flight fetch (see the module docstring).

        Partitions removed, re-added or moved since the request was built are skipped.
        ``session_id`` and the top-level ``error`` go to the fetch session: in an incremental
        fetch's response the partitions without news are absent (nothing changed for them);
        after a session error (which comes without partitions) the next fetch is full.

        Raises:
            ReplicaArgumentError: no fetch is in flight.
            UnexpectedAppendOffsetError: the leader sent a batch that does not start at the
                follower's log end offset (leader and follower logs disagree on batch
                boundaries, which the model never produces).
        """
        request = self._take_in_flight()
        self._session.handle_response(session_id, error)
        backoff_ms = self.replica_manager.config.replica_fetch_backoff_ms
        states = self._states
        requested_infos = request.fetch_infos
        changed = self._changed
        states_changed = False
        for tp, data in response.items():
            state = states.get(tp)
            requested = requested_infos.get(tp)
            if (
                state is None
                or requested is None
                or state.fetch_offset != requested.fetch_offset
                or state.current_leader_epoch != requested.current_leader_epoch
            ):
                continue
            partition = state.partition
            if partition is None or partition.is_leader:
                continue
            error = data.error
            if error is NO_ERROR:
                diverging = data.diverging_epoch
                if diverging is None:
                    self._process_partition_data(partition, state, data)
                    if len(partition.log.producer_state):
                        self.replica_manager.note_producer_state()
                else:
                    self._truncate_to_diverging_epoch(partition, state, diverging)
                changed.add(tp)
            elif error is Errors.OFFSET_OUT_OF_RANGE:
                self._handle_offset_out_of_range(partition, state, data)
                changed.add(tp)
            elif error is Errors.FENCED_LEADER_EPOCH:
                del self._states[tp]
                states_changed = True
            else:
                state.ready_at_ms = now_ms + backoff_ms
                states_changed = True
        if states_changed:
            self._states_changed()
        else:
            self._rearm()

    def _take_in_flight(self) -> ReplicaFetchRequest:
        request = self._in_flight
        if request is None:
            raise ReplicaArgumentError(
                f"fetcher of broker {self.replica_manager.broker_id} from leader "
                f"{self.leader_id} has no fetch in flight to answer"
            )
        self._in_flight = None
        return request

    @staticmethod
    def _process_partition_data(
        partition: Partition, state: PartitionFetchState, data: FetchPartitionData
    ) -> None:
        append = partition.append_records_to_follower
        for batch in data.records:
            append(batch)
        log = partition.log
        log.update_high_watermark(data.high_watermark)
        log.maybe_increment_log_start_offset(data.log_start_offset)
        state.fetch_offset = log.log_end_offset

    @staticmethod
    def _truncate_to_diverging_epoch(
        partition: Partition, state: PartitionFetchState, diverging: EpochEndOffset
    ) -> None:
        log = partition.log
        replica_end_offset = log.log_end_offset
        leader_epoch = diverging.leader_epoch
        local_epoch, local_end_offset = log.end_offset_for_epoch(leader_epoch)
        if local_end_offset == UNDEFINED_EPOCH_OFFSET:
            target = min(diverging.end_offset, replica_end_offset)
        elif local_epoch != leader_epoch:
            target = min(local_end_offset, replica_end_offset)
        else:
            target = min(local_end_offset, diverging.end_offset, replica_end_offset)
        log.truncate_to(target)
        state.fetch_offset = log.log_end_offset

    @staticmethod
    def _handle_offset_out_of_range(
        partition: Partition, state: PartitionFetchState, data: FetchPartitionData
    ) -> None:
        log = partition.log
        replica_end_offset = log.log_end_offset
        if data.log_end_offset < replica_end_offset:
            log.truncate_to(data.log_end_offset)
        elif data.log_start_offset > replica_end_offset:
            log.truncate_fully_and_start_at(data.log_start_offset)
        state.fetch_offset = log.log_end_offset

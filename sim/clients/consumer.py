"""A simulated Kafka consumer: manual assignment, long-poll fetches, offset commits.

Lifecycle: ``assign`` partitions, ``start``. With a ``group_id`` the consumer first asks the
coordinator for the group's committed positions (OffsetFetch) and resumes from them; a
partition without one starts at ``auto_offset_reset`` (ListOffsets to its leader). Then it
keeps one fetch in flight per leader broker, carrying every fetchable partition that broker
leads, with ``fetch_min_bytes`` / ``fetch_max_wait_ms``.

The application, like a Java poll loop: fetched records are *held* until the application
polls; a poll returns every held record and moves the consumed positions past them. While
records are held no new fetch is sent (one round of fetches is pipelined with processing, as
Java's consumer does). Two kinds of application:

* built in (no ``on_records``): processes the polled records one at a time, each taking
  ``processing_time`` (``MessageProcessed`` after each), then polls again; with
  ``manual_commit`` it commits the consumed positions after each batch (``"sync"``: blocking,
  ``"async"``: not);
* ``on_records``: a callback receives each poll's records at once and does its own processing
  (the Burrow consumer's poll loop); the consumer polls again immediately.

Commits (positions are "next offset to read"):

* ``commit_sync``: retries retriable errors until ``default_api_timeout_ms``; by default it
  also blocks delivery (no new fetches, records held back) until it completes, as a Java
  application thread blocked in ``commitSync`` does. ``block_delivery=False`` models a commit
  made from another thread (Burrow's commit goroutine) while polling continues.
* ``commit_async``: one attempt, never blocks.
* automatic: with ``enable_auto_commit``, an async commit of the consumed positions every
  ``auto_commit_interval_ms``; Java commits inside ``poll()``, so a commit falling due while the
  built-in application is processing waits for its next poll. ``close`` commits synchronously.

There is no group membership (no JoinGroup/heartbeats): the model's coordinator has none yet,
so the consumer behaves like Kafka's ``assign()``-mode consumer that commits for a group.
``crash`` stops the consumer at once without committing (a killed process).

Errors: NOT_LEADER_OR_FOLLOWER and similar fetch errors refresh metadata; OFFSET_OUT_OF_RANGE
resets the partition with ``auto_offset_reset``; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE
refresh metadata before a commit is retried. A paused consumer sends no new fetch, but the
records of fetches already in flight are still delivered.

The lifecycle (NEW, LOOKING_UP_COORDINATOR, FETCHING_COMMITTED_OFFSETS, CONSUMING, CLOSING,
STOPPED) is a :class:`~sim.clients.consumer_state.ConsumerState`, changed only by
``_transition`` along the table in :mod:`sim.clients.consumer_state`.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping

import attrs

from apis.fetch import FetchRequest, FetchResponse
from replica.errors import Errors
from replica.records import Record
from replica.types import PartitionFetchInfo, TopicPartition
from sim.clients.consumer_commits import AutoCommit, CommitCallback, Committer
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_offset_lookup import OffsetLookup
from sim.clients.consumer_positions import Positions
from sim.clients.consumer_requests import ConsumerRequests
from sim.clients.consumer_state import ConsumerState, LifecycleEvent, next_state
from sim.clients.errors import ClientStateError
from sim.clients.events import (
    ClientRecorder,
    ConsumerHalted,
    MessageDelivered,
    MessageProcessed,
    ProcessingOutcome,
)
from sim.clients.ledger import CommitLedger
from sim.clients.network import ClientNetwork, MetadataView
from sim.clients.records import message_id_of
from sim.engine import Scheduler

__all__ = ["CommitCallback", "Consumer", "ConsumerRecord"]

_US_PER_MS = 1000
# A broken connection (NETWORK_EXCEPTION) makes Kafka's client look up the leader again: the
# broker may be gone and its partitions led elsewhere.
_METADATA_ERRORS = frozenset(
    {
        Errors.NETWORK_EXCEPTION,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.KAFKA_STORAGE_ERROR,
    }
)

@attrs.frozen
class ConsumerRecord:
    """A record as the application receives it. ``message_id`` is -1 for foreign records."""

    tp: TopicPartition
    offset: int
    message_id: int
    record: Record


class Consumer:
    """A consumer of assigned partitions (sans-IO, on the simulator's clock)."""

    def __init__(
        self,
        scheduler: Scheduler,
        network: ClientNetwork,
        metadata: MetadataView,
        config: ConsumerConfig | None = None,
        *,
        rng: random.Random,
        recorder: ClientRecorder,
        client_id: str = "consumer",
        on_records: Callable[[list[ConsumerRecord]], None] | None = None,
    ) -> None:
        self.config = config if config is not None else ConsumerConfig()
        self._rng = rng
        self.client_id = client_id
        self.on_records = on_records
        self._scheduler = scheduler
        self._metadata = metadata
        self._recorder = recorder
        self._positions = Positions()
        self._requests = ConsumerRequests(
            scheduler, network, metadata, self.config, stopped=lambda: self.stopped
        )
        self._ledger = CommitLedger()
        self._committer = Committer(
            scheduler, self.config, metadata, self._requests, self._positions, self._ledger,
            recorder, client_id,
            stopped=lambda: self.stopped,
        )  # fmt: skip
        self._auto_commit = AutoCommit(
            scheduler,
            self.config.auto_commit_interval_ms,
            in_poll=lambda: not self._app_busy and not self._delivery_blocks,
            commit=lambda: self.commit_async(None, trigger="auto"),
        )
        self._lookup = OffsetLookup(
            self.config, metadata, self._requests, self._positions,
            transition=self._transition,
            on_found=self._maybe_fetch,
        )  # fmt: skip
        self._fetching: set[int] = set()  # brokers with a fetch in flight
        self._fetch_backoff: dict[int, int] = {}  # broker -> no fetch to it before this time
        self._held: list[ConsumerRecord] = []  # fetched, not yet polled by the application
        self._app_queue: deque[ConsumerRecord] = deque()  # polled, not yet processed
        self._app_busy = False
        self._delivery_blocks = 0
        self._paused = False
        self._state = ConsumerState.NEW

    # -- public API ---------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerState:
        """Where the consumer is in its lifecycle (:mod:`sim.clients.consumer_state`)."""
        return self._state

    @property
    def stopped(self) -> bool:
        """True once the consumer has closed or crashed."""
        return self._state is ConsumerState.STOPPED

    @property
    def assignment(self) -> tuple[TopicPartition, ...]:
        return self._positions.assigned

    def position(self, tp: TopicPartition) -> int | None:
        """Next offset the application will receive from ``tp`` (None until known)."""
        return self._positions.consumed(tp)

    def committed(self, tp: TopicPartition) -> int | None:
        """The last position this consumer committed successfully for ``tp``."""
        return self._positions.committed(tp)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Set the partitions to consume; only on a new consumer (before ``start``, ``close``
        or ``crash``). Raises ClientStateError."""
        if self._state is not ConsumerState.NEW:
            raise ClientStateError(
                f"assign() must be called before start(); the consumer is {self._state.value}"
            )
        self._positions.assign(partitions)

    def start(self) -> None:
        """Look up the starting positions, then fetch. Raises ClientStateError unless the
        consumer is new and has an assignment."""
        if self._state is not ConsumerState.NEW:
            raise ClientStateError(
                f"start() is allowed once, on a new consumer; it is {self._state.value}"
            )
        if not self._positions.assigned:
            raise ClientStateError("assign() at least one partition before start()")
        if self.config.group_id is not None:
            self._transition(LifecycleEvent.START_IN_GROUP)
            self._lookup.fetch_committed(self._positions.assigned)
        else:
            self._transition(LifecycleEvent.START_WITHOUT_GROUP)
            self._lookup.reset(self._positions.assigned)
        if self.config.group_id is not None and self.config.enable_auto_commit:
            self._auto_commit.start()

    def pause(self) -> None:
        """Stop sending fetches (fetches in flight still deliver)."""
        self._paused = True

    def resume(self) -> None:
        """Fetch again after ``pause``."""
        if self._paused:
            self._paused = False
            self._maybe_fetch()

    def commit_sync(
        self,
        offsets: Mapping[TopicPartition, int] | None = None,
        on_done: CommitCallback | None = None,
        *,
        block_delivery: bool = True,
        trigger: str = "sync",
    ) -> None:
        """Commit ``offsets`` (default: the consumed positions), retrying retriable errors
        until ``default_api_timeout_ms``; then call ``on_done(error)``."""
        deadline = self._scheduler.now + self.config.default_api_timeout_ms * _US_PER_MS
        if block_delivery:
            self._delivery_blocks += 1
            user_done = on_done

            def on_done(error: Errors) -> None:
                self._delivery_blocks -= 1
                if user_done is not None:
                    user_done(error)
                if not self._delivery_blocks:
                    self._release_held()

        self._committer.commit(offsets, on_done, deadline, trigger)

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, int] | None = None,
        on_done: CommitCallback | None = None,
        *,
        trigger: str = "async",
    ) -> None:
        """Commit ``offsets`` (default: the consumed positions) once, without retrying."""
        self._committer.commit(offsets, on_done, None, trigger)

    def close(self, on_done: Callable[[], None] | None = None, *, reason: str = "closed") -> None:
        """Stop consuming; with auto-commit, commit the consumed positions first. Then report
        ``ConsumerHalted(reason)`` and call ``on_done()``. Nothing happens once stopped."""
        if self.stopped:
            return
        final_commit = (
            self._state is not ConsumerState.NEW  # a consumer never started has nothing to commit
            and self.config.group_id is not None
            and self.config.enable_auto_commit
        )
        self.pause()
        self._transition(LifecycleEvent.CLOSE)

        def finish(_error: Errors = Errors.NONE) -> None:
            self._stop(LifecycleEvent.CLOSED, reason)
            if on_done is not None:
                on_done()

        if final_commit:
            self.commit_sync(None, finish, block_delivery=False, trigger="final")
        else:
            finish()

    def crash(self) -> None:
        """Stop at once, committing nothing; responses still on their way are ignored."""
        if not self.stopped:
            self._stop(LifecycleEvent.CRASH, "crashed")

    # -- fetching -----------------------------------------------------------------------------

    def _maybe_fetch(self) -> None:
        if self.stopped or self._paused or self._delivery_blocks or self._held:
            return
        now = self._scheduler.now
        by_leader: dict[int, dict[TopicPartition, PartitionFetchInfo]] = {}
        leaderless = False
        for tp in self._positions.assigned:
            offset = self._positions.fetch_position(tp)
            if offset is None:
                continue
            leader = self._metadata.leader_for(tp)
            if leader is None:
                leaderless = True
            elif leader not in self._fetching and self._fetch_backoff.get(leader, 0) <= now:
                info = PartitionFetchInfo(offset, self.config.max_partition_fetch_bytes)
                by_leader.setdefault(leader, {})[tp] = info
        if leaderless:
            self._requests.after_refresh(self._maybe_fetch)
        for leader, fetch_data in by_leader.items():
            self._fetching.add(leader)
            request = FetchRequest(
                fetch_data,
                max_wait_ms=self.config.fetch_max_wait_ms,
                min_bytes=self.config.fetch_min_bytes,
                max_bytes=self.config.fetch_max_bytes,
            )
            self._requests.send(leader, request, self._fetch_callback(leader, request))

    def _fetch_callback(
        self, leader: int, request: FetchRequest
    ) -> Callable[[FetchResponse | None], None]:
        return lambda response: self._fetched(leader, request, response)

    def _fetched(self, leader: int, request: FetchRequest, response: FetchResponse | None) -> None:
        self._fetching.discard(leader)
        if response is None:  # timed out
            self._requests.later(self._maybe_fetch)
            return
        records: list[ConsumerRecord] = []
        refresh = response.error in _METADATA_ERRORS
        backoff = response.error != Errors.NONE
        reset: list[TopicPartition] = []
        for tp, data in response.responses.items():
            info = request.fetch_data.get(tp)
            if info is None or self._positions.fetch_position(tp) != info.fetch_offset:
                continue  # not asked for, or the position moved meanwhile
            if data.error == Errors.NONE:
                offset = info.fetch_offset
                for batch in data.records:
                    for index, record in enumerate(batch.records):
                        record_offset = batch.base_offset + index
                        if record_offset < offset:
                            continue
                        message_id = message_id_of(record)
                        records.append(
                            ConsumerRecord(
                                tp, record_offset, -1 if message_id is None else message_id, record
                            )
                        )
                        offset = record_offset + 1
                self._positions.fetched_up_to(tp, offset)
            elif data.error == Errors.OFFSET_OUT_OF_RANGE:
                reset.append(tp)
            elif data.error in _METADATA_ERRORS:
                refresh = True
            else:  # NETWORK_EXCEPTION (broker down), REQUEST_TIMED_OUT, ...: try again later
                backoff = True
        if records:
            self._deliver(records)
        if reset:
            self._lookup.reset(reset)
        if refresh or backoff:  # no fetch to this broker until the back-off is over
            self._fetch_backoff[leader] = (
                self._scheduler.now + self.config.retry_backoff_ms * _US_PER_MS
            )
        if refresh:
            self._requests.after_refresh(self._maybe_fetch)
        elif backoff:
            self._requests.later(self._maybe_fetch)
        else:
            self._maybe_fetch()

    def _deliver(self, records: list[ConsumerRecord]) -> None:
        """A fetch completed: the records wait until the application polls."""
        self._held.extend(records)
        if not self._app_busy and not self._delivery_blocks:
            self._poll_records()

    def _poll_records(self) -> None:
        """The application's ``poll()``: it receives every held record at once."""
        records, self._held = self._held, []
        if records and not self.stopped:
            now = self._scheduler.now
            track = self.config.group_id is not None
            for r in records:
                self._positions.polled(r.tp, r.offset)
                if track:
                    self._ledger.delivered(r.tp, r.offset, r.message_id)
                self._recorder.record(
                    MessageDelivered(
                        now, self.client_id, r.message_id, r.tp.topic, r.tp.partition, r.offset
                    )
                )
            if self.on_records is not None:
                self.on_records(records)
            else:
                self._app_busy = True
                self._app_queue.extend(records)
                self._process_next()
        self._maybe_fetch()

    # -- the built-in application (no on_records): process, then poll again ----------------------

    def _process_next(self) -> None:
        while self._app_queue and not self.stopped:
            record = self._app_queue[0]
            started = self._scheduler.now
            duration = self.config.processing_time.sample(self._rng)
            if duration:
                self._scheduler.call_later(duration, self._processed_later(record, started))
                return
            self._processed(record, started, resume=False)
        if not self.stopped:
            self._app_poll()

    def _processed_later(self, record: ConsumerRecord, started: int) -> Callable[[], None]:
        return lambda: self._processed(record, started)

    def _processed(self, record: ConsumerRecord, started: int, *, resume: bool = True) -> None:
        if self.stopped:
            return
        self._app_queue.popleft()
        tp = record.tp
        self._recorder.record(
            MessageProcessed(
                self._scheduler.now, self.client_id, record.message_id, tp.topic, tp.partition,
                record.offset, started, started, 0, ProcessingOutcome.OK,
            )
        )  # fmt: skip
        if resume:
            self._process_next()

    def _app_poll(self) -> None:
        """The application finished a batch and calls ``poll()`` again: commit as configured
        (a due auto-commit, or the manual commit after every batch), then take what is held."""
        self._app_busy = False
        if self.config.group_id is not None:
            self._auto_commit.commit_if_due()
            if self.config.manual_commit == "async":
                self.commit_async(None)
            elif self.config.manual_commit == "sync":
                self._app_busy = True  # blocked in commitSync

                def committed(_error: Errors) -> None:
                    self._app_busy = False

                self.commit_sync(None, committed)
                return
        self._poll_records()

    def _release_held(self) -> None:
        if not self._app_busy and not self._delivery_blocks and not self.stopped:
            self._poll_records()

    # -- lifecycle ----------------------------------------------------------------------------

    def _transition(self, event: LifecycleEvent) -> None:
        """Move to the state ``event`` leads to. Raises IllegalTransitionError (a
        ClientStateError) if the transition table has no such edge."""
        self._state = next_state(self._state, event)

    def _stop(self, event: LifecycleEvent, reason: str) -> None:
        self._transition(event)
        self._auto_commit.stop()
        self._recorder.record(ConsumerHalted(self._scheduler.now, self.client_id, reason))

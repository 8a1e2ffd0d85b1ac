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
* ``on_records``: a callback receives each poll's records at once, as columns
  (:class:`~sim.clients.consumer_fetcher.ConsumerRecords`), and does its own processing (the
  Burrow consumer's poll loop); the consumer polls again immediately.

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

Structure. :class:`Consumer` is the public face and owns the lifecycle; the work is done by
parts that each hold one concern's state and call each other through the callbacks wired up
in ``Consumer.__init__``:

* :mod:`~sim.clients.consumer_state`: the lifecycle states and their transition table;
* :mod:`~sim.clients.consumer_requests`: request timeouts, back-offs, metadata refreshes;
* :mod:`~sim.clients.consumer_positions`: the consumed, fetch and committed positions;
* :mod:`~sim.clients.consumer_offset_lookup`: OffsetFetch at start, ListOffsets resets;
* :mod:`~sim.clients.consumer_fetcher`: the fetch loop;
* :mod:`~sim.clients.consumer_poll`: held records and the application's ``poll()``;
* :mod:`~sim.clients.consumer_app`: the built-in application;
* :mod:`~sim.clients.consumer_commits`: commits (sync, async) and auto-commit.

State that used to be boolean flags: *started* and *stopped* (and the implicit "coordinator
unknown", "OffsetFetch outstanding" and "final commit outstanding" phases) are the lifecycle's
:class:`~sim.clients.consumer_state.ConsumerState`. The rest are independent of the lifecycle
and of each other, so they stay with the part they concern: a request in flight is its timeout
timer (:mod:`~sim.clients.consumer_requests`), a fetch in flight is the FetchRequest kept per
leader (:mod:`~sim.clients.consumer_fetcher`); "metadata refresh in flight" (no request object
to keep), "paused", "auto-commit due" and "application busy" remain booleans of their parts,
and delivery blocks remain a count (sync commits can overlap).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping

from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.consumer_app import BuiltInApplication
from sim.clients.consumer_commits import AutoCommit, CommitCallback, Committer
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_fetcher import ConsumerRecords, Fetcher
from sim.clients.consumer_offset_lookup import OffsetLookup
from sim.clients.consumer_poll import Poller
from sim.clients.consumer_positions import Positions
from sim.clients.consumer_requests import ConsumerRequests
from sim.clients.consumer_state import ConsumerState, LifecycleEvent, next_state
from sim.clients.errors import ClientStateError
from sim.clients.events import ClientRecorder, ConsumerHalted
from sim.clients.ledger import CommitLedger
from sim.clients.network import ClientNetwork, MetadataView
from sim.core.engine import Scheduler

__all__ = ["CommitCallback", "Consumer", "ConsumerRecords"]

_US_PER_MS = 1000


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
        on_records: Callable[[ConsumerRecords], None] | None = None,
    ) -> None:
        self.config = config = config if config is not None else ConsumerConfig()
        self.client_id = client_id
        self._scheduler = scheduler
        self._recorder = recorder
        self._state = ConsumerState.NEW
        # The parts (see the module doc) call each other through callbacks; the lambdas reach
        # parts that are created further down.
        positions = self._positions = Positions()
        ledger = CommitLedger()
        stopped = self._is_stopped
        requests = ConsumerRequests(scheduler, network, metadata, config, stopped=stopped)
        self._committer = Committer(
            scheduler, config, metadata, requests, positions, ledger, recorder, client_id,
            stopped=stopped,
        )  # fmt: skip
        self._auto_commit = AutoCommit(
            scheduler,
            config.auto_commit_interval_ms,
            in_poll=lambda: self._poller.app_in_poll,
            commit=lambda: self.commit_async(None, trigger="auto"),
        )
        hand_over: Callable[[ConsumerRecords], None]
        app_busy: Callable[[], bool]
        if on_records is None:
            app = BuiltInApplication(
                scheduler, config, rng, recorder, client_id,
                stopped=stopped,
                poll=lambda: self._poller.poll(),
                commit_if_due=self._auto_commit.commit_if_due,
                commit_async=lambda: self.commit_async(None),
                commit_sync=lambda on_done: self.commit_sync(None, on_done),
            )  # fmt: skip
            hand_over, app_busy = app.take, lambda: app.busy
        else:
            hand_over, app_busy = on_records, _returns_at_once
        self._poller = Poller(
            scheduler, config, positions, ledger, recorder, client_id,
            stopped=stopped,
            app_busy=app_busy,
            hand_over=hand_over,
            fetch_more=lambda: self._fetcher.maybe_fetch(),
        )  # fmt: skip
        self._fetcher = Fetcher(
            scheduler, config, metadata, requests, positions,
            wants_records=lambda: not self.stopped and self._poller.wants_records,
            deliver=self._poller.deliver,
            reset=lambda partitions: self._lookup.reset(partitions),
        )  # fmt: skip
        self._lookup = OffsetLookup(
            config, metadata, requests, positions,
            transition=self._transition,
            on_found=self._fetcher.maybe_fetch,
        )  # fmt: skip

    # -- public API ---------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerState:
        """Where the consumer is in its lifecycle (:mod:`sim.clients.consumer_state`)."""
        return self._state

    @property
    def stopped(self) -> bool:
        """True once the consumer has closed or crashed."""
        return self._is_stopped()

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
        self._fetcher.pause()

    def resume(self) -> None:
        """Fetch again after ``pause``."""
        self._fetcher.resume()

    def commit_sync(
        self,
        offsets: Mapping[TopicPartition, int] | None = None,
        on_done: CommitCallback | None = None,
        *,
        block_delivery: bool = True,
        trigger: str = "sync",
    ) -> None:
        """Commit ``offsets`` (default: the consumed positions), retrying retriable errors
        until ``default_api_timeout_ms``; then call ``on_done(error)``. With
        ``block_delivery``, no records are polled (and so none fetched) until then."""
        deadline = self._scheduler.now + self.config.default_api_timeout_ms * _US_PER_MS
        if block_delivery:
            on_done = self._poller.block_until(on_done)
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

    # -- lifecycle ----------------------------------------------------------------------------

    def _transition(self, event: LifecycleEvent) -> None:
        """Move to the state ``event`` leads to. Raises IllegalTransitionError (a
        ClientStateError) if the transition table has no such edge."""
        self._state = next_state(self._state, event)

    def _is_stopped(self) -> bool:
        return self._state is ConsumerState.STOPPED

    def _stop(self, event: LifecycleEvent, reason: str) -> None:
        self._transition(event)
        self._auto_commit.stop()
        self._recorder.record(ConsumerHalted(self._scheduler.now, self.client_id, reason))


def _returns_at_once() -> bool:
    """``app_busy`` of an ``on_records`` application: the callback returns to ``poll()``."""
    return False

"""A simulated Kafka consumer: manual assignment or group membership, long-poll fetches,
offset commits.

Lifecycle: ``assign`` partitions (or ``subscribe`` to topics), ``start``. With a ``group_id``
the consumer first asks the
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

Group membership. An assigned consumer (``assign``) commits for its group from outside group
management, like Kafka's ``assign()``-mode consumer (generation -1). A subscribed consumer
(``subscribe``) is a member of its group (:mod:`sim.clients.consumer_group`): it joins, gets
its partitions from the leader's range assignment, heartbeats, and commits with its
generation. When a rebalance begins it does what Kafka's ``onJoinPrepare`` does inside
``poll()`` (so a busy built-in application first finishes its batch): with auto-commit, a sync
commit of the consumed positions; then it revokes every partition (positions and held records
dropped) and rejoins; an ``on_revoke`` listener (Kafka's ``onPartitionsRevoked``) runs before
the revocation and says when it is done (no records are handed over meanwhile). The new
assignment resumes from the group's committed offsets, so what
another member delivered but did not commit is delivered again. ``close`` commits as usual,
then sends LeaveGroup; ``crash`` stops the consumer at once without committing or leaving (a
killed process): the coordinator notices when its session times out.

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
* :mod:`~sim.clients.consumer_commits`: commits (sync, async) and auto-commit;
* :mod:`~sim.clients.consumer_group`: group membership (subscribed consumers only).

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
from typing import Final

from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.consumer_app import BuiltInApplication
from sim.clients.consumer_commits import AutoCommit, CommitCallback, Committer
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_fetcher import ConsumerRecords, Fetcher
from sim.clients.consumer_group import NO_GENERATION, GroupMembership
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

_STOPPED: Final = ConsumerState.STOPPED  # read once per check: see replica.types.NO_ERROR

__all__ = ["CommitCallback", "Consumer", "ConsumerRecords"]

_US_PER_MS: Final = 1000


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
        on_revoke: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self.config = config = config if config is not None else ConsumerConfig()
        self.client_id = client_id
        self._scheduler = scheduler
        self._recorder = recorder
        self._state = ConsumerState.NEW
        # The parts (see the module doc) call each other through callbacks; the lambdas reach
        # parts that are created further down.
        positions = self._positions = Positions()
        ledger = self._ledger = CommitLedger()
        self._on_revoke = on_revoke
        stopped = self._is_stopped
        self._metadata = metadata
        requests = self._requests = ConsumerRequests(
            scheduler, network, metadata, config, stopped=stopped
        )
        self._membership: GroupMembership | None = None  # set by subscribe()
        self._committer = Committer(
            scheduler, config, metadata, requests, positions, ledger, recorder, client_id,
            stopped=stopped,
            generation=self._generation,
            on_rejoin_error=self._commit_failed,
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

    @property
    def membership(self) -> GroupMembership | None:
        """The group membership of a subscribed consumer (None if assigned)."""
        return self._membership

    def subscribe(self, topics: Iterable[str]) -> None:
        """Consume ``topics`` as a member of the group: ``start`` joins it and the group
        assigns the partitions. Only on a new consumer with a ``group_id`` and no assignment.
        Raises ClientStateError."""
        if self._state is not ConsumerState.NEW or self._positions.assigned:
            raise ClientStateError("subscribe() is allowed once, on a new unassigned consumer")
        if self.config.group_id is None:
            raise ClientStateError("subscribe() needs a group_id")
        self._membership = GroupMembership(
            self._scheduler, self.config, self._metadata, self._requests,
            topics=tuple(topics),
            prepare_revoke=self._prepare_revoke,
            on_assigned=self._assigned,
        )  # fmt: skip

    def start(self) -> None:
        """Look up the starting positions, then fetch (a subscribed consumer first joins its
        group). Raises ClientStateError unless the consumer is new and has an assignment or a
        subscription."""
        if self._state is not ConsumerState.NEW:
            raise ClientStateError(
                f"start() is allowed once, on a new consumer; it is {self._state.value}"
            )
        if self._membership is not None:
            self._transition(LifecycleEvent.START_SUBSCRIBED)
            self._membership.start()
        elif not self._positions.assigned:
            raise ClientStateError("assign() at least one partition before start()")
        elif self.config.group_id is not None:
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

        if self._membership is not None:
            self._membership.close()

        def finish(_error: Errors = Errors.NONE) -> None:
            if self._membership is not None:
                self._membership.leave()
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
        return self._state is _STOPPED

    def _stop(self, event: LifecycleEvent, reason: str) -> None:
        self._transition(event)
        self._auto_commit.stop()
        if self._membership is not None:
            self._membership.close()
        self._recorder.record(ConsumerHalted(self._scheduler.now, self.client_id, reason))

    # -- group membership ---------------------------------------------------------------------

    def _generation(self) -> tuple[int, str]:
        """What a commit carries: the member's generation and id, or none when assigned."""
        if self._membership is None:
            return NO_GENERATION, ""
        return self._membership.generation

    def _commit_failed(self, error: Errors) -> None:
        if self._membership is not None:
            self._membership.commit_failed(error)

    def _prepare_revoke(self, then: Callable[[], None]) -> None:
        """A rebalance begins: in ``poll()``, commit if auto-committing, revoke every
        partition, then ``then()`` (rejoin). See the module doc."""

        def revoke(_error: Errors = Errors.NONE) -> None:
            if self._state in (ConsumerState.CLOSING, ConsumerState.STOPPED):
                return
            self._positions.revoke()
            self._ledger.clear()
            self._poller.drop_held()
            self._transition(LifecycleEvent.REVOKED)
            then()

        def listener(_error: Errors = Errors.NONE) -> None:
            on_revoke = self._on_revoke
            if on_revoke is None:
                revoke()
                return
            unblock = self._poller.block_until(None)  # nothing is polled until it is done

            def done() -> None:
                revoke()
                unblock(Errors.NONE)

            on_revoke(done)

        def in_poll() -> None:
            if self.config.enable_auto_commit:
                self.commit_sync(None, listener, trigger="revoke")
            else:
                listener()

        self._poller.run_in_poll(in_poll)

    def _assigned(self, partitions: tuple[TopicPartition, ...]) -> None:
        """The group assigned ``partitions``: resume them from the committed offsets."""
        self._positions.assign(partitions)
        self._transition(LifecycleEvent.ASSIGNED)
        if partitions:
            self._lookup.fetch_committed(self._positions.assigned)


def _returns_at_once() -> bool:
    """``app_busy`` of an ``on_records`` application: the callback returns to ``poll()``."""
    return False

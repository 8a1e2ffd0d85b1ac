"""The Burrow consumer: one poll loop, a fixed worker pool, gap detection, ordered commits.

Modelled on Burrow's Go source (``Pool``, ``WorkerPool``, ``SequenceTracker``,
``CommitManager``, ``ErrorTracker``); goroutines become event-driven state machines:

* **Poll loop.** Records from the inner :class:`~sim.clients.consumer.Consumer` get a
  sequence number and are submitted to the job queue, one at a time. A full queue blocks the
  poll loop (backpressure): the remaining records wait and the consumer is paused (no new
  fetches) until they are all submitted.
* **Job queue.** A channel of capacity ``job_queue_size``; a job goes straight to an idle
  worker when the queue is empty; blocked senders (the poll loop, retries) get in FIFO as
  room appears, as Go's channel send queue does.
* **Workers.** ``num_workers`` identical workers; one attempt takes ``processing_time`` and
  fails with ``failure_probability``. The result goes to the result queue (capacity
  ``result_queue_size``); a worker whose result does not fit waits, holding no new job.
* **Result processor.** Handles results in order, ``result_handling_time_us`` each: success
  marks the sequence processed (the contiguous prefix may grow: ``MessageCommittable``) and
  resets the consecutive-error count; a failure is retried after
  ``retry_backoff_base_ms * 2^attempt`` (at most 60 s) by re-submitting the job with the same
  sequence number, or, out of retries, stays a gap and counts as a consecutive error;
  ``max_consecutive_errors`` in a row halt the consumer.
* **Commit manager.** A ticker every ``commit_interval_ms``; a commit sends the committable
  prefix as per-partition positions (last processed offset + 1) with a synchronous commit
  that does not stop polling (Burrow commits from its own goroutine). Ticks arriving during a
  commit collapse into one (Go's ticker drops ticks). ``batch_trigger`` and
  ``committed_range`` choose Burrow's behaviour or the corrected one (see
  :class:`~sim.clients.burrow.config.BurrowConfig`). A failed commit changes nothing; the next
  tick tries again.

**Batch schedule.** When an attempt cannot fail and results take no handling time
(``failure_probability`` 0, ``result_handling_time_us`` 0, no scripted ``process``), global
tracking and Burrow's ``after_timer`` batch trigger, nothing above needs an event per job: each
batch of records the poll loop gets is scheduled at once by a
:class:`~sim.clients.burrow.schedule.BatchSchedule` (the same FIFO c-worker times, the same
draws in the same order), and the results are *materialised* (reported processed and
committable, with their own times) whenever something observes the pool: a commit (its plan,
Burrow's recomputed range), close and crash, the probes, and one wake-up at the time the last
scheduled job joins the processed prefix. Backpressure keeps its times: a batch that does not
fit in the job channel blocks the poll loop (consumer paused) until the time its last job gets
in, computed with the rest. Otherwise, or with ``batch_schedule=False``, every job is simulated
as events, as described above.

**Rebalances.** A pool over a subscribed consumer (``topics`` instead of ``partitions``: a
member of its group, :mod:`sim.clients.consumer_group`) handles a rebalance as the Burrow seed
does ("wait for all inflight"): when the consumer revokes its partitions, the poll loop takes
no more records and the pool waits, checking every 10 ms, until every record it has taken is
processed or failed and no commit is outstanding; then it commits the processed prefix
(trigger ``"revoke"``), starts a fresh sequence (tracker and schedule) and lets the revocation
proceed. Records of failed messages are lost to the gap as they are on a restart: the next
owner resumes from the committed position.

Stopping: ``close()`` and the error threshold stop polling and processing (work in progress is
abandoned), make a final commit of the committable prefix, then close the consumer, which
reports ``ConsumerHalted`` with the reason (``"closed"`` or ``"error threshold"``).
``crash()`` stops everything at once with no final commit. A new
``BurrowConsumer`` for the same group resumes from the committed positions; whatever was
delivered but not covered by a commit is delivered again (at-least-once).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Final, TypeVar

from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.burrow.config import BurrowConfig
from sim.clients.burrow.gap import MessageInfo, commit_positions
from sim.clients.burrow.schedule import BatchSchedule
from sim.clients.burrow.tracker import CommitPlan, GapTracker, Ticket
from sim.clients.consumer import Consumer, ConsumerRecords
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.errors import ClientConfigError, ClientStateError
from sim.clients.events import (
    ClientRecorder,
    MessageCommittable,
    MessageProcessed,
    MessagesCommittable,
    MessagesProcessed,
    ProcessingOutcome,
)
from sim.clients.network import ClientNetwork, MetadataView
from sim.core.engine import Repeating, Scheduler, every

__all__ = ["BurrowConsumer", "ProcessFunc"]

ProcessFunc = Callable[[MessageInfo, int], tuple[int, bool]]
"""Burrow's ProcessFunc, simulated: given a message and the attempt number (from 0), return
how long the attempt takes (us, >= 0) and whether it succeeds."""

_US_PER_MS: Final = 1000
_MAX_BACKOFF_US: Final = 60_000_000
_INFLIGHT_CHECK_US: Final = 10_000  # how often a rebalance checks for work still in flight
_T = TypeVar("_T")


class _Job:
    """One processing attempt of a message (Burrow's ``Job``)."""

    __slots__ = ("attempt", "info", "submitted_us", "ticket")

    def __init__(self, ticket: Ticket, info: MessageInfo, attempt: int, submitted_us: int) -> None:
        self.ticket = ticket
        self.info = info
        self.attempt = attempt
        self.submitted_us = submitted_us


class _Result:
    __slots__ = ("job", "ok")

    def __init__(self, job: _Job, ok: bool) -> None:
        self.job = job
        self.ok = ok


class BurrowConsumer:
    """A Burrow pool over an inner consumer of ``partitions`` (sans-IO, simulator clock).

    ``consumer_config`` must name a ``group_id`` and disable auto-commit (Burrow requires
    ``enable.auto.commit=false``); raises ClientConfigError otherwise, and unless exactly one
    of ``partitions`` (assigned) and ``topics`` (subscribed: the group assigns the
    partitions) is given. ``process`` replaces the
    configured ``processing_time`` / ``failure_probability`` draw (a scripted workload).
    ``batch_schedule=False`` simulates every job as events even where the batch schedule
    would give the same times (see the module doc).
    """

    def __init__(
        self,
        scheduler: Scheduler,
        network: ClientNetwork,
        metadata: MetadataView,
        config: BurrowConfig,
        consumer_config: ConsumerConfig,
        *,
        partitions: Iterable[TopicPartition] = (),
        topics: Sequence[str] = (),
        rng: random.Random,
        recorder: ClientRecorder,
        client_id: str = "burrow",
        process: ProcessFunc | None = None,
        batch_schedule: bool = True,
    ) -> None:
        if consumer_config.group_id is None:
            raise ClientConfigError("the Burrow consumer needs consumer_config.group_id")
        if consumer_config.enable_auto_commit:
            raise ClientConfigError(
                "the Burrow consumer commits itself: consumer_config.enable_auto_commit "
                "must be False"
            )
        self.config = config
        self.client_id = client_id
        self._scheduler = scheduler
        self._rng = rng
        self._processing_time = self.config.processing_time.sampler(rng)
        self._recorder = recorder
        self._process = process if process is not None else self._draw
        self._consumer = Consumer(
            scheduler, network, metadata, consumer_config,
            rng=rng, recorder=recorder, client_id=client_id, on_records=self._on_records,
            on_revoke=self._on_revoke,
        )  # fmt: skip
        partitions = tuple(partitions)
        if bool(partitions) == bool(topics):
            raise ClientConfigError("give the Burrow consumer either partitions or topics")
        if topics:
            self._consumer.subscribe(topics)
        else:
            self._consumer.assign(partitions)
        self._tracker = GapTracker(per_partition=config.tracking == "per_partition")
        self._schedule: BatchSchedule | None = None
        if batch_schedule and process is None and _schedulable(config):
            self._schedule = BatchSchedule(config.num_workers, config.job_queue_size)
        self._pending = ConsumerRecords()  # batch path: records that came while blocked
        self._wake_pending = False
        self._reported_early: set[int] = set()  # jobs reported processed beyond the prefix
        # poll loop
        self._poll_buffer: deque[tuple[TopicPartition, int, int]] = deque()
        self._poll_blocked = False
        # job queue and workers
        self._jobs: deque[_Job] = deque()
        self._blocked_senders: deque[_Job] = deque()
        self._idle_workers = config.num_workers
        # result queue and processor
        self._results: deque[_Result] = deque()
        self._blocked_results: deque[_Result] = deque()
        self._result_busy = False
        # error tracker
        self.consecutive_errors = 0
        # commit manager
        self._ticker: Repeating | None = None
        self._committing = False
        self._pending_tick = False
        self._final_commit = False
        self._halt_reason = ""
        self._revoked: Callable[[], None] | None = None  # a rebalance waits to call it
        # messages submitted since the last commit; the batch path: the jobs that had got into
        # the channel at the last commit
        self._since_commit = 0
        # life cycle
        self._epoch = 0  # bumped when stopping: callbacks of an older epoch are stale
        self.started = False
        self.halted = False
        self.stopped = False
        # statistics
        self.processed = 0
        self.failed = 0
        self.commits = 0

    # -- public API ---------------------------------------------------------------------------

    @property
    def consumer(self) -> Consumer:
        """The inner consumer (positions, committed offsets)."""
        return self._consumer

    @property
    def in_flight(self) -> int:
        """Messages the poll loop has sequenced that are neither processed nor failed."""
        if self._schedule is None:
            return self._tracker.in_flight
        reached, _, _, finished = self._schedule.counts(self._scheduler.now)
        return reached - finished

    @property
    def queued_jobs(self) -> int:
        """Jobs in the job queue (not counting blocked senders)."""
        if self._schedule is None:
            return len(self._jobs)
        _, entered, started, _ = self._schedule.counts(self._scheduler.now)
        return entered - started

    @property
    def messages_since_commit(self) -> int:
        """Messages submitted to the job channel since the last successful commit (Burrow's
        counter for its batch trigger)."""
        if self._schedule is None:
            return self._since_commit
        return self._schedule.counts(self._scheduler.now)[1] - self._since_commit

    @property
    def poll_blocked(self) -> bool:
        """True while the poll loop waits for room in the job queue."""
        return self._poll_blocked

    @property
    def busy_workers(self) -> int:
        """Workers holding a job (processing it, or waiting to hand its result over)."""
        if self._schedule is None:
            return self.config.num_workers - self._idle_workers
        _, _, started, finished = self._schedule.counts(self._scheduler.now)
        return started - finished

    def start(self) -> None:
        """Start the consumer (it resumes from the group's committed positions), the workers
        and the commit ticker. Raises ClientStateError if called twice."""
        if self.started:
            raise ClientStateError("start() was already called")
        self.started = True
        self._consumer.start()
        self._ticker = every(
            self._scheduler, self.config.commit_interval_ms * _US_PER_MS, self._on_tick
        )

    def close(self) -> None:
        """Stop polling and processing, make a final commit, close the consumer."""
        self._halt("closed")

    def flush(self) -> None:
        """Report every job finished by now (at the end of a run: the batch path reports
        lazily, when something observes the pool; see the module doc)."""
        self._report_until_now(inclusive=True)

    def crash(self) -> None:
        """Stop at once: no final commit; in-flight work and pending commits are lost."""
        if self.stopped:
            return
        self._shut_down()
        self._final_commit = False
        self.stopped = True
        self._consumer.crash()

    # -- poll loop ------------------------------------------------------------------------------

    def _on_records(self, records: ConsumerRecords) -> None:
        if self._schedule is None:
            self._poll_buffer.extend(
                zip(records.tps, records.offsets, records.message_ids, strict=True)
            )
            self._poll()
        elif self.halted:
            return
        elif self._poll_blocked:
            self._pending.extend(records)
        else:
            self._submit_batch(self._schedule, records)

    def _poll(self) -> None:
        buffer = self._poll_buffer
        now = self._scheduler.now
        while buffer and not self._poll_blocked and not self.halted:
            info = MessageInfo(*buffer.popleft())
            job = _Job(self._tracker.assign(info), info, 0, now)
            if self._submit(job):
                self._since_commit += 1
            else:
                self._poll_blocked = True
        if self.halted:
            return
        if buffer or self._poll_blocked:
            self._consumer.pause()
        else:
            self._consumer.resume()

    # -- job queue and workers ------------------------------------------------------------------

    def _submit(self, job: _Job) -> bool:
        """Offer ``job`` to the job channel; False if the sender must block (then it is
        queued as a blocked sender and gets in when room appears)."""
        if self._idle_workers and not self._jobs:
            self._idle_workers -= 1
            self._start(job)
            return True
        if len(self._jobs) < self.config.job_queue_size:
            self._jobs.append(job)
            return True
        self._blocked_senders.append(job)
        return False

    def _unblock_sender(self) -> _Job | None:
        """Let the first blocked sender complete its send; returns its job."""
        if not self._blocked_senders:
            return None
        job = self._blocked_senders.popleft()
        if job.attempt == 0:  # the poll loop's send completed: it runs again
            self._poll_blocked = False
            self._since_commit += 1
            self._scheduler.call_later(0, self._epoch_guard(self._poll))
        return job

    def _worker_free(self) -> None:
        """A worker finished handing its result over: give it the next job, or idle it."""
        job: _Job | None
        if self._jobs:
            job = self._jobs.popleft()
            sender = self._unblock_sender()
            if sender is not None:
                self._jobs.append(sender)
        else:
            job = self._unblock_sender()  # a zero-capacity channel hands over directly
        if job is None:
            self._idle_workers += 1
        else:
            self._start(job)

    def _draw(self, _info: MessageInfo, _attempt: int) -> tuple[int, bool]:
        duration = self._processing_time.draw()
        failure = self.config.failure_probability
        return duration, not failure or self._rng.random() >= failure

    def _start(self, job: _Job) -> None:
        started = self._scheduler.now
        duration, ok = self._process(job.info, job.attempt)
        self._scheduler.call_later(
            duration, self._epoch_guard(lambda: self._finished(job, started, ok))
        )

    def _finished(self, job: _Job, started: int, ok: bool) -> None:
        if ok:
            outcome = ProcessingOutcome.OK
        elif job.attempt < self.config.max_retries:
            outcome = ProcessingOutcome.RETRY
        else:
            outcome = ProcessingOutcome.FAILED
        info = job.info
        self._recorder.record(MessageProcessed(
            self._scheduler.now, self.client_id, info.message_id, info.tp.topic,
            info.tp.partition, info.offset, job.submitted_us, started, job.attempt, outcome,
        ))  # fmt: skip
        result = _Result(job, ok)
        if self.halted:
            return  # the pool is shutting down: the result is dropped, the worker stops
        if self._push_result(result):
            self._worker_free()

    # -- result processor -----------------------------------------------------------------------

    def _push_result(self, result: _Result) -> bool:
        """Send ``result`` to the result channel; False if the worker must wait."""
        if not self._result_busy and not self._results:
            self._process_result(result)
            return True
        if len(self._results) < self.config.result_queue_size:
            self._results.append(result)
            return True
        self._blocked_results.append(result)
        return False

    def _process_result(self, result: _Result) -> None:
        handling = self.config.result_handling_time_us
        if handling == 0:
            self._handle(result)
            return
        self._result_busy = True
        self._scheduler.call_later(handling, self._epoch_guard(lambda: self._handled(result)))

    def _handled(self, result: _Result) -> None:
        self._result_busy = False
        self._handle(result)
        if self.halted or not self._results:
            return
        following = self._results.popleft()
        if self._blocked_results:
            self._results.append(self._blocked_results.popleft())
            self._worker_free()  # that worker's send completed
        self._process_result(following)

    def _handle(self, result: _Result) -> None:
        if self.halted:
            return
        job = result.job
        if result.ok:
            self.processed += 1
            self.consecutive_errors = 0
            now = self._scheduler.now
            for info in self._tracker.mark_processed(job.ticket):
                self._recorder.record(MessageCommittable(
                    now, self.client_id, info.message_id, info.tp.topic, info.tp.partition,
                    info.offset,
                ))  # fmt: skip
            if self.config.batch_trigger == "immediate":
                self._maybe_batch_commit()
        elif job.attempt < self.config.max_retries:
            backoff = min(
                self.config.retry_backoff_base_ms * _US_PER_MS * (1 << job.attempt),
                _MAX_BACKOFF_US,
            )
            self._scheduler.call_later(backoff, self._epoch_guard(lambda: self._retry(job)))
        else:
            self.failed += 1
            self._tracker.mark_failed(job.ticket)
            self.consecutive_errors += 1
            if self.consecutive_errors >= self.config.max_consecutive_errors:
                self._halt("error threshold")

    def _retry(self, job: _Job) -> None:
        if not self.halted:
            self._submit(_Job(job.ticket, job.info, job.attempt + 1, self._scheduler.now))

    # -- the batch path ---------------------------------------------------------------------

    def _submit_batch(self, schedule: BatchSchedule, records: ConsumerRecords) -> None:
        """The poll loop submits ``records``: schedule them; block it if they do not fit."""
        now = self._scheduler.now
        draw = self._processing_time.draw
        durations = [draw() for _ in range(len(records))]
        free_at = schedule.submit(now, records.tps, records.offsets, records.message_ids, durations)
        if not self._wake_pending:
            self._wake_pending = True
            self._scheduler.call_at(schedule.ready[-1], self._epoch_guard(self._wake))
        if free_at > now:
            self._poll_blocked = True
            self._consumer.pause()
            self._scheduler.call_at(free_at, self._epoch_guard(self._poll_unblocked))
        else:
            self._consumer.resume()

    def _poll_unblocked(self) -> None:
        """The last job of the blocked batch got into the channel: the poll loop goes on."""
        assert self._schedule is not None
        self._poll_blocked = False
        records, self._pending = self._pending, ConsumerRecords()
        if records:
            self._submit_batch(self._schedule, records)
        else:
            self._consumer.resume()

    def _wake(self) -> None:
        """The last scheduled job joins the processed prefix now: report up to here."""
        assert self._schedule is not None
        self._wake_pending = False
        self._materialise(inclusive=True)
        schedule = self._schedule
        if schedule.done < schedule.jobs:  # later batches: wake again for them
            self._wake_pending = True
            self._scheduler.call_at(schedule.ready[-1], self._epoch_guard(self._wake))

    def _materialise(self, *, inclusive: bool = False) -> None:
        """Report the jobs that joined the processed prefix before now (see the module doc)."""
        schedule = self._schedule
        if schedule is None or self.halted:
            return
        lo, hi = schedule.advance(self._scheduler.now, inclusive=inclusive)
        if hi > lo:
            entries: range | list[int] = range(lo, hi)
            if self._reported_early:
                early = self._reported_early
                entries = [i for i in entries if schedule.job(i) not in early]
                early.difference_update(schedule.job(i) for i in range(lo, hi))
            self._report_processed(schedule, entries)
            self._recorder.record(MessagesCommittable(
                self.client_id, schedule.tps[lo:hi], schedule.offsets[lo:hi],
                schedule.message_ids[lo:hi], schedule.ready[lo:hi],
            ))  # fmt: skip

    def _report_until_now(self, *, inclusive: bool) -> None:
        """Report every job that finished before now (or at now with ``inclusive``): the
        prefix, and the jobs beyond it (reported early, and not again when they join it)."""
        schedule = self._schedule
        if schedule is None or self.halted:
            return
        self._materialise(inclusive=inclusive)
        beyond = schedule.processed_beyond(self._scheduler.now, inclusive=inclusive)
        fresh = [i for i in beyond if schedule.job(i) not in self._reported_early]
        if fresh:
            self._reported_early.update(schedule.job(i) for i in fresh)
            self._report_processed(schedule, fresh)

    def _report_processed(self, schedule: BatchSchedule, entries: Sequence[int]) -> None:
        """Report the jobs at column ``entries`` (a range, or a list in job order) processed."""
        self.processed += len(entries)
        self._recorder.record(MessagesProcessed(
            self.client_id, _take(schedule.tps, entries), _take(schedule.offsets, entries),
            _take(schedule.message_ids, entries), _take(schedule.submitted, entries),
            _take(schedule.started, entries), _take(schedule.finished, entries),
        ))  # fmt: skip

    # -- commit manager -------------------------------------------------------------------------

    def _on_tick(self) -> None:
        if self._committing:
            self._pending_tick = True  # Go's ticker keeps at most one tick
            return
        self._try_commit("interval")

    def _maybe_batch_commit(self) -> None:
        if not self._committing and self._tracker.committable_backlog >= (
            self.config.commit_batch_size
        ):
            self._try_commit("batch")

    def _plan(self) -> CommitPlan:
        """The commit the state before now allows (possibly empty)."""
        if self._schedule is None:
            return self._tracker.plan()
        self._materialise()
        return self._schedule.plan()

    def _try_commit(self, trigger: str) -> None:
        plan = self._plan()
        if plan.empty:
            self._commit_done(trigger)
            return
        self._committing = True
        self._consumer.commit_sync(
            commit_positions(plan.offsets),
            self._epoch_guard_commit(plan, trigger),
            block_delivery=False,
            trigger=trigger,
        )

    def _epoch_guard_commit(self, plan: CommitPlan, trigger: str) -> Callable[[Errors], None]:
        epoch = self._epoch

        def done(error: Errors) -> None:
            if epoch == self._epoch or self._final_commit:
                self._committed(plan, trigger, error)

        return done

    def _committed(self, plan: CommitPlan, trigger: str, error: Errors) -> None:
        self._committing = False
        if error == Errors.NONE:
            self.commits += 1
            if self.config.committed_range == "recomputed":
                plan = self._plan()  # Burrow reads the committable range again here
            plan.mark_committed()
            if self._schedule is None:
                self._since_commit = 0
            else:
                self._since_commit = self._schedule.counts(self._scheduler.now)[1]
        self._commit_done(trigger)

    def _commit_done(self, trigger: str) -> None:
        """What Burrow's commit loop does after a commit attempt returns."""
        if self._final_commit:
            if trigger != "final":
                self._try_commit("final")  # the shutdown commit waited for this one
            else:
                self._consumer.close(reason=self._halt_reason)
                self.stopped = True
            return
        if self._batch_due(trigger):
            self._try_commit("batch")
        elif self._pending_tick:
            self._pending_tick = False
            self._try_commit("interval")

    def _batch_due(self, trigger: str) -> bool:
        """Burrow checks its counter of polled messages only right after an interval commit;
        the corrected trigger looks at the committable backlog after every commit."""
        batch = self.config.commit_batch_size
        if self.config.batch_trigger == "after_timer":
            return trigger == "interval" and self.messages_since_commit >= batch
        return self._tracker.committable_backlog >= batch

    # -- rebalances -----------------------------------------------------------------------------

    def _on_revoke(self, done: Callable[[], None]) -> None:
        """The consumer revokes its partitions: wait for the work in flight, commit, start
        afresh, then ``done()`` (see the module doc)."""
        self._revoked = done
        self._drain()

    def _drain(self) -> None:
        busy = self.in_flight or self._poll_blocked or self._poll_buffer or self._pending
        if busy or self._committing:
            self._scheduler.call_later(_INFLIGHT_CHECK_US, self._epoch_guard(self._drain))
            return
        plan = self._plan()
        if plan.empty:
            self._start_afresh()
            return
        self._committing = True
        epoch = self._epoch

        def committed(error: Errors) -> None:
            if epoch != self._epoch:  # halted meanwhile: the final commit waited for this one
                if self._final_commit:
                    self._committed(plan, "revoke", error)
                return
            self._committing = False
            if error == Errors.NONE:
                self.commits += 1
                plan.mark_committed()
            self._start_afresh()

        self._consumer.commit_sync(
            commit_positions(plan.offsets), committed, block_delivery=False, trigger="revoke"
        )

    def _start_afresh(self) -> None:
        """After a revocation: a new sequence; callbacks of the old schedule are dropped."""
        self._report_until_now(inclusive=True)
        self._epoch += 1
        self._tracker = GapTracker(per_partition=self.config.tracking == "per_partition")
        if self._schedule is not None:
            self._schedule = BatchSchedule(self.config.num_workers, self.config.job_queue_size)
        self._wake_pending = False
        self._reported_early.clear()
        self._since_commit = 0
        done, self._revoked = self._revoked, None
        assert done is not None
        done()

    # -- life cycle -----------------------------------------------------------------------------

    def _halt(self, reason: str) -> None:
        """Stop polling and processing; one final commit, then close the consumer."""
        if self.halted or self.stopped:
            return
        self._shut_down()
        self._halt_reason = reason
        self._final_commit = True
        if not self._committing:
            self._try_commit("final")

    def _shut_down(self) -> None:
        if self._schedule is not None and not self.halted:
            self._report_until_now(inclusive=False)  # work in progress is abandoned
            self._pending = ConsumerRecords()
        self.halted = True
        self._epoch += 1
        if self._ticker is not None:
            self._ticker.cancel()
        self._consumer.pause()
        self._poll_buffer.clear()
        self._jobs.clear()
        self._blocked_senders.clear()
        self._results.clear()
        self._blocked_results.clear()
        self._poll_blocked = False

    def _epoch_guard(self, action: Callable[[], None]) -> Callable[[], None]:
        """``action`` wrapped so that it does nothing once the pool has stopped."""
        epoch = self._epoch

        def guarded() -> None:
            if epoch == self._epoch:
                action()

        return guarded


def _take(column: list[_T], entries: Sequence[int]) -> list[_T]:
    """The entries of ``column`` at ``entries`` (a range is a slice)."""
    if isinstance(entries, range):
        return column[entries.start : entries.stop]
    return [column[i] for i in entries]


def _schedulable(config: BurrowConfig) -> bool:
    """Whether the batch schedule gives exactly the per-event times for ``config``."""
    return (
        config.failure_probability == 0
        and config.result_handling_time_us == 0
        and config.tracking == "global"
        and config.batch_trigger == "after_timer"
    )

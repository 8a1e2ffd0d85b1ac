"""The Burrow pool's work as one schedule per batch: c FIFO workers computed, not simulated.

When a processing attempt cannot fail and nothing else is in the job channel (no retries),
the pool is a FIFO queue in front of ``c`` identical workers, and every time in it follows
from the submissions and the drawn durations. For the ``k``-th job (``k`` counts from 0 over
the pool's life), with ``Q`` the job channel's capacity and ``t`` the time the poll loop
reaches the job (the batch's arrival, or the time the previous job got into the channel):

* it gets into the channel at ``entered = max(t, started[k - Q])``: a full channel holds
  exactly jobs ``k - Q .. k - 1`` and has room once job ``k - Q`` left it (``Q = 0``: the job
  is handed straight to a worker, ``entered = started``);
* it starts at ``started = max(entered, earliest free worker)`` (the workers' free times are
  a plain list: for a few workers, a scan for the earliest costs less than a heap's calls);
* it finishes at ``finished = started + duration``;
* it joins the contiguous processed prefix at ``ready``, the running maximum of ``finished``
  over jobs ``0 .. k`` (every job succeeds, so the prefix only waits for earlier jobs).

:class:`BatchSchedule` keeps these as columns, one entry per job, computed when a batch is
submitted; nothing happens at those times. Whoever observes the pool at time ``now`` calls
:meth:`BatchSchedule.advance`, which moves the processed prefix over the jobs whose ``ready``
is before ``now`` and returns them, so they are reported once, in order, with their own times.

Observers see what happened strictly before ``now``: an event at exactly ``now`` is taken to
come after the observer, as an engine event scheduled earlier (a commit tick, a probe, a
fault) runs before a job finish scheduled later. :meth:`~BatchSchedule.advance` with
``inclusive=True`` also takes jobs ready at ``now`` (the pool's own wake-up at a batch's
last ``ready``).

It is also a sequence space for the commit plan (:class:`~sim.clients.burrow.tracker.CommitPlan`):
sequence ``k`` is job ``k``; :meth:`commit` marks a prefix committed and forgets its columns.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Final

from replica.types import TopicPartition
from sim.clients.burrow.tracker import CommitPlan

__all__ = ["BatchSchedule"]

_COMPACT_AT: Final = 4096
"""Columns are trimmed once this many entries are no longer needed."""


class BatchSchedule:
    """The jobs of one fast-path pool (see the module doc). Invariants: ``committed <= done
    <= jobs``; the ``entered``, ``started`` and ``ready`` columns never decrease."""

    __slots__ = (
        "_base",
        "_free",
        "_queue_size",
        "committed",
        "done",
        "entered",
        "finished",
        "message_ids",
        "offsets",
        "ready",
        "started",
        "submitted",
        "tps",
    )

    def __init__(self, num_workers: int, job_queue_size: int) -> None:
        self._free = [0] * num_workers  # the times the workers are free, in no order
        self._queue_size = job_queue_size
        self._base = 0  # job number of column entry 0
        self.committed = 0  # jobs 0 .. committed - 1 are committed
        self.done = 0  # jobs 0 .. done - 1 are in the reported processed prefix
        self.tps: list[TopicPartition] = []
        self.offsets: list[int] = []
        self.message_ids: list[int] = []
        self.submitted: list[int] = []  # when the poll loop reached the job
        self.entered: list[int] = []  # when it got into the job channel
        self.started: list[int] = []
        self.finished: list[int] = []
        self.ready: list[int] = []  # when it joined the contiguous processed prefix

    @property
    def jobs(self) -> int:
        """Jobs submitted so far (the next job's number)."""
        return self._base + len(self.started)

    def submit(
        self,
        now: int,
        tps: Sequence[TopicPartition],
        offsets: Sequence[int],
        message_ids: Sequence[int],
        durations: Sequence[int],
    ) -> int:
        """Schedule one job per column entry, reached by the poll loop from ``now`` on; return
        the time the last one gets into the job channel (the poll loop is blocked until then
        if it is after ``now``). ``now`` must not be before the previous return value."""
        if not durations:
            return now
        free, queue_size, started = self._free, self._queue_size, self.started
        entered, finished, ready = self.entered, self.finished, self.ready
        first = len(started)
        behind = first - queue_size  # column entry of job k - Q for the first new job
        t = now
        waiting = 0  # the new jobs since ``t`` last moved, not in ``entered`` yet
        last_ready = ready[-1] if ready else 0
        for duration in durations:
            worker, soonest = 0, free[0]
            for w in range(1, len(free)):
                if free[w] < soonest:
                    worker, soonest = w, free[w]
            if queue_size:
                if behind >= 0 and started[behind] > t:
                    entered += [t] * waiting  # one boxed time for the jobs that entered at t
                    waiting = 0
                    t = started[behind]
                start = soonest if soonest > t else t
                waiting += 1
            else:
                start = t = soonest if soonest > t else t
            behind += 1
            started.append(start)
            finish = start + duration
            free[worker] = finish
            finished.append(finish)
            if finish > last_ready:
                last_ready = finish
            ready.append(last_ready)
        if queue_size:
            entered += [t] * waiting
        else:
            entered += started[first:]  # handed straight to a worker
        # The poll loop reaches a job when the one before it got into the channel.
        self.submitted.append(now)
        self.submitted += entered[first:-1]
        self.tps += tps
        self.offsets += offsets
        self.message_ids += message_ids
        return t

    def advance(self, now: int, *, inclusive: bool = False) -> tuple[int, int]:
        """Move the processed prefix over the jobs ready before ``now`` (or at ``now`` with
        ``inclusive``); return the column slice ``(lo, hi)`` of the jobs that joined it."""
        base = self._base
        lo = self.done - base
        ready = self.ready
        if lo >= len(ready) or ready[lo] > now or (ready[lo] == now and not inclusive):
            return lo, lo
        hi = bisect_left(ready, now + 1 if inclusive else now, lo)
        self.done = base + hi
        return lo, hi

    def processed_beyond(self, now: int, *, inclusive: bool = False) -> list[int]:
        """Column entries of jobs that finished before ``now`` (or at ``now`` with
        ``inclusive``) but are not in the prefix: processed, waiting for an earlier job."""
        finished = self.finished
        end = (bisect_right if inclusive else bisect_left)(self.started, now)
        return [
            i
            for i in range(self.done - self._base, end)
            if finished[i] < now or (inclusive and finished[i] == now)
        ]

    def job(self, entry: int) -> int:
        """The job number of column entry ``entry`` (entries move when columns are trimmed,
        job numbers do not)."""
        return self._base + entry

    def counts(self, now: int) -> tuple[int, int, int, int]:
        """Jobs reached by the poll loop, got into the job channel, started, and finished,
        strictly before ``now`` (counted over the pool's life)."""
        ready = bisect_left(self.ready, now)
        started = bisect_left(self.started, now)
        finished = self.finished
        done = ready + sum(1 for i in range(ready, started) if finished[i] < now)
        base = self._base
        return (
            base + bisect_left(self.submitted, now),
            base + bisect_left(self.entered, now),
            base + started,
            base + done,
        )

    def plan(self) -> CommitPlan:
        """The commit of the reported prefix not committed yet: the highest offset per
        partition, and this schedule marked through its last job."""
        base = self._base
        lo, hi = self.committed - base, self.done - base
        if hi <= lo:
            return CommitPlan({}, (), 0)
        tps, offsets = self.tps, self.offsets
        highest: dict[TopicPartition, int] = {}
        for i in range(hi - 1, lo - 1, -1):  # offsets grow per partition: the last one wins
            if tps[i] not in highest:
                highest[tps[i]] = offsets[i]
        return CommitPlan(highest, ((self, self.done - 1),), hi - lo)

    def commit(self, seq: int) -> None:
        """Mark jobs up to ``seq`` committed (``seq`` in ``[committed - 1, done - 1]``; raises
        ValueError otherwise) and forget columns no longer needed."""
        if not self.committed - 1 <= seq <= self.done - 1:
            raise ValueError(
                f"cannot commit through job {seq}: must be between the last committed "
                f"({self.committed - 1}) and the last processed in order ({self.done - 1})"
            )
        self.committed = seq + 1
        # Keep the window from the first uncommitted job, and job k - Q for the next job k.
        drop = min(self.committed, self.jobs - self._queue_size) - self._base
        if drop >= _COMPACT_AT:
            for column in (
                self.tps, self.offsets, self.message_ids, self.submitted, self.entered,
                self.started, self.finished, self.ready,
            ):  # fmt: skip
                del column[:drop]
            self._base += drop

"""PeriodicTask: a broker's periodic work on its scheduler (Kafka's ``KafkaScheduler.schedule``
with a period), parked while it has nothing to do.

Two tasks use it: the ISR check, which Kafka's ReplicaManager schedules as ``isr-expiration``
every ``replica.lag.time.max.ms / 2`` (each partition led here drops the followers that have
not caught up for ``replica.lag.time.max.ms``), and log retention, which Kafka's LogManager
schedules as ``kafka-log-retention`` every ``log.retention.check.interval.ms``. The task lives
on the broker's scheduler, the :class:`~purgatory.TimingWheel` of its own periodic work (beside
the replica fetchers' back-off wake-ups), and fires on the first ``advance`` at or after its
deadline; it then re-arms itself one interval after the time it ran, and runs its work.

A broker with nothing for a task to do (the ISR check on a broker that leads no partition)
should not be woken up for it, so the task can leave the scheduler (:meth:`PeriodicTask.activate`
with False) and be *parked*: its deadline keeps moving exactly as if it had fired
(:meth:`PeriodicTask.advance_parked` on every advance of the broker), and it goes back on the
scheduler at that deadline when activated again. Parked or not, the work therefore runs at the
same times; only the broker's wake-ups differ.
"""

from __future__ import annotations

from collections.abc import Callable

from purgatory import TimerTask, TimingWheel

__all__ = ["PeriodicTask"]


class PeriodicTask(TimerTask):
    """Run ``work(now)`` every ``interval_ms`` on ``scheduler`` while active (see the module
    docstring). Starts parked, first due one interval after the scheduler's current time."""

    __slots__ = ("_interval_ms", "_scheduler", "_work")

    def __init__(
        self, scheduler: TimingWheel, interval_ms: int, work: Callable[[int], None]
    ) -> None:
        super().__init__()
        self._scheduler = scheduler
        self._interval_ms = interval_ms
        self._work = work
        self.deadline = scheduler.now + interval_ms

    def run(self) -> None:
        now = self._scheduler.now
        self._scheduler.add(self, now + self._interval_ms)
        self._work(now)

    def activate(self, active: bool) -> None:
        """Be on the scheduler while ``active``, parked otherwise (idempotent)."""
        if active and not self.scheduled:
            self._scheduler.add(self, self.deadline)
        elif not active:
            self.cancel()

    def advance_parked(self, now_ms: int) -> None:
        """While parked, move the deadline as a run at ``now_ms`` would (there is nothing to
        do). Call before advancing the scheduler to ``now_ms``."""
        if not self.scheduled and now_ms >= self.deadline:
            self.deadline = now_ms + self._interval_ms

"""IsrExpiration: a leader's periodic ISR check, a task on the broker's scheduler.

Kafka's ReplicaManager schedules ``isr-expiration`` every ``replica.lag.time.max.ms / 2``:
each partition led here drops the followers that have not caught up for
``replica.lag.time.max.ms`` (``Partition.maybe_shrink_isr``). Here the task lives on the
broker's scheduler, the :class:`~purgatory.TimingWheel` of its own periodic work (beside the
replica fetchers' back-off wake-ups), and fires on the first ``advance`` at or after its
deadline; it then re-arms itself one interval after the time it ran, and runs the check.

A broker that leads no partition has nothing to check and should not be woken up for it, so
the task leaves the scheduler (:meth:`IsrExpiration.lead` with False) and is *parked*: its
deadline keeps moving exactly as if it had fired (:meth:`IsrExpiration.advance_parked` on every
advance of the broker), and it goes back on the scheduler at that deadline when the broker leads
a partition again. Parked or not, the check therefore runs at the same times; only the
broker's wake-ups differ.
"""

from __future__ import annotations

from collections.abc import Callable

from purgatory import TimerTask, TimingWheel

__all__ = ["IsrExpiration"]


class IsrExpiration(TimerTask):
    """Run ``check(now)`` every ``interval_ms`` on ``scheduler`` while the broker leads
    (see the module docstring). Starts parked, first due one interval after the
    scheduler's current time."""

    __slots__ = ("_check", "_interval_ms", "_scheduler")

    def __init__(
        self, scheduler: TimingWheel, interval_ms: int, check: Callable[[int], None]
    ) -> None:
        super().__init__()
        self._scheduler = scheduler
        self._interval_ms = interval_ms
        self._check = check
        self.deadline = scheduler.now + interval_ms

    def run(self) -> None:
        now = self._scheduler.now
        self._scheduler.add(self, now + self._interval_ms)
        self._check(now)

    def lead(self, leading: bool) -> None:
        """Be on the scheduler while ``leading`` (the broker leads a partition), parked
        otherwise."""
        if leading and not self.scheduled:
            self._scheduler.add(self, self.deadline)
        elif not leading:
            self.cancel()

    def advance_parked(self, now_ms: int) -> None:
        """While parked, move the deadline as a run at ``now_ms`` would (nothing is led, so
        there is nothing to check). Call before advancing the scheduler to ``now_ms``."""
        if not self.scheduled and now_ms >= self.deadline:
            self.deadline = now_ms + self._interval_ms

"""PeriodicTask: periodic broker work on its scheduler, parked while it has nothing to do."""

from __future__ import annotations

from purgatory import TimingWheel
from replica.periodic_task import PeriodicTask


def _task(start: int = 0) -> tuple[TimingWheel, PeriodicTask, list[int]]:
    checks: list[int] = []
    scheduler = TimingWheel(start=start)
    return scheduler, PeriodicTask(scheduler, 100, checks.append), checks


def test_it_runs_every_interval_after_the_time_it_ran() -> None:
    scheduler, task, checks = _task(start=5)
    task.activate(True)
    assert scheduler.next_deadline() == 105
    scheduler.advance(104)
    scheduler.advance(130)  # late: the next one is an interval after this run
    assert checks == [130] and scheduler.next_deadline() == 230
    scheduler.advance(500)
    assert checks == [130, 500]


def test_parked_it_wakes_nobody_and_moves_as_if_it_had_run() -> None:
    scheduler, task, checks = _task()
    assert not task.scheduled and scheduler.next_deadline() is None  # starts parked
    task.advance_parked(50)
    assert task.deadline == 100
    task.advance_parked(120)  # due while parked: moves on, checks nothing
    scheduler.advance(120)
    assert task.deadline == 220 and checks == []
    task.activate(True)
    assert scheduler.next_deadline() == 220
    scheduler.advance(220)
    assert checks == [220]
    task.activate(False)
    assert scheduler.next_deadline() is None and task.deadline == 320
    task.activate(False)  # idempotent
    task.activate(True)
    task.activate(True)
    assert scheduler.next_deadline() == 320 and len(scheduler) == 1

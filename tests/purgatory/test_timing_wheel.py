"""TimingWheel: firing times and order, cancel, re-arm, next_deadline, far deadlines, callbacks
that change the wheel while it advances, errors raised by callbacks, re-entrancy."""

from __future__ import annotations

from typing import Any

import pytest

from purgatory import (
    InvalidDelayError,
    ManualClock,
    ReentrantAdvanceError,
    TimerTask,
    TimingWheel,
)
from tests.builds import bad_argument


def stored_entries(wheel: TimingWheel) -> int:
    """How many task entries the wheel's internal slots hold (cancel must leave none behind).

    Also checks that each level's occupancy bitmap has a bit set exactly for its non-empty
    slots. The only place the tests look inside the wheel.
    """
    total = len(wheel._due)
    for level, slots in enumerate(wheel._levels):
        bitmap = sum(1 << index for index, slot in enumerate(slots) if slot)
        assert wheel._occupied[level] == bitmap, f"level {level} bitmap is stale"
        total += sum(len(slot) for slot in slots)
    return total


class Recorder:
    """Schedules named tasks that append their name to ``fired`` when they run."""

    def __init__(self, wheel: TimingWheel) -> None:
        self.wheel = wheel
        self.fired: list[str] = []

    def schedule(self, name: str, deadline: int) -> TimerTask:
        return self.wheel.schedule(deadline, lambda: self.fired.append(name))

    def take(self) -> list[str]:
        fired, self.fired = self.fired, []
        return fired


# -- firing times -------------------------------------------------------------------------


def test_a_task_fires_at_its_deadline_and_only_once() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    task = rec.schedule("a", 10)
    assert task.scheduled and task.deadline == 10 and len(wheel) == 1
    assert wheel.advance(9) == 0 and rec.take() == []
    assert wheel.advance(10) == 1 and rec.take() == ["a"]
    assert not task.scheduled and len(wheel) == 0
    assert wheel.advance(10_000) == 0 and rec.take() == []
    assert wheel.now == 10_000


@pytest.mark.parametrize(
    ("tick", "deadline", "fires_at"),
    [(10, 25, 30), (10, 30, 30), (10, 31, 40), (7, 1, 7), (3, 0, 0), (1000, 1, 1000)],
)
def test_deadlines_round_up_to_the_tick(tick: int, deadline: int, fires_at: int) -> None:
    wheel = TimingWheel(tick)
    rec = Recorder(wheel)
    rec.schedule("a", deadline)
    assert wheel.next_deadline() == fires_at
    if fires_at > 0:
        wheel.advance(fires_at - 1)
        assert rec.take() == []
    wheel.advance(fires_at)
    assert rec.take() == ["a"]


def test_with_a_coarse_tick_a_past_deadline_in_the_current_tick_waits_for_its_end() -> None:
    # schedule/add's contract for tick > 1: a task fires at its deadline rounded UP to a tick
    # boundary, never early (Kafka's wheel rounds down and may fire up to a tick early). So a
    # deadline already passed, but inside the tick in progress, fires when that tick ends,
    # not at the next advance.
    wheel = TimingWheel(10)
    rec = Recorder(wheel)
    wheel.advance(15)
    rec.schedule("passed-in-this-tick", 12)
    rec.schedule("at-this-tick-start", 10)
    assert wheel.next_deadline() == 10
    assert wheel.advance(15) == 1 and rec.take() == ["at-this-tick-start"]
    assert wheel.next_deadline() == 20
    wheel.advance(19)
    assert rec.take() == []
    wheel.advance(20)
    assert rec.take() == ["passed-in-this-tick"]
    rec.schedule("a-tick-later", 21)
    wheel.advance(29)
    assert rec.take() == []  # 8 units after its deadline, still not due
    wheel.advance(30)
    assert rec.take() == ["a-tick-later"]


def test_advance_fires_in_deadline_order_with_ties_in_scheduling_order() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    deadlines = {"late": 10**6, "b1": 64, "a": 5, "c": 4096, "b2": 64, "d": 4095, "e": 63}
    for name, deadline in deadlines.items():
        rec.schedule(name, deadline)
    assert wheel.advance(10**7) == 7
    assert rec.take() == ["a", "e", "b1", "b2", "d", "c", "late"]


def test_with_a_coarse_tick_one_batch_still_fires_in_deadline_order() -> None:
    wheel = TimingWheel(100)
    rec = Recorder(wheel)
    for name, deadline in [("99", 99), ("1", 1), ("50a", 50), ("100", 100), ("50b", 50)]:
        rec.schedule(name, deadline)
    assert wheel.advance(100) == 5
    assert rec.take() == ["1", "50a", "50b", "99", "100"]


def test_ties_keep_scheduling_order_when_scheduled_at_different_times() -> None:
    # "first" is scheduled far ahead (a high level); "second" for the same deadline once the
    # wheel is close to it (level 0): the cascade must not put "first" behind "second".
    wheel = TimingWheel()
    rec = Recorder(wheel)
    rec.schedule("first", 5000)
    wheel.advance(4990)
    rec.schedule("second", 5000)
    wheel.advance(5000)
    assert rec.take() == ["first", "second"]


def test_a_task_already_past_fires_on_the_next_advance_exactly_once() -> None:
    wheel = TimingWheel(start=1000)
    rec = Recorder(wheel)
    rec.schedule("past", 3)
    rec.schedule("now", 1000)
    assert len(wheel) == 2
    assert wheel.next_deadline() == 3
    assert wheel.advance(1000) == 2  # the same time: past and current deadlines are due
    assert rec.take() == ["past", "now"]
    assert wheel.advance(5000) == 0 and rec.take() == []


def test_a_task_past_due_on_a_coarse_wheel_reports_its_rounded_time() -> None:
    wheel = TimingWheel(10, start=95)
    rec = Recorder(wheel)
    rec.schedule("past", 12)
    rec.schedule("soon", 96)
    assert wheel.next_deadline() == 20  # already <= now: due at the next advance
    assert wheel.advance(95) == 1 and rec.take() == ["past"]
    assert wheel.next_deadline() == 100
    assert wheel.advance(99) == 0
    assert wheel.advance(100) == 1 and rec.take() == ["soon"]


def test_subclassed_timer_tasks_can_be_added_and_re_added_after_firing() -> None:
    runs: list[int] = []

    class Tick(TimerTask):
        def run(self) -> None:
            runs.append(self.deadline)

    wheel = TimingWheel()
    task = Tick()
    wheel.add(task, 7)
    wheel.advance(7)
    wheel.add(task, 9)  # fired tasks can be added again
    wheel.advance(20)
    assert runs == [7, 9]


# -- cancel and re-arm --------------------------------------------------------------------


def test_cancel_is_eager_and_leaves_nothing_behind() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    deadlines = [1, 2, 63, 64, 65, 4095, 4096, 10**5, 10**9, 10**11, 0]
    tasks = [rec.schedule(str(d), d) for d in deadlines]
    assert stored_entries(wheel) == len(wheel) == len(deadlines)
    for count, task in enumerate(tasks, start=1):
        assert task.cancel() is True
        assert not task.scheduled
        assert len(wheel) == len(deadlines) - count  # len drops at once
        assert stored_entries(wheel) == len(wheel)  # no tombstone
    assert wheel.next_deadline() is None
    assert all(task.cancel() is False for task in tasks)
    assert wheel.advance(10**12) == 0 and rec.take() == []


def test_cancelling_a_fired_task_returns_false() -> None:
    wheel = TimingWheel()
    task = wheel.schedule(5, lambda: None)
    wheel.advance(5)
    assert task.cancel() is False
    assert len(wheel) == 0


def test_reschedule_moves_a_task_earlier_or_later() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    earlier = rec.schedule("earlier", 100)
    later = rec.schedule("later", 100)
    wheel.reschedule(earlier, 50)
    wheel.reschedule(later, 10**8)
    assert len(wheel) == 2 and stored_entries(wheel) == 2
    assert wheel.next_deadline() == 50
    wheel.advance(99)
    assert rec.take() == ["earlier"]
    wheel.advance(10**8 - 1)
    assert rec.take() == []
    wheel.advance(10**8)
    assert rec.take() == ["later"]


def test_reschedule_re_arms_fired_and_cancelled_tasks() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    fired = rec.schedule("fired", 1)
    cancelled = rec.schedule("cancelled", 1)
    cancelled.cancel()
    wheel.advance(1)
    assert rec.take() == ["fired"]
    wheel.reschedule(fired, 3)
    wheel.reschedule(cancelled, 2)
    assert len(wheel) == 2
    wheel.advance(3)
    assert rec.take() == ["cancelled", "fired"]


def test_a_rescheduled_task_counts_as_scheduled_last_for_ties() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    a = rec.schedule("a", 10)
    rec.schedule("b", 10)
    wheel.reschedule(a, 10)
    wheel.advance(10)
    assert rec.take() == ["b", "a"]


# -- next_deadline and len ----------------------------------------------------------------


@pytest.mark.parametrize("tick", [1, 3, 64])
def test_next_deadline_is_the_earliest_firing_time_across_levels(tick: int) -> None:
    wheel = TimingWheel(tick)
    assert wheel.next_deadline() is None
    deadlines = [10**11, 5 * 64**3 + 7, 64**2 + 1, 65, 2]
    tasks = []
    for deadline in deadlines:
        tasks.append(wheel.schedule(deadline, lambda: None))
        expected = min(d for d in deadlines[: len(tasks)])
        assert wheel.next_deadline() == -(-expected // tick) * tick
    assert len(wheel) == len(deadlines)
    # Fire them one by one: next_deadline follows, and advancing to it fires exactly one.
    for deadline in sorted(deadlines):
        firing = -(-deadline // tick) * tick
        assert wheel.next_deadline() == firing
        if firing - 1 >= wheel.now:
            assert wheel.advance(firing - 1) == 0
        assert wheel.advance(firing) == 1
    assert wheel.next_deadline() is None and len(wheel) == 0


def test_next_deadline_with_a_task_in_a_high_level_slot_is_its_rounded_deadline() -> None:
    wheel = TimingWheel(10)
    wheel.schedule(64 * 64 * 10 * 3 + 55, lambda: None)  # level 2, not on a slot boundary
    wheel.schedule(64 * 64 * 10 * 3 + 999, lambda: None)  # same slot, later
    assert wheel.next_deadline() == 64 * 64 * 10 * 3 + 60


def test_next_deadline_with_a_due_task_is_at_or_before_now() -> None:
    wheel = TimingWheel(5, start=100)
    wheel.schedule(7, lambda: None)
    wheel.schedule(103, lambda: None)
    assert wheel.next_deadline() == 10
    wheel.advance(100)
    assert wheel.next_deadline() == 105


def test_far_deadlines_create_levels_lazily() -> None:
    wheel = TimingWheel()
    assert len(wheel._levels) == 0
    rec = Recorder(wheel)
    rec.schedule("soon", 3)
    assert len(wheel._levels) == 1
    rec.schedule("days", 10**11)  # 10**11 ms is more than three years
    assert 1 < len(wheel._levels) <= 7
    assert wheel.next_deadline() == 3
    wheel.advance(3)
    assert wheel.next_deadline() == 10**11
    assert wheel.advance(10**11 - 1) == 0
    assert wheel.advance(10**11) == 1
    assert rec.take() == ["soon", "days"]


def test_huge_steps_fire_everything_in_order() -> None:
    wheel = TimingWheel(7, start=12_345)
    rec = Recorder(wheel)
    deadlines = [12_346 + 97**k for k in range(8)]
    for deadline in reversed(deadlines):
        rec.schedule(str(deadline), deadline)
    assert wheel.advance(10**15) == len(deadlines)
    assert rec.take() == [str(d) for d in deadlines]


# -- callbacks changing the wheel while it advances ---------------------------------------


def test_a_callback_can_cancel_a_later_task_of_the_same_batch() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    victim: list[TimerTask] = []

    def killer() -> None:
        rec.fired.append("killer")
        victim[0].cancel()

    wheel.schedule(5, killer)
    victim.append(rec.schedule("victim", 5))
    rec.schedule("other", 5)
    assert wheel.advance(5) == 2
    assert rec.take() == ["killer", "other"]
    assert len(wheel) == 0 and stored_entries(wheel) == 0


def test_a_callback_can_re_arm_a_task_of_the_same_batch() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    later: list[TimerTask] = []
    sooner: list[TimerTask] = []

    def re_arm() -> None:
        wheel.reschedule(later[0], 50)
        wheel.reschedule(sooner[0], 8)

    wheel.schedule(5, re_arm)
    later.append(rec.schedule("later", 5))
    sooner.append(rec.schedule("sooner", 5))
    assert wheel.advance(10) == 2  # "later" left the batch; "sooner" fired at 8, not at 5
    assert rec.take() == ["sooner"]
    assert later[0].scheduled and wheel.next_deadline() == 50 and len(wheel) == 1
    # re-armed to a time before the batch's own deadline: still fires in this same call
    earlier = rec.schedule("earlier", 30)
    wheel.schedule(25, lambda: wheel.reschedule(earlier, 11))
    assert wheel.advance(25) == 2
    assert rec.take() == ["earlier"]


def test_callbacks_can_schedule_tasks_due_now_or_far_away() -> None:
    wheel = TimingWheel(10)
    rec = Recorder(wheel)

    def spawn() -> None:
        rec.fired.append("spawner")
        rec.schedule("past", 1)
        rec.schedule("now", wheel.now)
        rec.schedule("after-now-same-tick", wheel.now + 5)  # rounds up past now
        rec.schedule("far", 10**10)

    wheel.schedule(20, spawn)
    rec.schedule("between", 30)
    assert wheel.advance(40) == 4
    assert rec.take() == ["spawner", "past", "between", "now"]
    assert len(wheel) == 2
    assert wheel.next_deadline() == 50
    wheel.advance(50)
    assert rec.take() == ["after-now-same-tick"]
    assert wheel.next_deadline() == 10**10


def test_a_callback_can_re_arm_its_own_task() -> None:
    wheel = TimingWheel()
    runs: list[int] = []

    class Periodic(TimerTask):
        def run(self) -> None:
            runs.append(wheel.now)
            if len(runs) < 4:
                wheel.reschedule(self, self.deadline + 10)

    wheel.add(Periodic(), 10)
    assert wheel.advance(100) == 4
    assert runs == [100, 100, 100, 100]  # every deadline <= now runs within this advance
    assert len(wheel) == 0


def test_advance_from_a_callback_raises_reentrant_advance_error() -> None:
    wheel = TimingWheel()
    errors: list[Exception] = []

    def reenter() -> None:
        try:
            wheel.advance(wheel.now)
        except ReentrantAdvanceError as error:
            errors.append(error)

    wheel.schedule(1, reenter)
    rec = Recorder(wheel)
    rec.schedule("after", 2)
    assert wheel.advance(2) == 2
    assert len(errors) == 1 and "callback" in str(errors[0])
    assert rec.take() == ["after"]
    wheel.schedule(3, lambda: None)
    assert wheel.advance(3) == 1  # the wheel is usable afterwards


# -- a callback raising -------------------------------------------------------------------


class Boom(Exception):
    pass


def explode() -> None:
    raise Boom


def test_an_error_in_a_callback_propagates_and_the_rest_of_the_batch_fires_later() -> None:
    wheel = TimingWheel()
    rec = Recorder(wheel)
    rec.schedule("first", 5)
    wheel.schedule(5, explode)
    rec.schedule("same-batch", 5)
    rec.schedule("later-slot", 7)
    rec.schedule("future", 100)
    with pytest.raises(Boom):
        wheel.advance(10)
    assert rec.take() == ["first"]
    assert len(wheel) == 3  # the raising task counts as fired
    assert stored_entries(wheel) == 3
    assert wheel.next_deadline() == 5  # the rest of the batch is due (<= now)
    assert wheel.advance(10) == 2
    assert rec.take() == ["same-batch", "later-slot"]
    assert wheel.next_deadline() == 100 and len(wheel) == 1
    wheel.advance(100)
    assert rec.take() == ["future"]


def test_tasks_scheduled_after_an_error_keep_their_order() -> None:
    wheel = TimingWheel(10)
    rec = Recorder(wheel)
    wheel.schedule(3, explode)
    rec.schedule("rest", 9)
    with pytest.raises(Boom):
        wheel.advance(10)
    rec.schedule("new-past", 1)  # earlier deadline than "rest", scheduled after the error
    rec.schedule("new-now", 10)
    assert wheel.next_deadline() == 10
    assert wheel.advance(10) == 3
    assert rec.take() == ["new-past", "rest", "new-now"]
    assert len(wheel) == 0 and stored_entries(wheel) == 0


def test_an_error_in_the_last_task_leaves_a_consistent_wheel() -> None:
    wheel = TimingWheel()
    wheel.schedule(1, explode)
    with pytest.raises(Boom):
        wheel.advance(1)
    assert len(wheel) == 0 and wheel.next_deadline() is None
    assert wheel.advance(2) == 0


# -- misc ---------------------------------------------------------------------------------


def test_notify_when_earlier_calls_back_once_for_an_earlier_task() -> None:
    wheel = TimingWheel()
    woken: list[int] = []
    wheel.notify_when_earlier(100, lambda: woken.append(len(wheel)))
    wheel.schedule(100, lambda: None)  # not earlier
    assert woken == []
    wheel.schedule(99, lambda: None)
    assert woken == [2]  # called after the task is in the wheel
    wheel.schedule(1, lambda: None)
    assert woken == [2]  # once only
    wheel.notify_when_earlier(50, lambda: woken.append(-1))
    wheel.notify_when_earlier(50, None)  # cancelled
    wheel.schedule(0, lambda: None)
    assert woken == [2]


def test_repr_and_start() -> None:
    wheel = TimingWheel(4, start=40)
    wheel.schedule(100, lambda: None)
    assert wheel.now == 40 and wheel.tick == 4
    assert repr(wheel) == "TimingWheel(tick=4, now=40, scheduled=1)"


# -- call_later -----------------------------------------------------------------------------


def test_call_later_calls_back_with_its_arguments_delay_units_from_now() -> None:
    wheel = TimingWheel(start=10)
    calls: list[tuple[object, ...]] = []
    task = wheel.call_later(5, lambda *args: calls.append(args), "a", 1)
    wheel.call_later(0, calls.append, ("now",))
    assert task.deadline == 15 and len(wheel) == 2
    wheel.advance(14)
    assert calls == [("now",)]
    wheel.advance(15)
    assert calls == [("now",), ("a", 1)]
    cancelled = wheel.call_later(3, calls.append, "never")
    assert cancelled.cancel() is True
    wheel.advance(100)
    assert calls == [("now",), ("a", 1)]


def test_call_later_counts_from_the_wheels_clock_when_it_has_one() -> None:
    clock = ManualClock(100)
    wheel = TimingWheel(tick=10, clock=clock)  # the wheel's own time is still 0
    fired: list[int] = []
    assert wheel.call_later(25, lambda: fired.append(wheel.now)).deadline == 125
    wheel.advance(129)
    assert fired == []
    wheel.advance(130)  # 125 rounded up to the tick
    assert fired == [130]


@pytest.mark.parametrize("delay", [-1, 1.5, "3", None])
def test_call_later_rejects_a_delay_that_is_not_a_non_negative_int(delay: Any) -> None:
    wheel = TimingWheel()
    match = r"delay must be a non-negative int.*got"
    with bad_argument(InvalidDelayError, delay, where=TimingWheel, match=match):
        wheel.call_later(delay, print)
    assert len(wheel) == 0

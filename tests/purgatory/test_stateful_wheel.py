"""The timing wheel against a reference model (a dict of task -> (deadline, scheduling order)).

Random tick sizes and start times; rules schedule, cancel, re-arm and re-add tasks, advance by
small and huge steps, and schedule tasks whose callbacks cancel another task or schedule a new
one while the wheel advances. The model fires, at ``advance(now)``, every task whose deadline
rounded up to the tick is <= now, in (deadline, scheduling order) order; invariants check
``len``, ``next_deadline`` and that cancelled tasks leave nothing behind.
"""

from __future__ import annotations

import itertools

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from purgatory import AlreadyScheduledError, TimerTask, TimingWheel
from tests.purgatory.test_timing_wheel import stored_entries

OFFSETS = st.one_of(st.integers(-100, 3000), st.integers(0, 10**11))


class ModelTask(TimerTask):
    """A task whose run is recorded by the machine; it may cancel or spawn another task."""

    __slots__ = ("cancels", "machine", "spawn_offset")

    def __init__(
        self,
        machine: WheelMachine,
        cancels: ModelTask | None = None,
        spawn_offset: int | None = None,
    ) -> None:
        super().__init__()
        self.machine = machine
        self.cancels = cancels
        self.spawn_offset = spawn_offset

    def run(self) -> None:
        self.machine.ran(self)


class WheelMachine(RuleBasedStateMachine):
    tasks = Bundle[ModelTask]("tasks")

    def __init__(self) -> None:
        super().__init__()
        self.wheel = TimingWheel()
        self.model: dict[ModelTask, tuple[int, int]] = {}  # task -> (deadline, order)
        self.order = itertools.count()
        self.fired: list[ModelTask] = []  # by the real wheel, during the current advance
        self.spawned: dict[ModelTask, ModelTask] = {}  # spawner -> the task it scheduled

    def ran(self, task: ModelTask) -> None:
        self.fired.append(task)
        if task.cancels is not None:
            task.cancels.cancel()
        if task.spawn_offset is not None:
            child = ModelTask(self)
            self.spawned[task] = child
            self.wheel.add(child, self.wheel.now + task.spawn_offset)

    def firing_time(self, deadline: int) -> int:
        tick = self.wheel.tick
        return -(-deadline // tick) * tick

    def _add(self, task: ModelTask, offset: int) -> ModelTask:
        deadline = self.wheel.now + offset
        self.wheel.add(task, deadline)
        self.model[task] = (deadline, next(self.order))
        return task

    # -- rules ------------------------------------------------------------------------------

    @initialize(tick=st.sampled_from((1, 1, 2, 7, 64, 1000)), start=st.integers(0, 10**6))
    def create_wheel(self, tick: int, start: int) -> None:
        self.wheel = TimingWheel(tick, start=start)

    @rule(target=tasks, offset=OFFSETS)
    def schedule(self, offset: int) -> ModelTask:
        return self._add(ModelTask(self), offset)

    @rule(target=tasks, offset=OFFSETS, victim=tasks)
    def schedule_canceller(self, offset: int, victim: ModelTask) -> ModelTask:
        return self._add(ModelTask(self, cancels=victim), offset)

    @rule(target=tasks, offset=OFFSETS, spawn_offset=st.integers(-50, 300))
    def schedule_spawner(self, offset: int, spawn_offset: int) -> ModelTask:
        return self._add(ModelTask(self, spawn_offset=spawn_offset), offset)

    @rule(task=tasks)
    def cancel(self, task: ModelTask) -> None:
        assert task.cancel() == (task in self.model)
        self.model.pop(task, None)

    @rule(task=tasks, offset=OFFSETS)
    def reschedule(self, task: ModelTask, offset: int) -> None:
        deadline = self.wheel.now + offset
        self.wheel.reschedule(task, deadline)
        self.model[task] = (deadline, next(self.order))

    @rule(task=tasks, offset=OFFSETS)
    def add_again(self, task: ModelTask, offset: int) -> None:
        if task in self.model:
            try:
                self.wheel.add(task, self.wheel.now + offset)
            except AlreadyScheduledError:
                return
            raise AssertionError("a scheduled task was added twice")
        self._add(task, offset)

    @rule(step=st.integers(0, 500))
    def advance(self, step: int) -> None:
        self._advance(self.wheel.now + step)

    @rule(step=st.integers(0, 10**12))
    def advance_far(self, step: int) -> None:
        self._advance(self.wheel.now + step)

    @rule()
    def advance_to_next_deadline(self) -> None:
        deadline = self.wheel.next_deadline()
        if deadline is not None:
            self._advance(max(deadline, self.wheel.now))

    def _advance(self, now: int) -> None:
        existing = set(self.model)
        self.fired = []
        count = self.wheel.advance(now)
        fired = self.fired
        assert count == len(fired)
        assert len(set(fired)) == len(fired), "a task fired twice"
        # The model: repeatedly fire the earliest due task, applying its callback's effect.
        expected: list[ModelTask] = []
        while True:
            due = [
                (deadline, order, task)
                for task, (deadline, order) in self.model.items()
                if self.firing_time(deadline) <= now
            ]
            if not due:
                break
            _, _, task = min(due, key=lambda entry: entry[:2])
            del self.model[task]
            expected.append(task)
            if task.cancels is not None:
                self.model.pop(task.cancels, None)
            if task.spawn_offset is not None:
                child = self.spawned[task]
                self.model[child] = (now + task.spawn_offset, next(self.order))
        assert set(fired) == set(expected)
        # Tasks that were scheduled before the advance fire in (deadline, order) order.
        assert [t for t in fired if t in existing] == [t for t in expected if t in existing]

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def matches_the_model(self) -> None:
        assert len(self.wheel) == len(self.model)
        assert stored_entries(self.wheel) == len(self.model)
        expected = min((self.firing_time(d) for d, _ in self.model.values()), default=None)
        assert self.wheel.next_deadline() == expected
        for task, (deadline, _) in self.model.items():
            assert task.scheduled and task.deadline == deadline


WheelMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=50)
TestTimingWheelAgainstModel = WheelMachine.TestCase

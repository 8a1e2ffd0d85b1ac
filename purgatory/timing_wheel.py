"""A hierarchical timing wheel over integer time.

Time is an integer in whatever unit the caller chooses (milliseconds for the broker,
microseconds for the simulator). The wheel groups time into *ticks* of ``tick`` units; a task
fires at its deadline rounded up to a tick boundary, i.e. at the first ``advance(now)`` with
``now >= ceil(deadline / tick) * tick``: never before its deadline, at most ``tick - 1`` units
after it. With ``tick=1`` that is exactly ``now >= deadline``. Kafka's wheel rounds the other
way: a task fires when the tick holding its deadline begins, up to ``tick - 1`` units early.

Layout (after tokio's timer): level ``L`` has 64 slots, each spanning ``64**L`` ticks, plus an
occupancy bitmap (one Python int) per level. A task whose tick index ``t`` lies ahead of the
wheel's current tick ``e`` lives at the level of the highest base-64 digit in which ``t`` and
``e`` differ, in the slot named by ``t``'s digit at that level. So every task on level ``L`` is
due before every task on level ``L + 1``, and the next slot to process is the lowest set bit of
the lowest non-empty level: no empty slot is ever walked. Levels are created lazily, so a wheel
covers any deadline (six levels span 64**6 ticks: 2.2 years of 1 ms ticks).

Each slot is an insertion-ordered dict used as a set, and every task remembers the slot holding
it, so cancel is an O(1) eager delete that leaves nothing behind. When ``advance`` reaches a
slot it empties it: tasks due now fire, the rest cascade to lower levels.

The next deadline (:meth:`~TimingWheel.next_deadline`) is the smallest task deadline rounded up
to the tick: the due set's, else the first occupied slot's (level 0: its tick; higher levels:
the smallest deadline in it). Schedulers ask for it after every event, more often than the
wheel changes, so the wheel keeps it: a new task can only lower it, cancelling the task that
holds it or firing tasks makes it unknown until the next question, and cascading moves no
deadline.

Two times: :attr:`~TimingWheel.now` is how far the wheel has been advanced; the wheel's
:attr:`~TimingWheel.clock`, when it has one, is the current time that relative delays count
from (:meth:`~TimingWheel.call_later`, a purgatory's timeouts). Without a clock they count
from ``now``, which is right when whoever advances the wheel owns the time (a simulator), and
wrong when a real-time reaper does: the reaper advances the wheel only when something is due,
so ``now`` lags. That is why a reaper binds the wheel it drives to its own clock
(:class:`purgatory.clock.Reaper`).

The wheel is single-threaded, synchronous code: nothing happens between calls.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from operator import attrgetter
from typing import Final, TypeVarTuple

from mypy_extensions import mypyc_attr

from purgatory.errors import (
    AlreadyScheduledError,
    ClockNotCallableError,
    ClockWentBackwardsError,
    InvalidDeadlineError,
    InvalidDelayError,
    InvalidStartError,
    InvalidTickError,
    ReentrantAdvanceError,
)

__all__ = ["TimerTask", "TimingWheel"]

_BITS: Final = 6  # 64 slots per level
_SLOTS: Final = 1 << _BITS
_MASK: Final = _SLOTS - 1
_DUE: Final = -1  # level number of the slot holding tasks that are due

_Args = TypeVarTuple("_Args")

_by_deadline: Final = attrgetter("deadline")


@mypyc_attr(allow_interpreted_subclasses=True)  # users subclass it (compiled build)
class TimerTask:
    """Something a :class:`TimingWheel` runs at a deadline.

    Subclass it and override :meth:`run`, or let :meth:`TimingWheel.schedule` wrap a plain
    callback. A task is in at most one wheel at a time. Tasks are hashed by identity; a
    subclass must not define ``__eq__``/``__hash__`` (with attrs, use ``eq=False``).
    """

    __slots__ = ("_slot", "deadline")

    def __init__(self) -> None:
        self.deadline: int = 0
        self._slot: _Slot | None = None

    def run(self) -> None:
        """Called once by the wheel when the task is due. Override in subclasses."""
        raise NotImplementedError

    @property
    def scheduled(self) -> bool:
        """True while the task sits in a wheel waiting to fire."""
        return self._slot is not None

    def cancel(self) -> bool:
        """Remove the task from its wheel at once, in O(1).

        Returns True if the task was scheduled, False if it had already fired or been cancelled.
        Safe to call from any callback, including for a task due in the batch being fired.
        A subclass may override it to do more (:class:`~purgatory.DelayedOperation` does); the
        wheel itself always removes a task with ``TimerTask.cancel``.
        """
        slot = self._slot
        if slot is None:
            return False
        del slot[self]
        self._slot = None
        wheel = slot.wheel
        wheel._size -= 1
        if wheel._earliest_known and wheel._earliest == wheel._tick_time(self.deadline):
            wheel._earliest_known = False
        if not slot and slot.level >= 0:
            wheel._occupied[slot.level] &= slot.clear_mask
        return True


class _CallbackTask(TimerTask):
    """A task that calls a plain callback; what :meth:`TimingWheel.schedule` returns.

    Only :meth:`TimingWheel.schedule` creates these, without running ``__init__`` (see there).
    """

    __slots__ = ("callback",)

    callback: Callable[[], object]

    def run(self) -> None:
        self.callback()


# Allocates a task without calling its __init__: object.__new__ on pure Python, the native
# allocator in the compiled build (where object.__new__ refuses a native class).
_new_callback_task: Final = _CallbackTask.__new__


class _Slot(dict[TimerTask, None]):
    """One bucket: an ordered set of tasks that knows its place in the wheel."""

    __slots__ = ("clear_mask", "level", "wheel")

    def __init__(self, wheel: TimingWheel, level: int, index: int) -> None:
        # No super().__init__(): dict.__new__ already made the slot an empty dict.
        self.wheel = wheel
        self.level = level
        self.clear_mask = ~(1 << index)


@mypyc_attr(allow_interpreted_subclasses=True)  # users subclass it (compiled build)
class TimingWheel:
    """Hierarchical timing wheel: schedule, cancel, re-arm and fire tasks by integer deadline.

    ``tick`` is the size of one tick in time units (a positive int); ``start`` is the initial
    time (a non-negative int; deadlines may be any int, those in the past are due at once).
    ``clock()``, if given, reads the current time in the same units (see the module docstring);
    it is called once here, to check that it returns an int.

    Costs: schedule O(1) (O(levels) to pick the level), cancel O(1), ``advance`` O(1) per slot
    processed plus O(1) per task fired or cascaded (a task cascades at most once per level),
    ``next_deadline`` O(1) while known (see the module docstring), else O(1) when the earliest
    task is within 64 ticks and O(tasks in that one slot) otherwise.

    Errors raised by a task's ``run`` propagate out of :meth:`advance` after the wheel is made
    consistent: the raising task counts as fired, the tasks of the same batch that had not run
    yet stay due and fire at the next ``advance``.
    """

    __slots__ = (
        "_advancing",
        "_clock",
        "_due",
        "_due_unsorted",
        "_earliest",
        "_earliest_known",
        "_elapsed",
        "_levels",
        "_now",
        "_occupied",
        "_size",
        "_wake_before",
        "_wakeup",
        "tick",
    )

    def __init__(
        self, tick: int = 1, *, start: int = 0, clock: Callable[[], int] | None = None
    ) -> None:
        if type(tick) is not int or tick <= 0:
            raise InvalidTickError(
                f"tick must be a positive integer number of time units, got {tick!r}"
            )
        _check_time("start", start)
        if start < 0:
            raise InvalidStartError(f"start must be a non-negative time, got {start}")
        if clock is not None:
            _check_clock(clock)
        self.tick = tick
        self._now = start
        self._elapsed = start // tick  # index of the last tick processed
        self._levels: list[list[_Slot]] = []
        self._occupied: list[int] = []
        self._due = _Slot(self, _DUE, 0)
        self._due_unsorted = False  # due holds tasks whose deadlines may be out of order
        self._size = 0
        # The next deadline while known (see the module docstring): None when empty.
        self._earliest: int | None = None
        self._earliest_known = True
        self._advancing = False
        self._wakeup: Callable[[], None] | None = None
        self._wake_before = 0
        self._clock = clock

    @property
    def now(self) -> int:
        """The time passed to the last :meth:`advance` (or ``start``)."""
        return self._now

    @property
    def clock(self) -> Callable[[], int] | None:
        """The clock relative delays count from (None: :attr:`now`); see the module docstring.

        Set by ``clock=`` or by the first reaper that drives the wheel, then fixed.
        """
        return self._clock

    def __len__(self) -> int:
        """Number of scheduled tasks."""
        return self._size

    def __repr__(self) -> str:
        return f"TimingWheel(tick={self.tick}, now={self._now}, scheduled={self._size})"

    # -- scheduling -------------------------------------------------------------------------

    def schedule(self, deadline: int, callback: Callable[[], object]) -> TimerTask:
        """Call ``callback()`` at ``deadline``, rounded up to the tick as :meth:`add` says;
        return the task (to cancel)."""
        # The hottest path of the wheel: the task is allocated without running __init__ (a
        # Python call less); its fields are set here and by add().
        task = _new_callback_task(_CallbackTask)
        task._slot = None
        task.callback = callback
        self.add(task, deadline)
        return task

    def add(self, task: TimerTask, deadline: int) -> None:
        """Schedule ``task`` to run at ``deadline`` rounded up to a multiple of ``tick``.

        It runs at the first :meth:`advance` to a time >= ``ceil(deadline / tick) * tick``:
        never before ``deadline``, at most ``tick - 1`` units after it (Kafka's wheel rounds
        down instead and may run a task up to a tick early). With ``tick=1`` a deadline at or
        before :attr:`now` runs at the next :meth:`advance`. With a larger tick so does a
        deadline at or before the start of the current tick, ``(now // tick) * tick``; one
        that has passed but lies inside the current tick runs when time reaches that tick's
        end.

        Raises AlreadyScheduledError if the task is already in a wheel (use
        :meth:`reschedule` to re-arm) and InvalidDeadlineError if the deadline is not an int.
        """
        if task._slot is not None:
            raise AlreadyScheduledError(
                f"{task!r} is already scheduled (deadline {task.deadline}); "
                "cancel it first or use reschedule()"
            )
        if type(deadline) is not int:
            _check_time("deadline", deadline)
        task.deadline = deadline
        self._size += 1
        tick = self.tick
        # The task's tick index is ceil(deadline / tick); no division for the usual tick of 1.
        index = deadline if tick == 1 else -(-deadline // tick)
        self._place(task, index)
        if self._earliest_known:
            earliest = self._earliest
            if earliest is None or index * tick < earliest:
                self._earliest = index * tick
        if self._wakeup is not None and deadline < self._wake_before:
            wakeup, self._wakeup = self._wakeup, None
            wakeup()

    def reschedule(self, task: TimerTask, deadline: int) -> None:
        """Re-arm ``task`` to ``deadline``, whether it is scheduled, fired or cancelled."""
        TimerTask.cancel(task)  # the timer entry only, even if a subclass overrides cancel
        self.add(task, deadline)

    def call_later(
        self, delay: int, callback: Callable[[*_Args], object], *args: *_Args
    ) -> TimerTask:
        """Call ``callback(*args)`` ``delay`` time units from now; return the task (to cancel).

        Now is the wheel's :attr:`clock` when it has one, else :attr:`now` (see the module
        docstring); the task fires like any other, at the deadline rounded up to the tick.
        Raises InvalidDelayError unless ``delay`` is an int >= 0.
        """
        if type(delay) is not int or delay < 0:
            raise InvalidDelayError(f"delay must be a non-negative int (time units), got {delay!r}")
        clock = self._clock
        now = self._now if clock is None else clock()
        return self.schedule(now + delay, partial(callback, *args) if args else callback)

    def notify_when_earlier(self, time: int, callback: Callable[[], None] | None) -> None:
        """Call ``callback()`` once, as soon as a task with a deadline before ``time`` is added.

        Reapers use this to wake early. A new call replaces the previous arrangement;
        ``callback=None`` cancels it.
        """
        self._wakeup = callback
        self._wake_before = time

    def _place(self, task: TimerTask, t: int) -> None:
        """Put ``task`` (tick index ``t``) in the slot where it belongs relative to now."""
        elapsed = self._elapsed
        if t <= elapsed:
            slot = self._due
            self._due_unsorted = True
        else:
            level = ((t ^ elapsed).bit_length() - 1) // _BITS
            index = (t >> (level * _BITS)) & _MASK
            try:
                slot = self._levels[level][index]
            except IndexError:  # the first task this far ahead: create the missing levels
                self._add_levels(level)
                slot = self._levels[level][index]
            if not slot:
                self._occupied[level] |= 1 << index
        slot[task] = None
        task._slot = slot

    def _add_levels(self, level: int) -> None:
        while len(self._levels) <= level:
            number = len(self._levels)
            self._levels.append([_Slot(self, number, i) for i in range(_SLOTS)])
            self._occupied.append(0)

    # -- time -------------------------------------------------------------------------------

    def advance(self, now: int) -> int:
        """Move the wheel to time ``now`` and run every task that is due, in deadline order.

        Tasks with equal deadlines run in the order they were scheduled. Callbacks may schedule,
        cancel or re-arm tasks; one scheduled for a time <= ``now`` runs in this same call.
        Returns how many tasks ran. Raises ClockWentBackwardsError if ``now`` is earlier than
        :attr:`now`, and ReentrantAdvanceError when called from one of this wheel's callbacks.
        """
        if type(now) is not int:
            _check_time("now", now)
        if now < self._now:
            raise ClockWentBackwardsError(
                f"advance({now}) is earlier than the wheel's current time {self._now}; "
                "time must not go backwards"
            )
        if self._advancing:
            raise ReentrantAdvanceError("advance() was called from a callback of the same wheel")
        self._advancing = True
        self._now = now
        target = now // self.tick
        fired = 0
        try:
            while True:
                if self._due:
                    fired += self._fire_due()
                    continue
                if not self._expire_next_slot(target):
                    break
            self._elapsed = target
        finally:
            self._advancing = False
        return fired

    def _expire_next_slot(self, target: int) -> bool:
        """Empty the earliest occupied slot if it begins at or before tick ``target``.

        The wheel's elapsed tick moves to the slot's start; tasks due then move to the due set,
        the others cascade to lower levels. Returns False when no slot begins by ``target``.
        """
        for level, bits in enumerate(self._occupied):
            if not bits:
                continue
            index = (bits & -bits).bit_length() - 1
            shift = level * _BITS
            start = ((self._elapsed >> (shift + _BITS)) << (shift + _BITS)) | (index << shift)
            if start > target:
                return False
            self._elapsed = start
            slot = self._levels[level][index]
            self._occupied[level] = bits & slot.clear_mask
            tasks = list(slot)
            slot.clear()
            if level == 0:  # every task here has tick index == start: it is due
                due = self._due
                for task in tasks:
                    due[task] = None
                    task._slot = due
                if self.tick != 1:
                    self._due_unsorted = True
            else:
                tick = self.tick
                for task in tasks:
                    self._place(task, -(-task.deadline // tick))
            return True
        return False

    def _fire_due(self) -> int:
        """Run the tasks that are due now, in deadline order. Returns how many ran."""
        self._earliest_known = False
        batch = self._due
        self._due = _Slot(self, _DUE, 0)
        tasks = list(batch)
        if self._due_unsorted:
            tasks.sort(key=_by_deadline)
            self._due_unsorted = False
        fired = 0
        for position, task in enumerate(tasks):
            if task._slot is not batch:  # cancelled or re-armed by an earlier callback
                continue
            task._slot = None
            self._size -= 1
            fired += 1
            try:
                task.run()
            except BaseException:
                self._requeue(batch, tasks[position + 1 :])
                raise
        return fired

    def _requeue(self, batch: _Slot, rest: list[TimerTask]) -> None:
        """After a callback raised: keep the batch's unfired tasks due, ahead of newer ones."""
        newer = self._due
        due = _Slot(self, _DUE, 0)
        for task in rest:
            if task._slot is batch:
                due[task] = None
                task._slot = due
        for task in newer:
            due[task] = None
            task._slot = due
        self._due = due
        self._due_unsorted = True

    def next_deadline(self) -> int | None:
        """The earliest time ``t`` at which ``advance(t)`` runs a task; None when none is scheduled.

        That is the earliest deadline rounded up to the tick; it is <= :attr:`now` when a task
        is already due. Kept between calls (see the module docstring); never walks empty slots.
        """
        if not self._earliest_known:
            self._earliest = self._find_earliest()
            self._earliest_known = True
        return self._earliest

    def _find_earliest(self) -> int | None:
        tick = self.tick
        if self._due:
            return self._tick_time(_min_deadline(self._due))
        for level, bits in enumerate(self._occupied):
            if bits:
                index = (bits & -bits).bit_length() - 1
                if level == 0:
                    start = ((self._elapsed >> _BITS) << _BITS) | index
                    return start * tick
                slot = self._levels[level][index]
                return self._tick_time(_min_deadline(slot))
        return None

    def _tick_time(self, deadline: int) -> int:
        """``deadline`` rounded up to the tick: when a task with it runs."""
        tick = self.tick
        return deadline if tick == 1 else -(-deadline // tick) * tick


def _min_deadline(slot: _Slot) -> int:
    """The smallest deadline in non-empty ``slot``: a native loop in the compiled build,
    where ``min()`` over a generator is a list plus a Python call."""
    tasks = iter(slot)
    earliest = next(tasks).deadline
    for task in tasks:
        if task.deadline < earliest:
            earliest = task.deadline
    return earliest


def _check_time(name: str, value: object) -> None:
    if type(value) is not int:
        raise InvalidDeadlineError(f"{name} must be an int (time units), got {value!r}")


def _check_clock(clock: object) -> None:
    if not callable(clock):
        raise ClockNotCallableError(
            "clock must be a callable returning the current time as an int (a ManualClock, "
            f"trio_clock(), asyncio_clock(), ...) or None, got {clock!r}"
        )
    now = clock()
    if type(now) is not int:
        raise InvalidDeadlineError(
            f"clock() must return an int (time units), got {now!r}; for a clock in float "
            "seconds (time.monotonic, loop.time) use purgatory.clock.LoopClock"
        )

"""Bad arguments raise specific exceptions with useful messages; exceptions raised by user
callbacks propagate and leave the wheel and the purgatory consistent."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import pytest

import purgatory.errors
from purgatory import (
    AlreadyScheduledError,
    ClockNotCallableError,
    ClockWentBackwardsError,
    DelayedOperationPurgatory,
    InvalidDeadlineError,
    InvalidGroupMinKeysError,
    InvalidKeysError,
    InvalidNameError,
    InvalidPurgeIntervalError,
    InvalidStartError,
    InvalidTickError,
    InvalidTimeoutError,
    OperationAlreadyWatchedError,
    PurgatoryError,
    TimingWheel,
)
from purgatory.delayed_operation import DelayedOperation
from purgatory.delayed_operation_purgatory import DEFAULT_GROUP_MIN_KEYS
from purgatory.testing import ConditionOperation
from tests.builds import bad_argument, compiled

Purgatory = DelayedOperationPurgatory[ConditionOperation]


def metrics(purgatory: Purgatory) -> tuple[int, int]:
    return purgatory.watched, purgatory.num_delayed


ERROR_KINDS = [
    (purgatory.errors.InvalidTickError, ValueError),
    (purgatory.errors.InvalidStartError, ValueError),
    (purgatory.errors.InvalidDeadlineError, TypeError),
    (purgatory.errors.InvalidDelayError, ValueError),
    (purgatory.errors.ClockWentBackwardsError, ValueError),
    (purgatory.errors.ClockNotCallableError, TypeError),
    (purgatory.errors.AlreadyScheduledError, RuntimeError),
    (purgatory.errors.ReentrantAdvanceError, RuntimeError),
    (purgatory.errors.InvalidNameError, ValueError),
    (purgatory.errors.InvalidPurgeIntervalError, ValueError),
    (purgatory.errors.InvalidGroupMinKeysError, ValueError),
    (purgatory.errors.InvalidTimeoutError, ValueError),
    (purgatory.errors.InvalidOperationTypeError, TypeError),
    (purgatory.errors.InvalidKeysError, ValueError),
    (purgatory.errors.OperationAlreadyWatchedError, ValueError),
    (purgatory.errors.OperationCancelledError, RuntimeError),
    (purgatory.errors.PurgatoryShutdownError, RuntimeError),
]


def test_every_error_class_is_listed() -> None:
    defined = {
        cls
        for cls in vars(purgatory.errors).values()
        if isinstance(cls, type) and issubclass(cls, PurgatoryError) and cls is not PurgatoryError
    }
    assert defined == {error for error, _ in ERROR_KINDS}
    assert all(getattr(purgatory, error.__name__) is error for error in defined)  # exported


@pytest.mark.parametrize(("error", "builtin"), ERROR_KINDS)
def test_every_error_is_a_purgatory_error_and_the_expected_builtin(
    error: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(error, PurgatoryError) and issubclass(error, builtin)


# -- timing wheel arguments ---------------------------------------------------------------


@pytest.mark.parametrize("tick", [0, -1, 1.0, "1", None])
def test_tick_must_be_a_positive_int(tick: Any) -> None:
    match = r"tick must be a positive integer.*got"
    with bad_argument(InvalidTickError, tick, where=TimingWheel, match=match):
        TimingWheel(tick)


@pytest.mark.parametrize("deadline", [1.5, 2.0, None, "3"])
def test_deadline_must_be_an_int(deadline: Any) -> None:
    wheel = TimingWheel()
    match = rf"deadline must be an int.*{deadline!r}"
    with bad_argument(InvalidDeadlineError, deadline, where=TimingWheel, match=match):
        wheel.schedule(deadline, lambda: None)
    assert len(wheel) == 0 and wheel.next_deadline() is None


@pytest.mark.parametrize("now", [1.5, None])
def test_now_and_start_must_be_ints(now: Any) -> None:
    with bad_argument(InvalidDeadlineError, now, where=TimingWheel, match="now must be an int"):
        TimingWheel().advance(now)
    with bad_argument(InvalidDeadlineError, now, where=TimingWheel, match="start must be an int"):
        TimingWheel(start=now)


def test_a_bool_for_an_int_is_refused_on_pure_python_and_is_that_int_when_compiled() -> None:
    if compiled(TimingWheel):
        # The compiled signature takes a bool for the int it is (tests/builds.py).
        assert TimingWheel(True).tick == 1 and TimingWheel(start=False).now == 0
        assert TimingWheel().schedule(True, print).deadline == 1
        assert DelayedOperationPurgatory("p", purge_interval=True).purge_interval == 1
    else:
        with pytest.raises(InvalidTickError, match="got True"):
            TimingWheel(True)
        with pytest.raises(InvalidDeadlineError, match="start must be an int"):
            TimingWheel(start=False)
        with pytest.raises(InvalidDeadlineError, match="got True"):
            TimingWheel().schedule(True, print)
        with pytest.raises(InvalidPurgeIntervalError, match="got True"):
            DelayedOperationPurgatory("p", purge_interval=True)
    if compiled(DelayedOperation):
        assert ConditionOperation(True).timeout == 1
    else:
        with pytest.raises(InvalidTimeoutError, match="got True"):
            ConditionOperation(True)


def test_the_clock_must_not_go_backwards() -> None:
    wheel = TimingWheel(start=100)
    fired: list[int] = []
    wheel.schedule(100, lambda: fired.append(1))
    with pytest.raises(ClockWentBackwardsError, match=r"advance\(99\).*current time 100"):
        wheel.advance(99)
    assert wheel.now == 100 and fired == [] and len(wheel) == 1
    assert wheel.advance(100) == 1


def test_adding_a_scheduled_task_raises() -> None:
    wheel, other = TimingWheel(), TimingWheel()
    task = wheel.schedule(10, lambda: None)
    with pytest.raises(AlreadyScheduledError, match=r"already scheduled \(deadline 10\)"):
        wheel.add(task, 20)
    with pytest.raises(AlreadyScheduledError):
        other.add(task, 20)
    assert task.deadline == 10 and len(wheel) == 1 and len(other) == 0


def test_negative_start_is_rejected() -> None:
    # Regression: with start < 0 the wheel's level arithmetic broke (next_deadline() was
    # wrong and advance() never returned), so it is refused. Negative deadlines stay fine.
    with pytest.raises(InvalidStartError, match=r"start must be a non-negative time, got -100"):
        TimingWheel(start=-100)
    with pytest.raises(InvalidStartError, match="start must be a non-negative"):
        DelayedOperationPurgatory("p", start=-1)
    wheel = TimingWheel(start=0)
    fired: list[int] = []
    wheel.schedule(-60, lambda: fired.append(-60))
    assert wheel.next_deadline() == -60
    assert wheel.advance(0) == 1 and fired == [-60]


# -- delayed operation and purgatory arguments --------------------------------------------


@pytest.mark.parametrize("timeout", [-1, 1.0, "5", None])
def test_timeout_must_be_a_non_negative_int(timeout: Any) -> None:
    match = r"timeout must be a non-negative int.*got"
    with bad_argument(InvalidTimeoutError, timeout, where=DelayedOperation, match=match):
        ConditionOperation(timeout)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([], "keys must not be empty"),
        ((), "keys must not be empty"),
        ("topic-0", "not a single str: 'topic-0'"),
        (b"k", "not a single bytes"),
        (7, "keys must be a non-empty sequence, got 7"),
        ((k for k in "ab"), "keys must be a non-empty sequence"),
    ],
)
def test_keys_must_be_a_non_empty_sequence_of_keys(keys: Any, message: str) -> None:
    purgatory = Purgatory("p")
    op = ConditionOperation(10)
    with pytest.raises(InvalidKeysError, match=message):
        purgatory.try_complete_else_watch(op, keys)
    assert op.calls == [] and metrics(purgatory) == (0, 0)
    assert purgatory.try_complete_else_watch(op, ["ok"]) is False  # still submittable


@pytest.mark.parametrize("keys", [[["unhashable"]], ["a", "b", {"x": 1}, "c"], ["a", "a", []]])
def test_an_unhashable_key_raises_and_leaves_nothing_watched(keys: Sequence[Hashable]) -> None:
    purgatory = Purgatory("p")
    before = ConditionOperation(10)
    purgatory.try_complete_else_watch(before, ["a"])
    op = ConditionOperation(10)
    with pytest.raises(InvalidKeysError, match="every key must be hashable; got"):
        purgatory.try_complete_else_watch(op, keys)
    assert metrics(purgatory) == (1, 1)
    assert purgatory._watch_lists == {"a": [before]}
    assert not op.scheduled and not op.is_completed
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is False  # may be resubmitted
    assert metrics(purgatory) == (3, 2)


def test_check_and_cancel_reject_unhashable_keys() -> None:
    purgatory = Purgatory("p")
    purgatory.try_complete_else_watch(ConditionOperation(10), ["k"])
    with pytest.raises(InvalidKeysError, match=r"key must be hashable, got \[1\]"):
        purgatory.check_and_complete([1])  # type: ignore[arg-type]
    with pytest.raises(InvalidKeysError, match="key must be hashable"):
        purgatory.cancel_for_key({})  # type: ignore[arg-type]


def test_the_same_operation_cannot_be_watched_twice() -> None:
    purgatory, other = Purgatory("p"), Purgatory("q")
    op = ConditionOperation(10)
    purgatory.try_complete_else_watch(op, ["a"])
    with pytest.raises(OperationAlreadyWatchedError, match="already submitted"):
        purgatory.try_complete_else_watch(op, ["b"])
    with pytest.raises(OperationAlreadyWatchedError):
        other.try_complete_else_watch(op, ["b"])
    assert metrics(purgatory) == (1, 1) and metrics(other) == (0, 0)
    completed_at_once = ConditionOperation(10, satisfied=True)
    purgatory.try_complete_else_watch(completed_at_once, ["a"])
    with pytest.raises(OperationAlreadyWatchedError):
        purgatory.try_complete_else_watch(completed_at_once, ["a"])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"name": ""}, InvalidNameError, "name must be a non-empty str, got ''"),
        ({"name": 5}, InvalidNameError, "name must be a non-empty str, got 5"),
        ({"name": None}, InvalidNameError, "name must be a non-empty str, got None"),
        (
            {"name": "p", "purge_interval": -1},
            InvalidPurgeIntervalError,
            "purge_interval must be a non-negative int, got -1",
        ),
        (
            {"name": "p", "purge_interval": 1.5},
            InvalidPurgeIntervalError,
            "purge_interval must be a non-negative int, got 1.5",
        ),
        (
            {"name": "p", "group_min_keys": 0},
            InvalidGroupMinKeysError,
            "group_min_keys must be an int >= 1, got 0",
        ),
        (
            {"name": "p", "group_min_keys": "8"},
            InvalidGroupMinKeysError,
            "group_min_keys must be an int >= 1, got '8'",
        ),
        ({"name": "p", "tick": 0}, InvalidTickError, "tick must be a positive integer"),
    ],
)
def test_purgatory_arguments_are_checked(
    kwargs: dict[str, Any], error: type[PurgatoryError], message: str
) -> None:
    name, value = list(kwargs.items())[-1]  # the bad one
    annotated = str if name == "name" else int
    with bad_argument(
        error, value, where=DelayedOperationPurgatory, annotated=annotated, match=message
    ) as raised:
        DelayedOperationPurgatory(**kwargs)
    if isinstance(raised.value, PurgatoryError):  # the library's own check (pure Python)
        # The specific class and the built-in base it promises (ValueError for all of these).
        assert type(raised.value) is error and isinstance(raised.value, ValueError)


# -- errors raised by user callbacks ------------------------------------------------------


class Boom(Exception):
    pass


def explode(_: ConditionOperation) -> None:
    raise Boom


class FailingCheck(ConditionOperation):
    """try_complete raises (the condition check itself fails) on the given call numbers."""

    __slots__ = ("fail_on",)

    def __init__(self, timeout: int, fail_on: set[int]) -> None:
        super().__init__(timeout)
        self.fail_on = fail_on

    def try_complete(self) -> bool:
        if len(self.calls) + 1 in self.fail_on:
            self.calls.append("try_complete")
            raise Boom
        return super().try_complete()


def test_on_complete_raising_in_check_and_complete() -> None:
    purgatory = Purgatory("p")
    first = ConditionOperation(50, satisfied=False)
    raising = ConditionOperation(50, on_complete_callback=explode)
    untried = ConditionOperation(50)
    for op in (first, raising, untried):
        purgatory.try_complete_else_watch(op, ["k", "other"])
    first.satisfied = raising.satisfied = untried.satisfied = True
    with pytest.raises(Boom):
        purgatory.check_and_complete("k")
    assert first.is_completed and raising.is_completed  # the raising one counts as completed
    assert not untried.is_completed and untried.scheduled  # untried: still watched and timed
    assert metrics(purgatory) == (4, 1)  # "k" compacted to [untried]; "other" holds all three
    assert purgatory._watch_lists["k"] == [untried]
    assert purgatory.check_and_complete("k") == 1
    assert metrics(purgatory) == (3, 0)
    assert purgatory.check_and_complete("other") == 0
    assert metrics(purgatory) == (0, 0)


def test_try_complete_raising_in_check_and_complete_leaves_the_op_pending() -> None:
    purgatory = Purgatory("p")
    raising = FailingCheck(50, fail_on={3})
    untried = ConditionOperation(50, satisfied=False)
    purgatory.try_complete_else_watch(raising, ["k"])
    purgatory.try_complete_else_watch(untried, ["k"])
    untried.satisfied = True
    with pytest.raises(Boom):
        purgatory.check_and_complete("k")
    assert not raising.is_completed and raising.scheduled
    assert not untried.is_completed
    assert metrics(purgatory) == (2, 2)
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.advance_clock(50) == 1 and raising.is_expired


def test_on_complete_raising_at_submission() -> None:
    purgatory = Purgatory("p")
    op = ConditionOperation(50, satisfied=True, on_complete_callback=explode)
    with pytest.raises(Boom):
        purgatory.try_complete_else_watch(op, ["k"])
    assert op.is_completed and metrics(purgatory) == (0, 0)


def test_first_try_raising_at_submission_watches_nothing() -> None:
    purgatory = Purgatory("p")
    op = FailingCheck(50, fail_on={1})
    with pytest.raises(Boom):
        purgatory.try_complete_else_watch(op, ["k"])
    assert not op.is_completed and not op.scheduled
    assert metrics(purgatory) == (0, 0) and purgatory.watch_keys() == []


def test_second_try_raising_still_times_the_operation() -> None:
    # Regression: the operation was watched at step 2, the step-3 try raised, and it was
    # never added to the timer, so it could never expire.
    purgatory = Purgatory("p")
    op = FailingCheck(50, fail_on={2})
    with pytest.raises(Boom):
        purgatory.try_complete_else_watch(op, ["a", "b"])
    assert not op.is_completed
    assert metrics(purgatory) == (2, 1)  # watched under both keys, and timed
    assert purgatory.advance_clock(50) == 1
    assert op.is_expired


def test_on_complete_raising_during_expiry() -> None:
    purgatory = Purgatory("p", tick=10)
    first = ConditionOperation(5, on_complete_callback=explode)
    same_batch = ConditionOperation(7)
    later = ConditionOperation(15)
    for op in (first, same_batch, later):
        purgatory.try_complete_else_watch(op, ["k"])
    with pytest.raises(Boom):
        purgatory.advance_clock(20)
    assert first.is_completed and first.is_expired and first.calls[-1] == "on_complete"
    assert not same_batch.is_completed and not later.is_completed
    assert metrics(purgatory) == (3, 2)
    assert purgatory.next_deadline() == 10  # due: the batch resumes at the next advance
    assert purgatory.advance_clock(20) == 2
    assert same_batch.is_expired and later.is_expired
    assert metrics(purgatory) == (3, 0)


def test_on_expiration_raising_during_expiry() -> None:
    class ExpiryFails(ConditionOperation):
        def on_expiration(self) -> None:
            super().on_expiration()
            raise Boom

    purgatory = Purgatory("p")
    op, other = ExpiryFails(5), ConditionOperation(5)
    purgatory.try_complete_else_watch(op, ["k"])
    purgatory.try_complete_else_watch(other, ["k"])
    with pytest.raises(Boom):
        purgatory.advance_clock(5)
    assert op.calls[-2:] == ["on_complete", "on_expiration"] and op.is_expired
    assert metrics(purgatory) == (2, 1)
    assert purgatory.advance_clock(5) == 1 and other.is_expired


# -- clocks and key sets -------------------------------------------------------------------


@pytest.mark.parametrize("clock", [5, "now", 1.5])
def test_a_clock_that_is_not_callable_is_rejected(clock: Any) -> None:
    message = r"clock must be a callable returning the current time as an int.*got"
    with pytest.raises(ClockNotCallableError, match=message):
        Purgatory("p", clock=clock)
    with pytest.raises(ClockNotCallableError, match=message):
        TimingWheel(clock=clock)


def test_a_clock_that_does_not_return_an_int_is_rejected() -> None:
    with pytest.raises(InvalidDeadlineError, match=r"clock\(\) must return an int.*got 1.5"):
        Purgatory("p", clock=lambda: 1.5)  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize("keys", [{"a", "b"}, frozenset({"a"})])
def test_keys_given_as_a_set_are_rejected(keys: Any) -> None:
    purgatory = Purgatory("p")
    op = ConditionOperation(10)
    with pytest.raises(InvalidKeysError, match=r"keys must be ordered.*a list or a tuple"):
        purgatory.try_complete_else_watch(op, keys)
    assert op.calls == [] and metrics(purgatory) == (0, 0)


class _KeyWhoseHashRaises:
    def __hash__(self) -> int:
        raise RuntimeError("this key cannot be hashed")


@pytest.mark.parametrize("group_min_keys", [1, 2, 4, DEFAULT_GROUP_MIN_KEYS])
def test_a_key_whose_hash_raises_leaves_nothing_half_watched(group_min_keys: int) -> None:
    # Three keys: a watch group (group_min_keys 1, 2) hashes them all before watching under
    # any; per-key lists (4, and the default) are undone up to the key that raised. Either
    # way the purgatory is as it was, and the operation can be submitted again.
    purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory(
        "p", group_min_keys=group_min_keys
    )
    operation = ConditionOperation(100)
    with pytest.raises(RuntimeError, match="cannot be hashed"):
        purgatory.try_complete_else_watch(operation, ["a", "a", _KeyWhoseHashRaises(), "c"])
    assert (purgatory.watched, purgatory.num_delayed) == (0, 0)
    assert purgatory.watch_keys() == [] and purgatory.watchers("a") == []
    assert purgatory.check_and_complete("a") == 0 and purgatory.next_deadline() is None
    assert purgatory.try_complete_else_watch(operation, ["a", "c"]) is False
    assert (purgatory.watched, purgatory.num_delayed) == (2, 1)


def test_watchers_refuses_an_unhashable_key() -> None:
    purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory("p")
    with pytest.raises(InvalidKeysError, match=r"key must be hashable, got \[1\]"):
        purgatory.watchers([1])  # type: ignore[arg-type]

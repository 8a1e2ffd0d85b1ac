"""Cancelling one operation: ``op.cancel()`` takes it out of the timer and every watch list
(per-key lists and watch groups) at once, it never completes, and the metrics stay exact. The
timer-only removal a DelayedOperation inherits from TimerTask is not reachable from it."""

from __future__ import annotations

import pytest

from purgatory import (
    DelayedOperation,
    DelayedOperationPurgatory,
    OperationAlreadyWatchedError,
    TimerTask,
    TimingWheel,
)
from purgatory.testing import ConditionOperation

Purgatory = DelayedOperationPurgatory[ConditionOperation]


def metrics(purgatory: Purgatory) -> tuple[int, int]:
    return purgatory.watched, purgatory.num_delayed


def assert_never_completes(purgatory: Purgatory, op: ConditionOperation) -> None:
    op.satisfied = True
    for key in ["a", "b", "c", "k"]:
        purgatory.check_and_complete(key)
    purgatory.advance_clock(purgatory.now + 10**6)
    assert op.force_complete() is False
    assert op.is_cancelled and not op.is_completed and not op.is_expired
    assert "on_complete" not in op.calls and "on_expiration" not in op.calls


@pytest.mark.parametrize("group_min_keys", [1, 8], ids=["groups", "per-key lists"])
def test_cancel_takes_a_watched_operation_out_of_the_timer_and_every_watch_list(
    group_min_keys: int,
) -> None:
    purgatory = Purgatory("p", group_min_keys=group_min_keys)
    victim, sibling, other = ConditionOperation(10), ConditionOperation(20), ConditionOperation(30)
    purgatory.try_complete_else_watch(victim, ["a", "b", "a"])  # "a" twice: two entries
    purgatory.try_complete_else_watch(sibling, ["a", "b", "a"])
    purgatory.try_complete_else_watch(other, ["c"])
    assert metrics(purgatory) == (7, 3)
    assert victim.cancel() is True
    assert victim.is_cancelled and not victim.scheduled
    assert metrics(purgatory) == (4, 2)  # exact at once, no purge needed
    assert purgatory.watchers("a") == [sibling, sibling]
    assert purgatory.watchers("b") == [sibling]
    assert purgatory.next_deadline() == 20
    assert purgatory.purge_completed() == 0  # nothing lingers
    assert victim.cancel() is False  # already cancelled
    assert_never_completes(purgatory, victim)
    assert sibling.is_expired and other.is_expired  # the others were unaffected
    purgatory.purge_completed()
    assert metrics(purgatory) == (0, 0) and purgatory.watch_keys() == []


@pytest.mark.parametrize("group_min_keys", [1, 8], ids=["groups", "per-key lists"])
def test_cancelling_the_last_operation_of_a_key_forgets_the_key(group_min_keys: int) -> None:
    purgatory = Purgatory("p", group_min_keys=group_min_keys)
    op = ConditionOperation(10)
    purgatory.try_complete_else_watch(op, ["a", "b"])
    assert op.cancel() is True
    assert metrics(purgatory) == (0, 0) and purgatory.watch_keys() == []
    assert purgatory._groups == {} and purgatory._groups_by_key == {}
    later = ConditionOperation(10)
    purgatory.try_complete_else_watch(later, ["a", "b"])  # a new group / new lists
    assert purgatory.watchers("a") == [later] and metrics(purgatory) == (2, 1)


def test_cancel_after_completion_or_cancellation_returns_false_and_changes_nothing() -> None:
    purgatory = Purgatory("p")
    done, expired, dropped = ConditionOperation(10), ConditionOperation(5), ConditionOperation(10)
    for op in (done, expired, dropped):
        purgatory.try_complete_else_watch(op, ["k"])
    done.force_complete()
    purgatory.advance_clock(5)
    assert purgatory.cancel_for_key("k") == [dropped]
    assert [op.cancel() for op in (done, expired, dropped)] == [False, False, False]
    assert done.is_completed and expired.is_expired and dropped.is_cancelled


def test_an_operation_cancelled_before_submission_cannot_be_submitted() -> None:
    purgatory = Purgatory("p")
    op = ConditionOperation(10, satisfied=True)
    assert op.cancel() is True and op.is_cancelled
    assert op.cancel() is False
    with pytest.raises(OperationAlreadyWatchedError, match="was cancelled"):
        purgatory.try_complete_else_watch(op, ["k"])
    assert op.calls == [] and metrics(purgatory) == (0, 0)


@pytest.mark.parametrize("group_min_keys", [1, 8], ids=["groups", "per-key lists"])
def test_cancel_from_a_callback_during_a_check_skips_no_operation(group_min_keys: int) -> None:
    purgatory = Purgatory("p", group_min_keys=group_min_keys)
    victim = ConditionOperation(10)
    ops = [ConditionOperation(10, satisfied=True) for _ in range(4)]

    def cancel_victim(_: ConditionOperation) -> None:
        assert victim.cancel() is True

    first = ConditionOperation(10, on_complete_callback=cancel_victim)
    purgatory.try_complete_else_watch(first, ["k"])
    purgatory.try_complete_else_watch(victim, ["k"])
    for op in ops:
        op.satisfied = False
        purgatory.try_complete_else_watch(op, ["k"])
        op.satisfied = True
    first.satisfied = True
    assert purgatory.check_and_complete("k") == 5  # first and every op after the victim
    assert victim.is_cancelled and all(op.is_completed for op in ops)
    purgatory.purge_completed()
    assert metrics(purgatory) == (0, 0)


def test_the_timer_only_removal_is_not_reachable_from_an_operation() -> None:
    assert DelayedOperation.cancel is not TimerTask.cancel
    # re-arming on a bare wheel moves the timer entry only (it never cancels an operation)
    wheel = TimingWheel()
    op = ConditionOperation(10)
    wheel.add(op, 10)
    wheel.reschedule(op, 20)
    assert op.scheduled and op.deadline == 20 and not op.is_cancelled
    assert op.cancel() is True and not op.scheduled and len(wheel) == 0  # a bare wheel too

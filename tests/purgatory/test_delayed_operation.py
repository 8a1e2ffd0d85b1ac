"""DelayedOperation's completion protocol: force_complete exactly once, on_complete before
on_expiration, never twice, the observable flags, and the try_complete contract."""

from __future__ import annotations

import pytest

from purgatory import (
    DelayedOperation,
    DelayedOperationPurgatory,
    InvalidOperationTypeError,
    OperationState,
    TimingWheel,
)
from purgatory.delayed_operation import TRANSITIONS
from purgatory.testing import ConditionOperation


def test_force_complete_completes_exactly_once() -> None:
    op = ConditionOperation(10)
    assert not op.is_completed
    assert op.force_complete() is True
    assert op.is_completed and not op.is_expired and not op.is_cancelled
    assert op.force_complete() is False
    assert op.force_complete() is False
    assert op.calls == ["on_complete"]


def test_force_complete_cancels_the_timer_entry() -> None:
    wheel = TimingWheel()
    op = ConditionOperation(10)
    wheel.add(op, 10)
    assert op.force_complete() is True
    assert not op.scheduled and len(wheel) == 0
    assert wheel.advance(100) == 0
    assert op.calls == ["on_complete"]


def test_expiry_runs_on_complete_then_on_expiration_and_is_expired_is_already_true() -> None:
    seen_expired: list[bool] = []
    op = ConditionOperation(10, on_complete_callback=lambda o: seen_expired.append(o.is_expired))
    wheel = TimingWheel()
    wheel.add(op, 10)
    assert wheel.advance(10) == 1
    assert op.calls == ["on_complete", "on_expiration"]
    assert seen_expired == [True]
    assert op.is_completed and op.is_expired and not op.is_cancelled
    assert op.force_complete() is False
    assert op.calls == ["on_complete", "on_expiration"]


def test_satisfied_completion_sees_is_expired_false_and_never_expires() -> None:
    seen_expired: list[bool] = []
    op = ConditionOperation(10, on_complete_callback=lambda o: seen_expired.append(o.is_expired))
    wheel = TimingWheel()
    wheel.add(op, 10)
    op.satisfied = True
    assert op.try_complete() is True
    assert seen_expired == [False]
    wheel.advance(100)
    assert op.calls == ["try_complete", "on_complete"]
    assert not op.is_expired


def test_run_after_completion_does_nothing() -> None:
    op = ConditionOperation(0)
    op.force_complete()
    op.run()  # a timer firing late must not complete or expire it again
    assert op.calls == ["on_complete"]
    assert not op.is_expired


def test_try_complete_contract() -> None:
    op = ConditionOperation(5)
    assert op.try_complete() is False
    assert not op.is_completed and op.calls == ["try_complete"]  # no side effect
    op.satisfied = True
    assert op.try_complete() is True
    assert op.is_completed
    assert op.try_complete() is False  # force_complete lost: already completed
    assert op.calls == ["try_complete", "try_complete", "on_complete", "try_complete"]


class Boom(Exception):
    pass


def test_on_complete_raising_still_counts_as_completed() -> None:
    def explode(_: ConditionOperation) -> None:
        raise Boom

    op = ConditionOperation(5, on_complete_callback=explode)
    with pytest.raises(Boom):
        op.force_complete()
    assert op.is_completed
    assert op.force_complete() is False
    assert op.calls == ["on_complete"]


def test_expiry_whose_on_complete_raises_skips_on_expiration_and_completes_once() -> None:
    def explode(_: ConditionOperation) -> None:
        raise Boom

    op = ConditionOperation(5, on_complete_callback=explode)
    wheel = TimingWheel()
    wheel.add(op, 5)
    with pytest.raises(Boom):
        wheel.advance(5)
    assert op.is_completed and op.is_expired
    assert op.calls == ["on_complete"]
    assert wheel.advance(10) == 0 and len(wheel) == 0


def test_a_cancelled_operation_never_completes() -> None:
    purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory("p")
    op = ConditionOperation(5)
    purgatory.try_complete_else_watch(op, ["k"])
    assert purgatory.cancel_for_key("k") == [op]
    assert op.is_cancelled and not op.is_completed and not op.is_expired and not op.scheduled
    op.satisfied = True
    assert op.try_complete() is False
    assert op.force_complete() is False
    purgatory.advance_clock(100)
    assert op.calls == ["try_complete", "try_complete", "try_complete"]


def test_the_base_class_requires_try_complete_and_on_complete() -> None:
    message = r"DelayedOperation does not override try_complete\(\) nor on_complete\(\)"
    with pytest.raises(InvalidOperationTypeError, match=message):
        DelayedOperation(1)
    op = ConditionOperation(1)
    with pytest.raises(NotImplementedError):
        DelayedOperation.try_complete(op)
    with pytest.raises(NotImplementedError):
        DelayedOperation.on_complete(op)
    DelayedOperation.on_expiration(op)  # optional: does nothing by default


def test_repr_shows_the_state() -> None:
    pending, done, expired, cancelled = (ConditionOperation(t) for t in (1, 2, 3, 4))
    done.force_complete()
    wheel = TimingWheel()
    wheel.add(expired, 3)
    wheel.advance(3)
    purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory("p")
    purgatory.try_complete_else_watch(cancelled, ["k"])
    purgatory.shutdown()
    assert repr(pending) == "<ConditionOperation timeout=1 pending>"
    assert repr(done) == "<ConditionOperation timeout=2 completed>"
    assert repr(expired) == "<ConditionOperation timeout=3 expired>"
    assert repr(cancelled) == "<ConditionOperation timeout=4 cancelled>"


def test_the_lifecycle_leaves_pending_once_as_the_transition_table_says() -> None:
    assert TRANSITIONS[OperationState.PENDING] == {
        OperationState.COMPLETED, OperationState.EXPIRED, OperationState.CANCELLED,
    }  # fmt: skip
    assert all(not TRANSITIONS[s] for s in OperationState if s is not OperationState.PENDING)
    purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory("p")
    completed, expired, cancelled = (ConditionOperation(10) for _ in range(3))
    for operation in (completed, expired, cancelled):
        assert operation.state is OperationState.PENDING
        purgatory.try_complete_else_watch(operation, ["k"])
    completed.force_complete()
    cancelled.cancel()
    purgatory.advance_clock(10)
    final = {
        completed: OperationState.COMPLETED,
        expired: OperationState.EXPIRED,
        cancelled: OperationState.CANCELLED,
    }
    for operation, state in final.items():
        assert operation.state is state and state in TRANSITIONS[OperationState.PENDING]
        # A final state is final: nothing moves it again.
        assert not operation.force_complete() and not operation.cancel()
        operation.run()
        assert operation.state is state
    assert expired.calls == ["try_complete", "try_complete", "on_complete", "on_expiration"]

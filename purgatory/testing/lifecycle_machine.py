"""PurgatoryLifecycleMachine: a hypothesis state machine checking the life of delayed operations.

It drives a :class:`~purgatory.DelayedOperationPurgatory` with random submissions,
satisfactions, key checks, clock advances, forced completions, key cancellations, purges and
a shutdown, keeps a model of what must have happened, and checks after every step that the
purgatory and every operation agree with it. Subclass it and override :meth:`make_operation`
and :meth:`satisfy` (optionally :meth:`make_progress` and :meth:`make_key`) to check your own
:class:`~purgatory.DelayedOperation` type.

The model, precisely:

* Every operation completes at most once; ``on_complete`` runs once for a completed or expired
  operation, then ``on_expiration`` once for an expired one, and nothing runs for a cancelled
  one (``cancel_for_key``, ``shutdown``).
* Submission: ``try_complete_else_watch`` completes the operation iff it was satisfied before
  it was submitted; otherwise the operation is watched under its keys and timed with deadline
  ``now + timeout``, where ``now`` is the purgatory's time (the last ``advance_clock``).
* It completes by satisfaction iff it was satisfied and then checked (``check_and_complete``
  on one of its keys) *before it expired*. Ties are resolved by the purgatory's clock, which
  only ``advance_clock`` moves: the operation expires at the first ``advance_clock(t)`` with
  ``t >= firing_time``, where ``firing_time`` is the deadline rounded up to the tick. So a
  check made while the clock reads less than ``firing_time`` completes it (even if the clock
  is already past the unrounded deadline), and once ``advance_clock`` has reached
  ``firing_time`` it is expired and no later check, satisfaction or ``force_complete`` can
  complete it again.
* Only ``satisfy`` makes an operation completable by a check; any number of
  :meth:`~PurgatoryLifecycleMachine.make_progress` calls never does.
* ``advance_clock(t)`` expires exactly the pending operations with ``firing_time <= t``, in
  deadline order (ties in submission order), and returns how many.
* ``check_and_complete(key)`` completes exactly the satisfied pending operations watched under
  ``key`` and returns how many; ``force_complete()`` returns True iff the operation was pending.
* ``cancel_for_key(key)`` returns the pending operations watched under ``key`` in submission
  order; ``shutdown()`` returns every pending operation; later submissions raise
  PurgatoryShutdownError; submitting an operation twice raises OperationAlreadyWatchedError.
* ``op.cancel()`` returns True iff the operation was pending; it then leaves the timer and
  every watch list at once: ``num_delayed`` drops by 1 and ``watched`` by its number of keys.
* Metrics: ``num_delayed`` is the number of pending operations; ``watched`` is at least the
  number of (pending operation, key) entries and at most that plus the completed entries not
  yet removed by a check of their key, a cancel or a purge; right after
  ``purge_completed()`` it is exactly the live entries (no list holds a completed
  operation), so it is 0 once every operation is done. ``next_deadline()`` is the smallest
  ``firing_time`` of a pending operation (None when there is none).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from typing import Any, Generic, TypeVar

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from purgatory.delayed_operation import DelayedOperation
from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from purgatory.errors import OperationAlreadyWatchedError, PurgatoryShutdownError
from purgatory.testing.recorder import (
    ON_COMPLETE,
    ON_COMPLETE_EXPIRED,
    ON_EXPIRATION,
    CallbackRecorder,
    LifecycleViolation,
)

__all__ = ["Lifecycle", "OperationRecord", "PurgatoryLifecycleMachine"]

Op = TypeVar("Op", bound=DelayedOperation)

_KEY_INDICES = st.integers(0, 3)
_KEY_LISTS = st.lists(_KEY_INDICES, min_size=1, max_size=3)
_TIMEOUTS = st.one_of(st.integers(0, 40), st.integers(0, 10**12))
_STEPS = st.integers(0, 25)


class Lifecycle(enum.Enum):
    """Where an operation is in its life, according to the model."""

    PENDING = "pending"  # watched and timed
    COMPLETED = "completed"  # on_complete ran: satisfied and checked, or forced
    EXPIRED = "expired"  # on_complete, then on_expiration ran
    CANCELLED = "cancelled"  # dropped by cancel_for_key or shutdown; no callback ran


_EXPECTED_CALLBACKS = {
    Lifecycle.PENDING: [],
    Lifecycle.COMPLETED: [ON_COMPLETE],
    Lifecycle.EXPIRED: [ON_COMPLETE_EXPIRED, ON_EXPIRATION],
    Lifecycle.CANCELLED: [],
}


@attrs.define(eq=False)
class OperationRecord(Generic[Op]):
    """What the model knows about one submitted operation."""

    operation: Op
    keys: tuple[Hashable, ...]
    sequence: int  # submission order
    callbacks: list[str]  # recorded on_complete / on_expiration calls, in order
    deadline: int = 0  # submission time + timeout
    firing_time: int = 0  # deadline rounded up to the tick
    state: Lifecycle = Lifecycle.PENDING
    satisfied: bool = False
    #: What the machine did to the operation, oldest first ("submitted at t=3 ...").
    history: list[str] = attrs.Factory(list)

    def describe(self) -> str:
        """The operation, its place in the model and its history: what violation messages
        show for each operation involved."""
        events = "".join(f"\n  {event}" for event in self.history) or " none"
        return (
            f"{self.operation!r} (operation #{self.sequence}, keys {self.keys}), "
            f"{self.state.value} in the model; its history:{events}"
        )


def _expect(condition: bool, message: str, *records: OperationRecord[Any]) -> None:
    """Raise LifecycleViolation with ``message`` and the description of each of ``records``
    (the operations involved) unless ``condition`` holds."""
    if not condition:
        raise LifecycleViolation(message + "".join(f"\n{r.describe()}" for r in records))


class PurgatoryLifecycleMachine(RuleBasedStateMachine, Generic[Op]):
    """Checks the lifecycle of delayed operations of type ``Op`` in a purgatory.

    Override :meth:`make_operation` and :meth:`satisfy`; run it with
    ``TestMyOperation = MyMachine.TestCase`` (pytest/unittest) or
    ``hypothesis.stateful.run_state_machine_as_test(MyMachine)``. Subclasses may add their own
    ``@rule``/``@invariant`` methods and read :attr:`purgatory` and :attr:`records`, a dict
    mapping each submitted operation to its :class:`OperationRecord`, in submission order.
    A violation message names every operation involved with its record and history.

    Requirements on the operation type: ``make_operation`` returns a new, unsubmitted
    operation each time; ``satisfy`` makes its condition hold for good without completing it
    (the machine decides when to check) and may be called on any operation, done or not;
    callbacks must not raise nor re-enter the purgatory; instances must allow ``__class__``
    assignment to a subclass with no extra slots (true for ordinary and attrs classes) so the
    machine can record their callbacks.
    """

    operations = Bundle[DelayedOperation]("operations")

    def __init__(self) -> None:
        super().__init__()
        self.purgatory: DelayedOperationPurgatory[Op] = DelayedOperationPurgatory("lifecycle")
        #: Each submitted operation -> its record, in submission order.
        self.records: dict[Op, OperationRecord[Op]] = {}
        self.recorder = CallbackRecorder(describe=self._describe)
        self.shut_down = False
        # Watch-list entries the purgatory may still hold: removed only by a check of the key,
        # a cancel, a purge or the shutdown (automatic purges may remove more).
        self._entries: dict[Hashable, list[Op]] = {}

    # -- the hooks a subclass overrides -----------------------------------------------------

    def make_operation(self, timeout: int, keys: Sequence[Hashable]) -> Op:
        """Return a new operation with this ``timeout`` that will be watched under ``keys``."""
        raise NotImplementedError(f"{type(self).__name__} must override make_operation()")

    def satisfy(self, operation: Op) -> None:
        """Make ``operation``'s condition hold (for good), without completing it."""
        raise NotImplementedError(f"{type(self).__name__} must override satisfy()")

    def make_progress(self, operation: Op) -> None:
        """Change the state ``operation`` waits on WITHOUT making its condition hold.

        For example one more acknowledgement of an operation that needs several. The default
        does nothing.
        """

    def make_key(self, index: int) -> Hashable:
        """The key numbered ``index`` (0 to 3). The default is ``f"key-{index}"``."""
        return f"key-{index}"

    # -- rules ------------------------------------------------------------------------------

    @initialize(
        tick=st.sampled_from((1, 1, 2, 3, 10)),
        purge_interval=st.integers(0, 3),
        start=st.integers(0, 50),
        # 1: every operation is watched as a group; 2 and 3 mix per-key lists and groups (the
        # machine's operations have 1 to 3 keys); 8, the default, is per-key lists only.
        group_min_keys=st.sampled_from((1, 2, 3, 8)),
    )
    def create_purgatory(
        self, tick: int, purge_interval: int, start: int, group_min_keys: int
    ) -> None:
        self.purgatory = DelayedOperationPurgatory(
            "lifecycle",
            tick=tick,
            purge_interval=purge_interval,
            start=start,
            group_min_keys=group_min_keys,
        )

    @precondition(lambda self: not self.shut_down)
    @rule(target=operations, timeout=_TIMEOUTS, key_indices=_KEY_LISTS)
    def submit(self, timeout: int, key_indices: list[int]) -> Op:
        return self._submit(timeout, key_indices, satisfied_first=False)

    @precondition(lambda self: not self.shut_down)
    @rule(target=operations, timeout=_TIMEOUTS, key_indices=_KEY_LISTS)
    def submit_satisfied(self, timeout: int, key_indices: list[int]) -> Op:
        return self._submit(timeout, key_indices, satisfied_first=True)

    @precondition(lambda self: not self.shut_down)
    @rule(
        target=operations,
        batch=st.lists(st.tuples(_TIMEOUTS, _KEY_LISTS), min_size=2, max_size=4),
    )
    def submit_several(self, batch: list[tuple[int, list[int]]]) -> MultipleResults[Op]:
        return multiple(
            *(self._submit(timeout, keys, satisfied_first=False) for timeout, keys in batch)
        )

    @rule(operation=operations)
    def satisfy_operation(self, operation: Op) -> None:
        record = self.records[operation]
        self._log(record, "satisfied")
        self.satisfy(operation)
        record.satisfied = True

    @rule(operation=operations)
    def progress_operation(self, operation: Op) -> None:
        self._log(self.records[operation], "made progress")
        self.make_progress(operation)

    @rule(key_index=_KEY_INDICES)
    def check_key(self, key_index: int) -> None:
        self._check_and_complete(self.make_key(key_index))

    @rule(operation=operations)
    def check_keys_of(self, operation: Op) -> None:
        for key in dict.fromkeys(self.records[operation].keys):
            self._check_and_complete(key)

    @rule(step=_STEPS)
    def advance_clock(self, step: int) -> None:
        self._advance_clock_to(self.purgatory.now + step)

    @rule()
    def expire_everything(self) -> None:
        """Advance past every deadline, purge, and check that nothing is left."""
        latest = max((record.firing_time for record in self._pending()), default=0)
        self._advance_clock_to(max(latest, self.purgatory.now))
        self.purge()
        _expect(
            self.purgatory.watched == 0 and self.purgatory.num_delayed == 0,
            f"every operation is done and purged, yet watched={self.purgatory.watched} "
            f"num_delayed={self.purgatory.num_delayed}",
        )

    @rule(operation=operations)
    def force_complete(self, operation: Op) -> None:
        record = self.records[operation]
        pending = record.state is Lifecycle.PENDING
        self._log(record, "force_complete()")
        forced = operation.force_complete()
        _expect(
            forced == pending,
            f"force_complete() returned {forced} for a {record.state.value} operation",
            record,
        )
        if forced:
            record.state = Lifecycle.COMPLETED

    @rule(operation=operations)
    def cancel_operation(self, operation: Op) -> None:
        record = self.records[operation]
        pending = record.state is Lifecycle.PENDING
        before = (self.purgatory.watched, self.purgatory.num_delayed)
        self._log(record, "cancel()")
        cancelled = operation.cancel()
        _expect(
            cancelled == pending,
            f"cancel() returned {cancelled} for a {record.state.value} operation",
            record,
        )
        after = (self.purgatory.watched, self.purgatory.num_delayed)
        if not cancelled:
            _expect(
                after == before,
                f"a cancel() that returned False changed {before} to {after}",
                record,
            )
            return
        expected = (before[0] - len(record.keys), before[1] - 1)
        _expect(
            after == expected,
            f"cancel() changed (watched, num_delayed) from {before} to {after}; expected "
            f"{expected}: its entries must leave every watch list at once",
            record,
        )
        record.state = Lifecycle.CANCELLED
        for key in dict.fromkeys(record.keys):
            watchers = [op for op in self._entries.get(key, ()) if op is not operation]
            if watchers:
                self._entries[key] = watchers
            else:
                self._entries.pop(key, None)

    @rule(key_index=_KEY_INDICES)
    def cancel_for_key(self, key_index: int) -> None:
        key = self.make_key(key_index)
        expected = [record for record in self._pending() if key in record.keys]
        for record in expected:
            self._log(record, f"cancel_for_key({key!r})")
        cancelled = self.purgatory.cancel_for_key(key)
        _expect(
            _same(cancelled, [record.operation for record in expected]),
            f"cancel_for_key({key!r}) returned {cancelled}; expected the pending operations "
            f"watched under it, in submission order: {[r.operation for r in expected]}",
            *self._involved(expected, cancelled),
        )
        for record in expected:
            record.state = Lifecycle.CANCELLED
        self._entries.pop(key, None)

    @rule()
    def purge(self) -> None:
        """purge_completed() leaves exactly the pending operations' entries."""
        before = self.purgatory.watched
        removed = self.purgatory.purge_completed()
        pending = self._pending()
        live = sum(len(record.keys) for record in pending)
        _expect(
            self.purgatory.watched == live,
            f"after purge_completed() watched={self.purgatory.watched}, but the pending "
            f"operations have {live} entries: a watch list still holds a completed operation",
        )
        _expect(
            removed == before - live,
            f"purge_completed() returned {removed}, but watched went from {before} to {live}",
        )
        self._entries = {}
        for record in pending:
            for key in record.keys:
                self._entries.setdefault(key, []).append(record.operation)
        _expect(
            set(self.purgatory.watch_keys()) == set(self._entries),
            f"after purge_completed() the keys are {self.purgatory.watch_keys()}, "
            f"expected those of the pending operations: {list(self._entries)}",
        )

    @rule(operation=operations)
    def submit_again(self, operation: Op) -> None:
        """Submitting an operation a second time raises and changes nothing."""
        record = self.records[operation]
        before = (self.purgatory.watched, self.purgatory.num_delayed)
        self._log(record, "submitted again")
        try:
            self.purgatory.try_complete_else_watch(operation, record.keys)
        except (OperationAlreadyWatchedError, PurgatoryShutdownError):
            pass
        else:
            _expect(False, "an operation was accepted a second time", record)
        after = (self.purgatory.watched, self.purgatory.num_delayed)
        _expect(
            before == after,
            f"a rejected submission changed (watched, num_delayed): {after}",
            record,
        )

    @precondition(lambda self: not self.shut_down and len(self.records) >= 10)
    @rule()
    def shutdown(self) -> None:
        pending = self._pending()
        for record in pending:
            self._log(record, "shutdown()")
        returned = self.purgatory.shutdown()
        self.shut_down = True
        _expect(
            len(returned) == len(pending)
            and {id(op) for op in returned} == {id(record.operation) for record in pending},
            f"shutdown() returned {returned}; expected the pending operations "
            f"{[record.operation for record in pending]}",
            *self._involved(pending, returned),
        )
        for record in pending:
            record.state = Lifecycle.CANCELLED
        self._entries = {}

    @precondition(lambda self: self.shut_down)
    @rule(timeout=_TIMEOUTS, key_index=_KEY_INDICES)
    def submit_after_shutdown(self, timeout: int, key_index: int) -> None:
        key = self.make_key(key_index)
        operation = self.make_operation(timeout, (key,))
        try:
            self.purgatory.try_complete_else_watch(operation, (key,))
        except PurgatoryShutdownError:
            pass
        else:
            raise LifecycleViolation("try_complete_else_watch accepted an operation after shutdown")
        _expect(
            not (operation.is_completed or operation.scheduled),
            f"a rejected operation was completed or timed: {operation!r}",
        )

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def metrics_match_the_model(self) -> None:
        pending = self._pending()
        purgatory = self.purgatory
        _expect(
            purgatory.num_delayed == len(pending),
            f"num_delayed={purgatory.num_delayed}, but {len(pending)} operations are pending",
            *(
                record
                for record in self.records.values()
                if record.operation.scheduled != (record.state is Lifecycle.PENDING)
            ),
        )
        live = sum(len(record.keys) for record in pending)
        lingering = sum(len(watchers) for watchers in self._entries.values())
        _expect(
            live <= purgatory.watched <= lingering,
            f"watched={purgatory.watched}: the pending operations have {live} entries and at "
            f"most {lingering} entries may remain",
        )
        keys = set(purgatory.watch_keys())
        needed = {key for record in pending for key in record.keys}
        _expect(
            needed <= keys <= set(self._entries),
            f"watch_keys()={sorted(map(repr, keys))}: must include {sorted(map(repr, needed))} "
            f"and be among {sorted(map(repr, self._entries))}",
        )
        expected = min((record.firing_time for record in pending), default=None)
        _expect(
            purgatory.next_deadline() == expected,
            f"next_deadline()={purgatory.next_deadline()}, expected {expected}",
            *(record for record in pending if record.firing_time == expected),
        )

    @invariant()
    def operations_match_the_model(self) -> None:
        for record in self.records.values():
            operation, state = record.operation, record.state
            _expect(
                record.callbacks == _EXPECTED_CALLBACKS[state],
                f"{operation!r} ran {record.callbacks}; a {state.value} operation must have "
                f"run {_EXPECTED_CALLBACKS[state]}",
                record,
            )
            observed = (
                operation.is_completed,
                operation.is_expired,
                operation.is_cancelled,
                operation.scheduled,
            )
            expected = (
                state in (Lifecycle.COMPLETED, Lifecycle.EXPIRED),
                state is Lifecycle.EXPIRED,
                state is Lifecycle.CANCELLED,
                state is Lifecycle.PENDING,
            )
            _expect(
                observed == expected,
                f"{operation!r} is {state.value} but reports (is_completed, is_expired, "
                f"is_cancelled, scheduled) = {observed}",
                record,
            )

    # -- helpers ----------------------------------------------------------------------------

    def _log(self, record: OperationRecord[Op], event: str) -> None:
        record.history.append(f"at t={self.purgatory.now}: {event}")

    def _describe(self, operation: Any) -> str:  # Any: the recorder sees any operation
        record = self.records.get(operation)
        return repr(operation) if record is None else record.describe()

    def _involved(
        self, expected: Sequence[OperationRecord[Op]], observed: Sequence[Any]
    ) -> list[OperationRecord[Op]]:
        """The records of ``expected`` and of the operations in ``observed``, each once."""
        involved = {id(record.operation): record for record in expected}
        for operation in observed:
            record = self.records.get(operation)
            if record is not None:
                involved.setdefault(id(operation), record)
        return list(involved.values())

    def _pending(self) -> list[OperationRecord[Op]]:
        return [record for record in self.records.values() if record.state is Lifecycle.PENDING]

    def _submit(self, timeout: int, key_indices: list[int], *, satisfied_first: bool) -> Op:
        keys = tuple(self.make_key(index) for index in key_indices)
        operation = self.make_operation(timeout, keys)
        record = OperationRecord(
            operation, keys, len(self.records), self.recorder.instrument(operation)
        )
        self.records[operation] = record
        if satisfied_first:
            self._log(record, "satisfied before submission")
            self.satisfy(operation)
            record.satisfied = True
        now = self.purgatory.now
        tick = self.purgatory.timer.tick
        record.deadline = now + operation.timeout
        record.firing_time = -(-record.deadline // tick) * tick
        self._log(
            record,
            f"submitted with timeout {operation.timeout} (deadline {record.deadline}, "
            f"firing time {record.firing_time})",
        )
        completed = self.purgatory.try_complete_else_watch(operation, keys)
        _expect(
            completed == satisfied_first,
            f"try_complete_else_watch returned {completed} for an operation that was "
            f"{'' if satisfied_first else 'not '}satisfied before it was submitted",
            record,
        )
        if completed:
            record.state = Lifecycle.COMPLETED
        else:
            for key in keys:
                self._entries.setdefault(key, []).append(operation)
        return operation

    def _check_and_complete(self, key: Hashable) -> None:
        watched = [r for r in self._pending() if key in r.keys]
        expected = [r for r in watched if r.satisfied]
        for record in watched:
            self._log(record, f"checked via {key!r}")
        completed = self.purgatory.check_and_complete(key)
        _expect(
            completed == len(expected),
            f"check_and_complete({key!r}) completed {completed} operations; expected "
            f"{len(expected)} (the satisfied pending operations watched under it)",
            *(r for r in watched if r.operation.is_completed != r.satisfied),
        )
        for record in expected:
            record.state = Lifecycle.COMPLETED
        watchers = self._entries.get(key)
        if watchers is not None:
            watchers[:] = [op for op in watchers if self.records[op].state is Lifecycle.PENDING]
            if not watchers:
                del self._entries[key]

    def _advance_clock_to(self, now: int) -> None:
        due = sorted(
            (record for record in self._pending() if record.firing_time <= now),
            key=lambda record: (record.deadline, record.sequence),
        )
        first = len(self.recorder.completions)
        for record in due:
            self._log(record, f"advance_clock({now}): due")
        expired = self.purgatory.advance_clock(now)
        order = self.recorder.completions[first:]
        involved = self._involved(due, order)
        _expect(
            expired == len(due),
            f"advance_clock({now}) expired {expired} operations; expected {len(due)}",
            *involved,
        )
        _expect(
            _same(order, [record.operation for record in due]),
            f"advance_clock({now}) expired {order}; expected, in deadline order: "
            f"{[record.operation for record in due]}",
            *involved,
        )
        for record in due:
            record.state = Lifecycle.EXPIRED


def _same(left: Sequence[object], right: Sequence[object]) -> bool:
    """Same objects (by identity) in the same order."""
    return len(left) == len(right) and all(a is b for a, b in zip(left, right, strict=True))

"""The purgatory's lifecycle, checked by the exported state machine (purgatory.testing) on
ConditionOperation, plus invariants on the purgatory's internal watch lists.

The machine's model is stated in ``purgatory.testing.lifecycle_machine``: every operation
completes exactly once; it completes by satisfaction iff it was satisfied and a key of it was
checked while the purgatory's clock was before its firing time (deadline rounded up to the
tick; only ``advance_clock`` moves the clock, so ``advance_clock(t)`` with ``t`` at or past the
firing time expires it before any later check); nothing completes after it expired; after a
purge no list holds a completed operation, and once every operation is done ``watched`` and
``num_delayed`` are 0.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from hypothesis import settings
from hypothesis.stateful import invariant

from purgatory.testing import ConditionOperation, PurgatoryLifecycleMachine


class ConditionLifecycle(PurgatoryLifecycleMachine[ConditionOperation]):
    def make_operation(self, timeout: int, keys: Sequence[Hashable]) -> ConditionOperation:
        return ConditionOperation(timeout)

    def satisfy(self, operation: ConditionOperation) -> None:
        operation.satisfied = True

    @invariant()
    def watch_lists_are_consistent(self) -> None:
        lists = {key: self.purgatory.watchers(key) for key in self.purgatory.watch_keys()}
        assert self.purgatory.watched == sum(len(watchers) for watchers in lists.values())
        for key, watchers in lists.items():
            assert watchers, f"key {key!r} kept an empty watch list"
            for operation in watchers:
                assert key in self.records[operation].keys
        for record in self._pending():  # a pending operation is in every one of its lists
            for key in record.keys:
                assert record.operation in lists[key]


ConditionLifecycle.TestCase.settings = settings(max_examples=100, stateful_step_count=50)
TestPurgatoryLifecycle = ConditionLifecycle.TestCase

"""DelayedOperationPurgatory: Kafka's try_complete_else_watch order, check_and_complete,
cancel_for_key, purging, exact metrics, advance_clock, clocks and shutdown."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from purgatory import DelayedOperationPurgatory, PurgatoryShutdownError
from purgatory.testing import ConditionOperation

Purgatory = DelayedOperationPurgatory[ConditionOperation]


def metrics(purgatory: Purgatory) -> tuple[int, int]:
    return purgatory.watched, purgatory.num_delayed


def lists_hold_no_completed_operation(purgatory: Purgatory) -> bool:
    """Looks inside: no watch list holds a completed or cancelled operation."""
    return all(
        not (op.is_completed or op.is_cancelled)
        for watchers in purgatory._watch_lists.values()
        for op in watchers
    )


class Observed(ConditionOperation):
    """Records, at each try_complete, what the purgatory had done with it so far."""

    __slots__ = ("purgatory", "satisfy_on_try", "seen")

    def __init__(self, purgatory: Purgatory, timeout: int, satisfy_on_try: int = 0) -> None:
        super().__init__(timeout)
        self.purgatory = purgatory
        self.seen: list[tuple[int, int, bool]] = []  # (watched, num_delayed, scheduled)
        self.satisfy_on_try = satisfy_on_try  # become satisfied right after this try (1-based)

    def try_complete(self) -> bool:
        self.seen.append((self.purgatory.watched, self.purgatory.num_delayed, self.scheduled))
        result = super().try_complete()
        if len(self.seen) == self.satisfy_on_try:
            self.satisfied = True  # another party changed the state meanwhile
        return result


# -- try_complete_else_watch --------------------------------------------------------------


def test_try_complete_else_watch_follows_kafkas_order() -> None:
    purgatory = Purgatory("p")
    op = Observed(purgatory, 30)
    assert purgatory.try_complete_else_watch(op, ["a", "b", "c"]) is False
    # try (nothing watched) -> watch every key -> try (watched, not timed) -> timer add
    assert op.seen == [(0, 0, False), (3, 0, False)]
    assert metrics(purgatory) == (3, 1)
    assert op.scheduled and op.deadline == 30
    assert sorted(map(str, purgatory.watch_keys())) == ["a", "b", "c"]


def test_completing_at_the_first_try_means_not_watched() -> None:
    purgatory = Purgatory("p")
    op = ConditionOperation(30, satisfied=True)
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert op.calls == ["try_complete", "on_complete"]
    assert metrics(purgatory) == (0, 0)
    assert purgatory.watch_keys() == []


def test_completing_at_the_second_try_means_watched_but_not_timed() -> None:
    purgatory = Purgatory("p")
    op = Observed(purgatory, 30, satisfy_on_try=1)
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert op.seen == [(0, 0, False), (2, 0, False)]
    assert op.is_completed and not op.scheduled
    assert metrics(purgatory) == (2, 0)  # lingering entries, removed by a check or a purge
    assert purgatory.check_and_complete("a") == 0
    assert metrics(purgatory) == (1, 0)
    assert purgatory.purge_completed() == 1
    assert metrics(purgatory) == (0, 0) and purgatory.watch_keys() == []


def test_deadline_is_the_purgatory_time_plus_the_timeout() -> None:
    purgatory = Purgatory("p", tick=10, start=1000)
    purgatory.advance_clock(1234)
    op = ConditionOperation(50)
    purgatory.try_complete_else_watch(op, ["k"])
    assert op.deadline == 1284
    assert purgatory.next_deadline() == 1290  # rounded up to the tick
    assert purgatory.advance_clock(1289) == 0
    assert purgatory.advance_clock(1290) == 1
    assert op.is_expired


def test_an_injected_clock_gives_the_deadline() -> None:
    time = [500]
    purgatory = DelayedOperationPurgatory[ConditionOperation]("p", clock=lambda: time[0])
    assert purgatory.now == 500
    op = ConditionOperation(20)
    purgatory.try_complete_else_watch(op, ["k"])
    assert op.deadline == 520
    time[0] = 510
    assert purgatory.advance_clock(519) == 0
    assert purgatory.advance_clock(520) == 1


def test_zero_timeout_expires_at_the_next_advance() -> None:
    purgatory = Purgatory("p", start=7)
    op = ConditionOperation(0)
    assert purgatory.try_complete_else_watch(op, ["k"]) is False
    assert purgatory.next_deadline() == 7
    assert purgatory.advance_clock(7) == 1
    assert op.calls == ["try_complete", "try_complete", "on_complete", "on_expiration"]


def test_duplicate_keys_are_watched_twice_and_complete_once() -> None:
    purgatory = Purgatory("p")
    op = ConditionOperation(10)
    purgatory.try_complete_else_watch(op, ["k", "k"])
    assert metrics(purgatory) == (2, 1)
    op.satisfied = True
    assert purgatory.check_and_complete("k") == 1
    assert metrics(purgatory) == (0, 0)
    assert op.calls.count("on_complete") == 1


# -- check_and_complete -------------------------------------------------------------------


def test_check_and_complete_returns_the_count_and_drops_completed_operations() -> None:
    purgatory = Purgatory("p")
    ops = [ConditionOperation(100) for _ in range(4)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["k"])
    assert metrics(purgatory) == (4, 4)
    ops[1].satisfied = ops[3].satisfied = True
    assert purgatory.check_and_complete("k") == 2
    assert metrics(purgatory) == (2, 2)
    assert purgatory._watch_lists["k"] == [ops[0], ops[2]]
    assert purgatory.check_and_complete("k") == 0
    ops[0].satisfied = ops[2].satisfied = True
    assert purgatory.check_and_complete("k") == 2
    assert metrics(purgatory) == (0, 0)
    assert purgatory.watch_keys() == []  # the key is gone with its last operation
    assert purgatory.check_and_complete("k") == 0
    assert purgatory.check_and_complete("never-watched") == 0


class KeyCounter(ConditionOperation):
    """Completes once ``needed`` checks named one of its keys; records the keys it was told."""

    __slots__ = ("keys_told", "needed")

    def __init__(self, timeout: int, needed: int) -> None:
        super().__init__(timeout)
        self.needed = needed
        self.keys_told: list[Hashable] = []

    def try_complete_for_key(self, key: Hashable) -> bool:
        self.keys_told.append(key)
        if len(self.keys_told) >= self.needed:
            return self.force_complete()
        return False


@pytest.mark.parametrize("group_min_keys", [1, 8])  # as a group, and on per-key lists
def test_a_check_tells_each_operation_the_key_it_checks(group_min_keys: int) -> None:
    purgatory = Purgatory("p", group_min_keys=group_min_keys)
    op = KeyCounter(100, needed=3)
    plain = ConditionOperation(100)  # the default: try_complete() checks everything again
    purgatory.try_complete_else_watch(op, ["a", "b", "c"])
    purgatory.try_complete_else_watch(plain, ["a", "b", "c"])
    assert op.keys_told == []  # submission tries try_complete(), not per key
    assert op.calls.count("try_complete") == 2
    assert purgatory.check_and_complete("b") == 0
    assert purgatory.check_and_complete("a") == 0
    plain.satisfied = True
    assert purgatory.check_and_complete("c") == 2
    assert op.keys_told == ["b", "a", "c"]
    assert op.is_completed and plain.is_completed
    assert plain.calls.count("try_complete") == 5


def test_a_check_drops_operations_completed_through_other_keys() -> None:
    purgatory = Purgatory("p")
    both = ConditionOperation(100)
    other = ConditionOperation(100)
    purgatory.try_complete_else_watch(both, ["a", "b"])
    purgatory.try_complete_else_watch(other, ["b"])
    both.satisfied = True
    assert purgatory.check_and_complete("a") == 1
    assert metrics(purgatory) == (2, 1)  # "both" lingers under "b"
    assert purgatory.check_and_complete("b") == 0
    assert metrics(purgatory) == (1, 1)
    assert purgatory._watch_lists["b"] == [other]


def test_a_forced_operation_lingers_until_its_keys_are_checked() -> None:
    purgatory = Purgatory("p")
    op = ConditionOperation(100)
    purgatory.try_complete_else_watch(op, ["a", "b"])
    assert op.force_complete() is True
    assert metrics(purgatory) == (2, 0)
    purgatory.check_and_complete("a")
    purgatory.check_and_complete("b")
    assert metrics(purgatory) == (0, 0)


# -- cancel_for_key -----------------------------------------------------------------------


def test_cancel_for_key_cancels_pending_operations_without_completing_them() -> None:
    purgatory = Purgatory("p")
    first, done, second = ConditionOperation(10), ConditionOperation(10), ConditionOperation(10)
    purgatory.try_complete_else_watch(first, ["k", "other"])
    purgatory.try_complete_else_watch(done, ["k"])
    purgatory.try_complete_else_watch(second, ["k"])
    done.force_complete()
    assert metrics(purgatory) == (4, 2)
    assert purgatory.cancel_for_key("k") == [first, second]
    assert all(op.is_cancelled and not op.is_completed for op in (first, second))
    assert metrics(purgatory) == (1, 0)  # "first" lingers under "other"
    assert purgatory.advance_clock(100) == 0
    assert first.calls == second.calls == ["try_complete", "try_complete"]
    assert purgatory.check_and_complete("other") == 0
    assert metrics(purgatory) == (0, 0)
    assert purgatory.cancel_for_key("k") == []


# -- advance_clock ------------------------------------------------------------------------


def test_advance_clock_expires_due_operations_in_deadline_order() -> None:
    purgatory = Purgatory("p")
    order: list[int] = []
    ops = {
        t: ConditionOperation(t, on_complete_callback=lambda o: order.append(o.timeout))
        for t in (30, 10, 20, 40)
    }
    for op in ops.values():
        purgatory.try_complete_else_watch(op, ["k"])
    assert purgatory.advance_clock(25) == 2
    assert order == [10, 20]
    assert metrics(purgatory) == (4, 2)  # expired operations linger in the watch list
    assert purgatory.check_and_complete("k") == 0
    assert metrics(purgatory) == (2, 2)
    assert purgatory.next_deadline() == 30
    assert purgatory.advance_clock(100) == 2
    assert order == [10, 20, 30, 40]
    assert all(op.is_expired for op in ops.values())


def test_a_satisfied_operation_checked_before_its_rounded_deadline_completes() -> None:
    purgatory = Purgatory("p", tick=10)
    op = ConditionOperation(5)
    purgatory.try_complete_else_watch(op, ["k"])
    purgatory.advance_clock(9)  # past the deadline 5, not past the firing time 10
    op.satisfied = True
    assert purgatory.check_and_complete("k") == 1
    assert op.is_completed and not op.is_expired


def test_a_satisfied_operation_not_checked_before_its_firing_time_expires() -> None:
    purgatory = Purgatory("p", tick=10)
    op = ConditionOperation(5)
    purgatory.try_complete_else_watch(op, ["k"])
    op.satisfied = True
    assert purgatory.advance_clock(10) == 1
    assert op.is_expired
    assert purgatory.check_and_complete("k") == 0  # nothing completes after it expired
    assert op.calls.count("on_complete") == 1


# -- purging ------------------------------------------------------------------------------


def _watch_and_force(purgatory: Purgatory, count: int) -> None:
    """Watch ``count`` operations (one key each) and force-complete them: they linger."""
    ops = [ConditionOperation(10**6) for _ in range(count)]
    for number, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [number % 7])
    for op in ops:
        op.force_complete()


def test_default_purge_interval_is_1000() -> None:
    purgatory = Purgatory("p")
    assert purgatory.purge_interval == 1000
    _watch_and_force(purgatory, 1000)
    purgatory.try_complete_else_watch(ConditionOperation(10), ["new"])
    assert metrics(purgatory) == (1001, 1)  # 1000 lingering: not more than the interval


def test_a_purge_runs_once_more_than_purge_interval_operations_are_done() -> None:
    purgatory = Purgatory("p")
    _watch_and_force(purgatory, 1001)
    assert metrics(purgatory) == (1001, 0)
    purgatory.try_complete_else_watch(ConditionOperation(10), ["new"])
    assert metrics(purgatory) == (1, 1)
    assert lists_hold_no_completed_operation(purgatory)
    assert purgatory.watch_keys() == ["new"]


@pytest.mark.parametrize("trigger", ["submit", "check", "advance"])
def test_every_entry_point_purges_past_the_interval(trigger: str) -> None:
    purgatory = Purgatory("p", purge_interval=2)
    live = ConditionOperation(100)
    purgatory.try_complete_else_watch(live, ["live", "x"])
    _watch_and_force(purgatory, 3)  # 3 done > 2, but nothing called the purge yet
    assert metrics(purgatory) == (5, 1)
    if trigger == "submit":
        purgatory.try_complete_else_watch(ConditionOperation(100), ["new"])
        expected = (3, 2)
    elif trigger == "check":
        purgatory.check_and_complete("unrelated")  # no list: returns before purging
        assert metrics(purgatory) == (5, 1)
        purgatory.check_and_complete("live")
        expected = (2, 1)
    else:
        purgatory.advance_clock(1)
        expected = (2, 1)
    assert metrics(purgatory) == expected
    assert lists_hold_no_completed_operation(purgatory)


def test_purge_interval_zero_purges_after_every_completion() -> None:
    purgatory = Purgatory("p", purge_interval=0)
    a, b = ConditionOperation(5), ConditionOperation(100)
    purgatory.try_complete_else_watch(a, ["x", "y"])
    purgatory.try_complete_else_watch(b, ["y"])
    assert purgatory.advance_clock(5) == 1
    assert metrics(purgatory) == (1, 1)
    assert purgatory._watch_lists == {"y": [b]}


def test_metrics_are_exact_at_every_step() -> None:
    purgatory = Purgatory("metrics", tick=5, purge_interval=1)
    a, b, c = ConditionOperation(10), ConditionOperation(20), ConditionOperation(30)
    steps: list[tuple[int, int]] = []
    purgatory.try_complete_else_watch(a, ["k1", "k2"])
    steps.append(metrics(purgatory))
    purgatory.try_complete_else_watch(b, ["k2", "k3"])
    steps.append(metrics(purgatory))
    purgatory.try_complete_else_watch(c, ["k3"])
    steps.append(metrics(purgatory))
    a.satisfied = True
    purgatory.check_and_complete("k1")  # a done, lingers under k2
    steps.append(metrics(purgatory))
    purgatory.advance_clock(20)  # b expires, lingers under k2 and k3; 2 done > 1: purge
    steps.append(metrics(purgatory))
    purgatory.cancel_for_key("k3")  # c cancelled
    steps.append(metrics(purgatory))
    assert steps == [(2, 1), (4, 2), (5, 3), (4, 2), (1, 1), (0, 0)]
    assert purgatory.watch_keys() == []
    assert repr(purgatory) == "DelayedOperationPurgatory('metrics', watched=0, num_delayed=0)"


# -- shutdown -----------------------------------------------------------------------------


def test_shutdown_returns_pending_operations_uncompleted_and_refuses_new_ones() -> None:
    purgatory = Purgatory("p")
    pending = [ConditionOperation(10) for _ in range(3)]
    done = ConditionOperation(10)
    for op, keys in zip([*pending, done], [["a"], ["a", "b"], ["c"], ["a"]], strict=True):
        purgatory.try_complete_else_watch(op, keys)
    done.force_complete()
    returned = purgatory.shutdown()
    assert sorted(map(id, returned)) == sorted(map(id, pending))
    assert all(op.is_cancelled and not op.is_completed for op in pending)
    assert all(op.calls == ["try_complete", "try_complete"] for op in pending)
    assert metrics(purgatory) == (0, 0) and purgatory.watch_keys() == []
    late = ConditionOperation(10, satisfied=True)
    with pytest.raises(PurgatoryShutdownError, match="'p' has been shut down"):
        purgatory.try_complete_else_watch(late, ["a"])
    assert late.calls == [] and metrics(purgatory) == (0, 0)
    assert purgatory.advance_clock(100) == 0
    assert purgatory.check_and_complete("a") == 0
    assert purgatory.shutdown() == []
    # the owner may still answer what shutdown returned
    assert all(op.force_complete() is False for op in pending)


def test_watch_keys_lists_the_keys_with_a_watch_list() -> None:
    purgatory = Purgatory("p")
    keys: list[Hashable] = [("topic", 0), ("topic", 1), 7]
    purgatory.try_complete_else_watch(ConditionOperation(10), keys)
    assert purgatory.watch_keys() == keys

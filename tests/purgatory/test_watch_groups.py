"""Operations with many keys are watched as groups (``group_min_keys``): the group semantics."""

from __future__ import annotations

import gc

import pytest

from purgatory import DelayedOperationPurgatory, InvalidGroupMinKeysError, InvalidKeysError
from purgatory.testing import ConditionOperation
from tests.builds import bad_argument

Purgatory = DelayedOperationPurgatory[ConditionOperation]


def metrics(purgatory: Purgatory) -> tuple[int, int]:
    return purgatory.watched, purgatory.num_delayed


class Named(ConditionOperation):
    """Records the order in which operations are tried."""

    def __init__(self, name: str, tried: list[str]) -> None:
        super().__init__(100)
        self.name, self.tried = name, tried

    def try_complete(self) -> bool:
        self.tried.append(self.name)
        return super().try_complete()


def test_operations_with_the_same_keys_share_a_group_tried_in_watch_order() -> None:
    purgatory = Purgatory("p", group_min_keys=2)
    tried: list[str] = []
    a, b, c, d = (Named(name, tried) for name in "abcd")
    purgatory.try_complete_else_watch(a, ["x", "y"])
    purgatory.try_complete_else_watch(b, ["y"])  # one key: y's own list
    purgatory.try_complete_else_watch(c, ("x", "y"))  # a tuple and a list: the same group
    purgatory.try_complete_else_watch(d, ["y", "x"])  # another order: another group
    assert metrics(purgatory) == (7, 4)
    assert purgatory.watchers("y") == [b, a, c, d]  # the key's list, then group by group
    assert purgatory.watchers("x") == [a, c, d]
    tried.clear()
    assert purgatory.check_and_complete("y") == 0
    assert tried == ["b", "a", "c", "d"]
    assert purgatory.cancel_for_key("x") == [a, c, d]  # in watch order
    assert purgatory.watch_keys() == ["y"] and metrics(purgatory) == (1, 1)


def test_a_check_drops_a_completed_grouped_operation_from_all_its_keys() -> None:
    purgatory = Purgatory("p", group_min_keys=2)
    both, other = ConditionOperation(100), ConditionOperation(100)
    purgatory.try_complete_else_watch(both, ["a", "b"])
    purgatory.try_complete_else_watch(other, ["b"])
    both.satisfied = True
    assert purgatory.check_and_complete("a") == 1
    # Kafka (and a per-key list) would keep "both" under "b" until "b" is checked or purged.
    assert metrics(purgatory) == (1, 1)
    assert purgatory.watch_keys() == ["b"] and purgatory.watchers("b") == [other]


def test_a_forced_grouped_operation_lingers_until_a_check_or_a_purge() -> None:
    purgatory = Purgatory("p", group_min_keys=1)
    ops = [ConditionOperation(100) for _ in range(3)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["a", "b", "a"])  # a duplicate key counts twice
    assert metrics(purgatory) == (9, 3)
    assert purgatory.watchers("a") == [ops[0], ops[0], ops[1], ops[1], ops[2], ops[2]]
    ops[1].force_complete()
    assert metrics(purgatory) == (9, 2)
    assert purgatory.purge_completed() == 3
    assert metrics(purgatory) == (6, 2)
    ops[0].satisfied = True
    assert purgatory.check_and_complete("b") == 1
    assert metrics(purgatory) == (3, 1)
    assert purgatory.advance_clock(100) == 1
    assert purgatory.check_and_complete("a") == 0
    assert metrics(purgatory) == (0, 0) and purgatory.watch_keys() == []


def test_a_callback_adding_to_the_group_being_walked_is_tried_in_the_same_check() -> None:
    purgatory = Purgatory("p", group_min_keys=1)
    late = ConditionOperation(100, satisfied=False)

    def add_late(_: ConditionOperation) -> None:
        late.satisfied = False
        purgatory.try_complete_else_watch(late, ["k", "j"])  # the group being walked
        late.satisfied = True

    first = ConditionOperation(100, on_complete_callback=add_late)
    purgatory.try_complete_else_watch(first, ["k", "j"])
    first.satisfied = True
    assert purgatory.check_and_complete("k") == 2
    assert late.is_completed and metrics(purgatory) == (0, 0)


def test_shutdown_returns_grouped_and_listed_operations_in_watch_order() -> None:
    purgatory = Purgatory("p", group_min_keys=2)
    ops = [ConditionOperation(100) for _ in range(4)]
    for op, keys in zip(ops, (["a", "b"], ["a"], ["b", "c"], ["a", "b"]), strict=True):
        purgatory.try_complete_else_watch(op, keys)
    ops[2].force_complete()
    assert purgatory.shutdown() == [ops[0], ops[1], ops[3]]
    assert metrics(purgatory) == (0, 0) and purgatory.watch_keys() == []


def test_an_unhashable_key_in_a_group_watches_nothing() -> None:
    purgatory = Purgatory("p", group_min_keys=1)
    op = ConditionOperation(10)
    with pytest.raises(InvalidKeysError, match="every key must be hashable"):
        purgatory.try_complete_else_watch(op, ["a", ["b"]])  # type: ignore[list-item]
    assert metrics(purgatory) == (0, 0) and purgatory.watch_keys() == []
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is False  # may be resubmitted


@pytest.mark.parametrize("value", [0, -1, 1.5, "8", None])
def test_group_min_keys_must_be_a_positive_int(value: object) -> None:
    match = "group_min_keys must be an int >= 1"
    with bad_argument(
        InvalidGroupMinKeysError, value, where=DelayedOperationPurgatory, match=match
    ):
        Purgatory("p", group_min_keys=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["checked", "cancelled"])
def test_a_group_let_go_leaves_no_reference_cycle(how: str) -> None:
    """A completed operation points at its group (where it was watched): a dropped group must
    let go of its operations, or each pair stays in memory until a cyclic collection, which
    a user running with the collector off (the simulator) never makes."""
    purgatory = Purgatory("p", group_min_keys=2)
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        for _ in range(10):
            operation = ConditionOperation(100)
            purgatory.try_complete_else_watch(operation, ["a", "b"])
            if how == "checked":
                operation.satisfied = True
                assert purgatory.check_and_complete("a") == 1
            else:
                operation.cancel()
            del operation
        assert purgatory.watch_keys() == []
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def test_a_group_emptied_by_a_check_is_reused_and_tried_where_a_new_group_would_be() -> None:
    purgatory = Purgatory("p", group_min_keys=2)
    tried: list[str] = []
    first, later, again = Named("first", tried), Named("later", tried), Named("again", tried)
    purgatory.try_complete_else_watch(first, ["x", "y"])
    group = purgatory._groups[("x", "y")]
    purgatory.try_complete_else_watch(later, ["y", "x"])  # another group, made after it
    first.satisfied = True
    assert purgatory.check_and_complete("x") == 1
    assert purgatory._groups[("x", "y")] is group and not group.operations  # retired, kept
    assert purgatory.watchers("x") == [later] and purgatory.watched == 2
    purgatory.try_complete_else_watch(again, ("x", "y"))
    assert purgatory._groups[("x", "y")] is group  # revived, not made again
    assert purgatory.watchers("y") == [later, again]  # last, as a new group would be
    tried.clear()
    assert purgatory.check_and_complete("y") == 0
    assert tried == ["later", "again"]


def test_retired_groups_are_invisible_and_bounded() -> None:
    purgatory = Purgatory("p", group_min_keys=2)
    for n in range(100):
        operation = ConditionOperation(100)
        purgatory.try_complete_else_watch(operation, [n, n + 1000])
        operation.satisfied = True
        assert purgatory.check_and_complete(n) == 1
        assert purgatory.watch_keys() == [] and metrics(purgatory) == (0, 0)
        assert purgatory.check_and_complete(n + 1000) == 0
    assert len(purgatory._groups) == len(purgatory._retired) == 64  # the newest kept
    assert (99, 1099) in purgatory._groups and (35, 1035) not in purgatory._groups
    assert len(purgatory._groups_by_key) == 128


class CompletesAtThirdTry(ConditionOperation):
    """Not done at its submission (two tries), done at the first check that tries it."""

    def __init__(self) -> None:
        super().__init__(100)
        self.tries = 0

    def try_complete(self) -> bool:
        self.tries += 1
        self.satisfied = self.tries >= 3
        return super().try_complete()


def test_an_operation_reviving_a_group_during_a_check_is_tried_in_that_check() -> None:
    purgatory = Purgatory("p", group_min_keys=2)
    done = ConditionOperation(100)
    purgatory.try_complete_else_watch(done, ["x", "y"])
    done.satisfied = True
    assert purgatory.check_and_complete("x") == 1  # its group is retired, first under "x"
    revived = CompletesAtThirdTry()
    trigger = ConditionOperation(
        100,
        on_complete_callback=lambda _: purgatory.try_complete_else_watch(revived, ["x", "y"]),
    )
    purgatory.try_complete_else_watch(trigger, ["x", "z"])  # a second group under "x"
    trigger.satisfied = True
    # The walk finds the retired group empty, completes the trigger, whose callback revives
    # the group: the revived operation is tried in the same check, as a new group's would be.
    assert purgatory.check_and_complete("x") == 2
    assert revived.is_completed and metrics(purgatory) == (0, 0)

"""Completion callbacks that re-enter a purgatory (the nested callbacks of Kafka's refactoring
design): nothing is lost, nothing completes twice, and no wake-up is missed."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import attrs
from hypothesis import given
from hypothesis import strategies as st

from purgatory import DelayedOperation, DelayedOperationPurgatory, ReentrantAdvanceError
from purgatory.testing import ConditionOperation

Purgatory = DelayedOperationPurgatory[ConditionOperation]


def completions(op: ConditionOperation) -> int:
    return op.calls.count("on_complete")


# -- a produce/fetch pipeline across two purgatories --------------------------------------


@attrs.define
class Log:
    high_watermark: int = 0


class WaitForHighWatermark(DelayedOperation):
    """Completes once ``log.high_watermark >= offset`` (a DelayedProduce or DelayedFetch)."""

    __slots__ = ("completed", "log", "offset", "then")

    def __init__(
        self, timeout: int, log: Log, offset: int, then: Callable[[], object] = lambda: None
    ) -> None:
        super().__init__(timeout)
        self.log, self.offset, self.then = log, offset, then
        self.completed = 0

    def try_complete(self) -> bool:
        return self.force_complete() if self.log.high_watermark >= self.offset else False

    def on_complete(self) -> None:
        self.completed += 1
        self.then()


def test_produce_completion_commits_offsets_and_wakes_fetches_of_another_purgatory() -> None:
    # A produce of data completes -> its callback commits an offset (appends to the offsets
    # log) and checks the fetch purgatory -> a consumer fetching the offsets log completes ->
    # its callback produces again to the produce purgatory that is still being walked.
    produce = DelayedOperationPurgatory[WaitForHighWatermark]("produce")
    fetch = DelayedOperationPurgatory[WaitForHighWatermark]("fetch")
    data, offsets = Log(), Log()
    all_ops: list[WaitForHighWatermark] = []

    def commit() -> None:
        offsets.high_watermark += 1
        fetch.check_and_complete("offsets-0")

    def produce_more() -> None:
        op = WaitForHighWatermark(1000, data, data.high_watermark + 1, then=commit)
        all_ops.append(op)
        produce.try_complete_else_watch(op, ["data-0"])

    for offset in (1, 2, 3):
        op = WaitForHighWatermark(1000, data, offset, then=commit)
        all_ops.append(op)
        produce.try_complete_else_watch(op, ["data-0"])
    for offset in (1, 3):
        op = WaitForHighWatermark(1000, offsets, offset, then=produce_more)
        all_ops.append(op)
        fetch.try_complete_else_watch(op, ["offsets-0", "data-0"])
    assert (produce.watched, produce.num_delayed, fetch.watched, fetch.num_delayed) == (3, 3, 4, 2)

    data.high_watermark = 3  # a follower fetch advanced the high watermark
    assert produce.check_and_complete("data-0") == 3
    # 3 produces -> 3 commits -> both fetches completed -> 2 more produces, still pending
    assert offsets.high_watermark == 3
    assert [op.completed for op in all_ops] == [1, 1, 1, 1, 1, 0, 0]
    assert (produce.num_delayed, fetch.num_delayed) == (2, 0)
    assert produce.watched == 2 and produce.watch_keys() == ["data-0"]

    data.high_watermark = 4
    assert produce.check_and_complete("data-0") == 2
    assert [op.completed for op in all_ops] == [1] * 7
    assert offsets.high_watermark == 5
    fetch.purge_completed()
    assert (produce.watched, produce.num_delayed, fetch.watched, fetch.num_delayed) == (0, 0, 0, 0)


# -- one purgatory, nested calls on the key being walked ----------------------------------


def test_an_op_made_satisfiable_by_a_nested_callback_is_completed_before_the_walk_returns() -> None:
    purgatory = Purgatory("p")
    # B is ahead of A in the list: the outer walk tries B (not satisfied) before A completes.
    b = ConditionOperation(100)

    def satisfy_b_and_check(_: ConditionOperation) -> None:
        b.satisfied = True
        purgatory.check_and_complete("k")
        assert b.is_completed  # the nested check already completed it

    a = ConditionOperation(100, on_complete_callback=satisfy_b_and_check)
    purgatory.try_complete_else_watch(b, ["k"])
    purgatory.try_complete_else_watch(a, ["k"])
    a.satisfied = True
    assert purgatory.check_and_complete("k") == 1  # the outer walk completed A only
    assert completions(a) == completions(b) == 1
    assert (purgatory.watched, purgatory.num_delayed) == (0, 0)


def test_an_op_later_in_the_list_made_satisfiable_by_a_callback_is_tried_by_the_walk() -> None:
    purgatory = Purgatory("p")
    b = ConditionOperation(100)
    a = ConditionOperation(100, on_complete_callback=lambda _: setattr(b, "satisfied", True))
    purgatory.try_complete_else_watch(a, ["k"])
    purgatory.try_complete_else_watch(b, ["k"])
    a.satisfied = True
    assert purgatory.check_and_complete("k") == 2
    assert completions(a) == completions(b) == 1


def test_operations_submitted_during_a_walk_are_tried_by_it() -> None:
    purgatory = Purgatory("p", purge_interval=0)  # the purge must wait for the walk
    late = ConditionOperation(100)
    c = ConditionOperation(100, on_complete_callback=lambda _: setattr(late, "satisfied", True))

    def submit_late(_: ConditionOperation) -> None:
        assert purgatory.try_complete_else_watch(late, ["k"]) is False

    a = ConditionOperation(100, on_complete_callback=submit_late)
    b = ConditionOperation(100)
    for op in (a, b, c):
        purgatory.try_complete_else_watch(op, ["k"])
        op.satisfied = True
    assert purgatory.check_and_complete("k") == 4  # a, b, c, then late (appended meanwhile)
    assert [completions(op) for op in (a, b, c, late)] == [1, 1, 1, 1]
    assert (purgatory.watched, purgatory.num_delayed) == (0, 0)


def test_a_chain_of_nested_checks_completes_everything_once() -> None:
    purgatory = Purgatory("p")
    chain: list[ConditionOperation] = []

    def wake_next(op: ConditionOperation) -> None:
        position = chain.index(op)
        if position + 1 < len(chain):
            chain[position + 1].satisfied = True
            purgatory.check_and_complete(("k", (position + 1) % 3))

    for position in range(60):
        op = ConditionOperation(100, on_complete_callback=wake_next)
        chain.append(op)
        purgatory.try_complete_else_watch(op, [("k", position % 3), "all"])
    chain[0].satisfied = True
    assert purgatory.check_and_complete(("k", 0)) == 1
    assert all(completions(op) == 1 for op in chain)
    assert purgatory.num_delayed == 0
    assert purgatory.check_and_complete("all") == 0
    # nested checks do not compact (an outer walk is in progress): entries linger until purged
    assert purgatory.watched == 40
    assert purgatory.purge_completed() == 40
    assert (purgatory.watched, purgatory.watch_keys()) == (0, [])


def test_a_nested_cancel_of_the_walked_key() -> None:
    purgatory = Purgatory("p")
    b, c = ConditionOperation(100), ConditionOperation(100)
    a = ConditionOperation(100, on_complete_callback=lambda _: purgatory.cancel_for_key("k"))
    for op in (a, b, c):
        purgatory.try_complete_else_watch(op, ["k"])
        op.satisfied = True
    assert purgatory.check_and_complete("k") == 1
    assert completions(a) == 1 and b.is_cancelled and c.is_cancelled
    assert (purgatory.watched, purgatory.num_delayed, purgatory.watch_keys()) == (0, 0, [])


def test_explicit_purge_inside_a_walk_skips_nothing() -> None:
    # Regression: purge_completed() from a callback rewrote the walked list in place and
    # the outer walk skipped B (a lost wake-up).
    purgatory = Purgatory("p")
    a = ConditionOperation(100, on_complete_callback=lambda _: purgatory.purge_completed())
    b, c = ConditionOperation(100), ConditionOperation(100)
    for op in (a, b, c):
        purgatory.try_complete_else_watch(op, ["k"])
        op.satisfied = True
    assert purgatory.check_and_complete("k") == 3
    assert [completions(op) for op in (a, b, c)] == [1, 1, 1]
    assert purgatory.num_delayed == 0
    assert purgatory.check_and_complete("k") == 0  # whatever lingered is dropped now
    assert (purgatory.watched, purgatory.watch_keys()) == (0, [])


# -- re-entering from expiry --------------------------------------------------------------


def test_an_expiring_op_can_complete_another_op_of_the_same_batch() -> None:
    purgatory = Purgatory("p")
    other = ConditionOperation(10)

    def wake_other(_: ConditionOperation) -> None:
        other.satisfied = True
        assert purgatory.check_and_complete("k") == 1

    first = ConditionOperation(10, on_complete_callback=wake_other)
    purgatory.try_complete_else_watch(first, ["k"])
    purgatory.try_complete_else_watch(other, ["k"])
    assert purgatory.advance_clock(10) == 1  # only "first" expired
    assert first.is_expired and other.is_completed and not other.is_expired
    assert completions(other) == 1
    assert (purgatory.watched, purgatory.num_delayed) == (0, 0)


def test_advance_clock_from_an_expiry_callback_raises() -> None:
    purgatory = Purgatory("p")
    errors: list[ReentrantAdvanceError] = []

    def reenter(_: ConditionOperation) -> None:
        try:
            purgatory.advance_clock(purgatory.now)
        except ReentrantAdvanceError as error:
            errors.append(error)

    purgatory.try_complete_else_watch(ConditionOperation(5, on_complete_callback=reenter), ["k"])
    assert purgatory.advance_clock(5) == 1
    assert len(errors) == 1


# -- property: random nested callbacks across two purgatories -----------------------------

# What an operation's completion callback does to another operation (the target).
WAKE, SATISFY, SUBMIT, PURGE, CANCEL = range(5)
EFFECTS = st.sampled_from((WAKE, SATISFY, SATISFY, SUBMIT, PURGE, CANCEL))
# What the test driver does at top level.
DRIVE_SUBMIT, DRIVE_WAKE, DRIVE_ADVANCE, DRIVE_CHECK = range(4)


@attrs.define
class Spec:
    purgatory: int
    keys: list[int]
    timeout: int
    effects: list[tuple[int, int, int]]  # (what, target, key choice) run by on_complete


@st.composite
def nested_scenarios(draw: st.DrawFn) -> tuple[list[Spec], list[tuple[int, int, int]]]:
    count = draw(st.integers(2, 6))
    targets = st.integers(0, count - 1)
    specs = [
        Spec(
            purgatory=draw(st.sampled_from((0, 0, 1))),
            keys=draw(st.lists(st.integers(0, 1), min_size=1, max_size=2)),
            timeout=draw(st.integers(0, 30)),
            effects=draw(st.lists(st.tuples(EFFECTS, targets, st.integers(0, 2)), max_size=3)),
        )
        for _ in range(count)
    ]
    # driver steps: (DRIVE_SUBMIT, op, _), (DRIVE_WAKE, op, key choice), (DRIVE_ADVANCE, _,
    # step) on both clocks, (DRIVE_CHECK, purgatory, key): a bare check_and_complete
    steps = draw(st.lists(st.tuples(st.integers(0, 3), targets, st.integers(0, 10)), max_size=25))
    return specs, steps


@given(nested_scenarios(), st.integers(0, 2))
def test_nested_callbacks_lose_nothing_and_complete_once(
    scenario: tuple[list[Spec], list[tuple[int, int, int]]], purge_interval: int
) -> None:
    """Random completion callbacks that wake, satisfy, submit, purge and cancel other ops.

    No lost wake-up: when any check_and_complete(key) returns, every submitted op watched
    under that key that was satisfied before the check began is done. Every op completes at
    most once, the metrics stay exact, and at the end every op not cancelled has completed.
    """
    specs, steps = scenario
    purgatories = [Purgatory("produce", purge_interval=purge_interval), Purgatory("fetch")]
    submitted = [False] * len(specs)
    satisfied_at: list[int | None] = [None] * len(specs)
    clock = itertools.count()

    def key_of(index: int, key_choice: int) -> int:
        keys = specs[index].keys
        return keys[key_choice % len(keys)]

    def done(index: int) -> bool:
        return ops[index].is_completed or ops[index].is_cancelled

    def submit(index: int) -> None:
        if not submitted[index]:
            submitted[index] = True
            purgatories[specs[index].purgatory].try_complete_else_watch(
                ops[index], specs[index].keys
            )

    def satisfy(index: int) -> None:
        if satisfied_at[index] is None:
            satisfied_at[index] = next(clock)
        ops[index].satisfied = True

    def check(number: int, key: int) -> None:
        began = next(clock)
        purgatories[number].check_and_complete(key)
        for index, spec in enumerate(specs):
            at = satisfied_at[index]
            watched_here = submitted[index] and spec.purgatory == number and key in spec.keys
            if watched_here and at is not None and at < began:
                assert done(index), f"op {index} missed its wake-up on key {key}"

    def on_complete(op: ConditionOperation) -> None:
        for what, target, key_choice in specs[ops.index(op)].effects:
            purgatory = purgatories[specs[target].purgatory]
            if what == WAKE:
                satisfy(target)
                check(specs[target].purgatory, key_of(target, key_choice))
            elif what == SATISFY:
                satisfy(target)
            elif what == SUBMIT:
                submit(target)
            elif what == PURGE:
                purgatory.purge_completed()
            else:
                purgatory.cancel_for_key(key_of(target, key_choice))

    ops = [ConditionOperation(spec.timeout, on_complete_callback=on_complete) for spec in specs]

    def check_consistency() -> None:
        for number, purgatory in enumerate(purgatories):
            pending = [
                index
                for index, spec in enumerate(specs)
                if submitted[index] and spec.purgatory == number and not done(index)
            ]
            assert purgatory.num_delayed == len(pending)
            assert purgatory.watched >= sum(len(specs[index].keys) for index in pending)
        assert all(completions(op) <= 1 for op in ops)

    for what, target, number in steps:
        if what == DRIVE_SUBMIT:
            submit(target)
        elif what == DRIVE_WAKE:
            satisfy(target)
            check(specs[target].purgatory, key_of(target, number))
        elif what == DRIVE_ADVANCE:
            now = purgatories[0].now + number
            for purgatory in purgatories:
                purgatory.advance_clock(now)
        else:
            check(target % 2, number % 3)
        check_consistency()
    # Finally wake everything: every submitted op not cancelled completes, exactly once.
    for index in range(len(ops)):
        satisfy(index)
        check(specs[index].purgatory, key_of(index, 0))
    check_consistency()
    for index, op in enumerate(ops):
        assert completions(op) == (1 if submitted[index] and not op.is_cancelled else 0)
    for purgatory in purgatories:
        purgatory.purge_completed()
        assert (purgatory.watched, purgatory.num_delayed) == (0, 0)

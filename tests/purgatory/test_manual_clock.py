"""ManualClock: moved by hand, never backwards, integers only."""

from __future__ import annotations

import pytest

from purgatory import (
    ClockWentBackwardsError,
    DelayedOperationPurgatory,
    InvalidDeadlineError,
    ManualClock,
)
from purgatory.testing import ConditionOperation
from tests.builds import bad_argument


def test_it_reads_and_moves() -> None:
    clock = ManualClock(5)
    assert clock() == clock.now == 5
    clock.advance_to(9)
    clock.now += 1
    assert clock() == 10 and repr(clock) == "ManualClock(now=10)"


@pytest.mark.parametrize("move", [lambda c: c.advance_to(3), lambda c: setattr(c, "now", 3)])
def test_it_never_goes_back(move: object) -> None:
    clock = ManualClock(9)
    with pytest.raises(ClockWentBackwardsError, match="from 9 to 3"):
        move(clock)  # type: ignore[operator]
    assert clock() == 9


@pytest.mark.parametrize("bad", [1.5, "3", None])
def test_time_must_be_an_int(bad: object) -> None:
    with bad_argument(InvalidDeadlineError, bad, where=ManualClock):
        ManualClock(bad)  # type: ignore[arg-type]
    with bad_argument(InvalidDeadlineError, bad, where=ManualClock):
        ManualClock().advance_to(bad)  # type: ignore[arg-type]


def test_a_purgatory_computes_deadlines_from_it() -> None:
    clock = ManualClock(100)
    purgatory: DelayedOperationPurgatory[ConditionOperation] = DelayedOperationPurgatory(
        "p", clock=clock, start=100
    )
    purgatory.try_complete_else_watch(ConditionOperation(50), ["k"])
    assert purgatory.next_deadline() == 150

"""The state map's merge is a join-semilattice (the seed's CRDT): commutative, associative
and idempotent, for one record's progress and for whole maps; and the order means what the
docs say (finished dominates, later deliveries and a delivery's end win, renewals move the
lease later)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consume_proxy import NEVER_DELIVERED, Progress, RecordState, StateMap

_S = RecordState


@st.composite
def progresses(draw: st.DrawFn) -> Progress:
    state = draw(st.sampled_from([_S.AVAILABLE, _S.PENDING, _S.ACKNOWLEDGED, _S.ARCHIVED]))
    delivery = draw(st.integers(0 if state is _S.AVAILABLE else 1, 4))
    deadline = draw(st.integers(0, 30)) if state is _S.PENDING else None
    return Progress(delivery, state, deadline)


state_maps = st.builds(
    StateMap.of,
    st.integers(0, 6),
    st.lists(st.tuples(st.integers(0, 10), progresses()), max_size=12),
)


@given(progresses(), progresses(), progresses())
def test_progress_join_is_a_semilattice(a: Progress, b: Progress, c: Progress) -> None:
    assert a.join(b) == b.join(a)
    assert a.join(b).join(c) == a.join(b.join(c))
    assert a.join(a) == a
    assert a.join(NEVER_DELIVERED) == a  # the bottom


@given(state_maps, state_maps, state_maps)
def test_state_map_join_is_a_semilattice(a: StateMap, b: StateMap, c: StateMap) -> None:
    assert a.join(b) == b.join(a)
    assert a.join(b).join(c) == a.join(b.join(c))
    assert a.join(a) == a
    joined = a.join(b)  # an upper bound of both
    assert all(
        joined.get(o).join(p) == joined.get(o)
        for o, p in a.progress.items()
        if o >= joined.committed
    )


def test_the_order_keeps_the_newer_fact() -> None:
    acked = Progress(1, _S.ACKNOWLEDGED)
    assert acked.join(Progress(3, _S.PENDING, 99)) == acked  # finished dominates
    assert Progress(2, _S.PENDING, 5).join(Progress(1, _S.PENDING, 50)).delivery == 2
    assert Progress(2, _S.PENDING, 5).join(Progress(2, _S.AVAILABLE)).state is _S.AVAILABLE
    assert Progress(2, _S.PENDING, 5).join(Progress(2, _S.PENDING, 9)).lease_deadline == 9
    merged = StateMap.of(0, [(0, acked)]).join(StateMap.of(1, [(1, Progress(1, _S.PENDING, 3))]))
    assert merged == StateMap.of(1, [(1, Progress(1, _S.PENDING, 3))])  # 0 is committed


@pytest.mark.parametrize(
    ("delivery", "state", "deadline"),
    [
        (1, _S.PENDING, None),
        (1, _S.AVAILABLE, 4),
        (0, _S.ACKNOWLEDGED, None),
        (1, _S.COMMITTED, None),
    ],
)
def test_impossible_progress_is_refused(
    delivery: int, state: RecordState, deadline: int | None
) -> None:
    with pytest.raises(ValueError, match=r"progress|lease deadline|no delivery"):
        Progress(delivery, state, deadline)

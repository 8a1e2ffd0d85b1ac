"""The state map's merge is a join-semilattice (the seed's CRDT): commutative, associative
and idempotent, for one record's progress and for whole maps; and the order means what the
docs say (finished dominates, later deliveries and a delivery's end win, renewals move the
lease later)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consume_proxy import NEVER_DELIVERED, ConsumeProxy, Progress, RecordState, StateMap
from replica.types import TopicPartition

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


@given(
    st.lists(st.sampled_from(["read", "acknowledge", "cancel", "reject", "advance"]), max_size=20),
    st.lists(st.tuples(st.integers(0, 9), progresses()), max_size=10),
)
def test_merging_into_a_server_copy_moves_it_to_the_join(
    actions: list[str], consumer_facts: list[tuple[int, Progress]]
) -> None:
    tp = TopicPartition("data", 0)
    proxy = ConsumeProxy(lease_duration=5, delivery_count_limit=3)
    proxy.assign(tp, 0)
    for offset in range(6):  # offsets 6 to 9 are not fetched yet: their progress is kept
        proxy.append(tp, offset, None, None)
    held: list[int] = []
    for action in actions:
        if action == "read":
            proxy.read(0, lambda r: held.append(r.offset) if r else None)
        elif action == "advance":
            proxy.advance(proxy.now() + 3)
        elif held:
            offset = held.pop(0)
            if proxy.state(tp, offset) is RecordState.PENDING:
                getattr(proxy, action)(tp, offset)
    proxy.commit()
    partition = proxy.partition(tp)
    consumer = StateMap.of(partition.start_offset, consumer_facts)
    expected = partition.state_map().join(consumer)
    for offset, progress in consumer.progress.items():
        partition.merge(offset, progress)
    assert partition.state_map() == expected
    for offset in range(6, 10):
        proxy.append(tp, offset, None, None)
    assert partition.state_map() == expected


def test_an_acknowledgement_beats_an_archive() -> None:
    assert Progress(3, _S.ARCHIVED).join(Progress(1, _S.ACKNOWLEDGED)).state is _S.ACKNOWLEDGED

"""Burrow's gap detection: the pure functions and the trackers built on them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replica.types import TopicPartition
from sim.clients.burrow.gap import (
    MessageInfo,
    commit_positions,
    committable_sequence,
    sequences_to_offsets,
)
from sim.clients.burrow.tracker import GapTracker, SequenceTracker, Ticket

P0 = TopicPartition("t", 0)
P1 = TopicPartition("t", 1)

# The seed's example: received [p0:100, p0:101, p1:50, p0:102, p1:51].
RECEIVED = [(P0, 100), (P0, 101), (P1, 50), (P0, 102), (P1, 51)]
MESSAGES = {seq: MessageInfo(tp, off, seq) for seq, (tp, off) in enumerate(RECEIVED)}


def test_seed_example_committable_sequence_stops_at_the_gap() -> None:
    assert committable_sequence({0, 1, 3, 4}, -1, 4) == 1


def test_seed_example_offsets_and_commit_positions() -> None:
    offsets = sequences_to_offsets(MESSAGES, -1, 1)
    assert offsets == {P0: 101}  # p1: nothing, its seq 2 is the gap
    assert commit_positions(offsets) == {P0: 102}  # Kafka stores the next offset to read


def test_after_the_gap_closes_both_partitions_commit() -> None:
    assert committable_sequence({0, 1, 2, 3, 4}, -1, 4) == 4
    assert sequences_to_offsets(MESSAGES, 1, 4) == {P0: 102, P1: 51}


def test_nothing_processed_commits_nothing() -> None:
    assert committable_sequence(set(), -1, 4) == -1
    assert committable_sequence({5}, 3, 5) == 3
    assert sequences_to_offsets(MESSAGES, 3, 3) == {}


def test_committable_never_exceeds_the_high_watermark() -> None:
    assert committable_sequence({0, 1, 2, 3}, -1, 1) == 1


def test_missing_sequences_are_skipped_when_converting() -> None:
    assert sequences_to_offsets({0: MessageInfo(P0, 7, 0)}, -1, 3) == {P0: 7}


processed_sets = st.sets(st.integers(0, 40), max_size=40)


@given(processed=processed_sets, last=st.integers(-1, 20), hwm=st.integers(-1, 40))
def test_never_commits_past_a_gap(processed: set[int], last: int, hwm: int) -> None:
    c = committable_sequence(processed, last, hwm)
    assert last <= c <= max(last, hwm)
    assert all(s in processed for s in range(last + 1, c + 1))  # no gap inside
    if c < hwm:
        assert c + 1 not in processed  # stopped at a gap, not early


@given(processed=processed_sets, extra=st.sets(st.integers(0, 40)), hwm=st.integers(-1, 40))
def test_monotone_in_processed_set_and_in_last_committed(
    processed: set[int], extra: set[int], hwm: int
) -> None:
    c = committable_sequence(processed, -1, hwm)
    assert committable_sequence(processed | extra, -1, hwm) >= c
    # Restarting the scan from any point of the prefix gives the same answer.
    for start in range(-1, c + 1):
        assert committable_sequence(processed, start, hwm) == c


@settings(max_examples=60)
@given(
    arrivals=st.lists(st.integers(0, 3), min_size=1, max_size=40),
    data=st.data(),
)
def test_tracker_matches_the_pure_function_and_modes_differ_as_designed(
    arrivals: list[int], data: st.DataObject
) -> None:
    """Partitions of arriving messages, processed in a random order with random failures:
    the incremental tracker agrees with the pure function, per-partition mode commits each
    partition independently, and neither ever covers an unprocessed message."""
    global_tracker = GapTracker(per_partition=False)
    per_partition = GapTracker(per_partition=True)
    next_offset = [0, 0, 0, 0]
    tickets: list[tuple[MessageInfo, Ticket, Ticket]] = []
    for p in arrivals:
        info = MessageInfo(TopicPartition("t", p), next_offset[p], len(tickets))
        next_offset[p] += 1
        tickets.append((info, global_tracker.assign(info), per_partition.assign(info)))
    order = data.draw(st.permutations(range(len(tickets))))
    failed = data.draw(st.sets(st.sampled_from(range(len(tickets)))))
    done: set[int] = set()
    for index in order:
        info, g, pp = tickets[index]
        if index in failed:
            global_tracker.mark_failed(g)
            per_partition.mark_failed(pp)
            continue
        global_tracker.mark_processed(g)
        per_partition.mark_processed(pp)
        done.add(index)
        space = g.space
        assert space.contiguous == committable_sequence(
            space.processed, space.last_committed, space.high_watermark
        )
    g_plan, p_plan = global_tracker.plan(), per_partition.plan()
    for plan in (g_plan, p_plan):
        for tp, offset in plan.offsets.items():
            # every message of tp up to the planned offset was processed
            assert all(
                i in done
                for i, (info, _, _) in enumerate(tickets)
                if info.tp == tp and info.offset <= offset
            )
    # Per partition: each partition commits up to its own first gap.
    for p in set(arrivals):
        tp = TopicPartition("t", p)
        indices = [i for i, (info, _, _) in enumerate(tickets) if info.tp == tp]
        prefix = 0
        while prefix < len(indices) and indices[prefix] in done:
            prefix += 1
        expected = prefix - 1 if prefix else None
        assert p_plan.offsets.get(tp) == expected
    # Globally: the prefix over arrival order decides for everyone.
    prefix = 0
    while prefix < len(tickets) and prefix in done:
        prefix += 1
    expected_global: dict[TopicPartition, int] = {}
    for info, _, _ in tickets[:prefix]:
        expected_global[info.tp] = info.offset
    assert g_plan.offsets == expected_global
    assert g_plan.message_count == prefix
    # Committing forgets the prefix and leaves nothing to commit.
    global_tracker.commit(g_plan)
    assert global_tracker.plan().empty
    assert global_tracker.committable_backlog == 0


def test_sequence_tracker_reports_messages_joining_the_prefix_in_order() -> None:
    tracker = SequenceTracker()
    infos = [MessageInfo(P0, o, o) for o in range(4)]
    seqs = [tracker.assign(i) for i in infos]
    assert tracker.mark_processed(seqs[2]) == []
    assert tracker.mark_processed(seqs[1]) == []
    assert tracker.mark_processed(seqs[0]) == infos[:3]
    assert tracker.in_flight == 1
    tracker.commit(2)
    assert tracker.messages.keys() == {3}
    assert tracker.mark_processed(seqs[3]) == infos[3:]


def test_sequence_tracker_refuses_to_commit_past_the_prefix() -> None:
    tracker = SequenceTracker()
    tracker.assign(MessageInfo(P0, 0, 0))
    try:
        tracker.commit(0)
    except ValueError as error:
        assert "committable" in str(error)
    else:
        raise AssertionError("commit past the prefix was accepted")

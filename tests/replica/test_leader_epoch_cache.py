"""LeaderEpochCache: assignment, truncation and Kafka's endOffsetFor, against a brute force."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache, ReplicaArgumentError

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def cache_of(*entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_assign_appends_newer_epochs_and_ignores_the_latest_again() -> None:
    cache = LeaderEpochCache()
    assert (cache.latest_epoch, cache.earliest_entry, cache.entries) == (None, None, ())
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)  # every later batch of the same epoch
    assert cache.assign(2, 7)
    assert cache.entries == ((0, 0), (2, 7))
    assert (cache.latest_epoch, cache.earliest_entry) == (2, (0, 0))


def test_assign_removes_entries_that_would_break_the_order() -> None:
    # The latest epoch again, but starting earlier: it replaces the entry.
    assert cache_of((0, 0), (2, 7), (2, 5)).entries == ((0, 0), (2, 5))
    # An older epoch: newer epochs go.
    assert cache_of((0, 0), (2, 7), (3, 9), (1, 8)).entries == ((0, 0), (1, 8))
    # A newer epoch starting before the latest start: entries starting at or after it go.
    assert cache_of((0, 0), (2, 7), (3, 7)).entries == ((0, 0), (3, 7))
    assert cache_of((0, 0), (2, 7), (4, 3)).entries == ((0, 0), (4, 3))


def test_assign_rejects_negative_values() -> None:
    with pytest.raises(ReplicaArgumentError, match="epoch >= 0"):
        LeaderEpochCache().assign(-1, 0)
    with pytest.raises(ReplicaArgumentError, match="start offset >= 0"):
        LeaderEpochCache().assign(0, -3)


def test_truncate_from_end_and_clear() -> None:
    cache = cache_of((0, 0), (2, 7), (3, 9))
    cache.truncate_from_end(10)
    assert cache.entries == ((0, 0), (2, 7), (3, 9))
    cache.truncate_from_end(9)
    assert cache.entries == ((0, 0), (2, 7))
    cache.truncate_from_end(3)
    assert cache.entries == ((0, 0),)
    cache.clear()
    assert cache.entries == ()


def test_end_offset_for_follows_kafka() -> None:
    cache = cache_of((1, 0), (3, 5), (6, 9))
    leo = 12
    assert cache.end_offset_for(6, leo) == (6, 12)  # the latest epoch ends at the log end
    assert cache.end_offset_for(3, leo) == (3, 9)  # a known epoch ends where the next starts
    assert cache.end_offset_for(4, leo) == (3, 9)  # unknown: the largest epoch below it
    assert cache.end_offset_for(5, leo) == (3, 9)
    assert cache.end_offset_for(0, leo) == (0, 0)  # older than all: the first start offset
    assert cache.end_offset_for(7, leo) == UNDEFINED  # newer than all
    assert cache.end_offset_for(UNDEFINED_EPOCH, leo) == UNDEFINED
    assert LeaderEpochCache().end_offset_for(0, 0) == UNDEFINED


def _brute_end_offset_for(
    entries: list[tuple[int, int]], requested: int, leo: int
) -> tuple[int, int]:
    if requested == UNDEFINED_EPOCH or not entries:
        return UNDEFINED
    if entries[-1][0] == requested:
        return requested, leo
    later = [start for epoch, start in entries if epoch > requested]
    if not later:
        return UNDEFINED
    earlier = [epoch for epoch, _ in entries if epoch <= requested]
    return (earlier[-1] if earlier else requested), later[0]


@settings(max_examples=100)
@given(
    operations=st.lists(
        st.one_of(
            st.tuples(st.just("assign"), st.integers(0, 8), st.integers(0, 30)),
            st.tuples(st.just("truncate"), st.integers(0, 30), st.just(0)),
        ),
        max_size=25,
    ),
    requested=st.integers(-1, 9),
)
def test_entries_stay_ordered_and_lookups_match_a_brute_force(
    operations: list[tuple[str, int, int]], requested: int
) -> None:
    cache = LeaderEpochCache()
    for name, a, b in operations:
        if name == "assign":
            cache.assign(a, b)
            assert (a, b) in cache.entries or (
                cache.latest_epoch == a and cache.entries[-1][1] <= b
            )
        else:
            cache.truncate_from_end(a)
            assert all(start < a for _, start in cache.entries)
        entries = list(cache.entries)
        assert entries == sorted(set(entries))
        assert [s for _, s in entries] == sorted({s for _, s in entries})
    leo = 31
    assert cache.end_offset_for(requested, leo) == _brute_end_offset_for(
        list(cache.entries), requested, leo
    )

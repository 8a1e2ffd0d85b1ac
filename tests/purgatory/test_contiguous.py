"""contiguous_end: the end of the contiguous run of finished positions."""

from hypothesis import given
from hypothesis import strategies as st

from purgatory.contiguous import contiguous_end


def test_stops_before_the_first_gap() -> None:
    assert contiguous_end({0, 1, 2, 4}, -1, 10) == 2


def test_stays_put_when_the_next_position_is_not_done() -> None:
    assert contiguous_end({5, 6}, 3, 10) == 3


def test_never_passes_the_high_watermark() -> None:
    assert contiguous_end(range(100), -1, 7) == 7


@given(st.sets(st.integers(0, 30)), st.integers(-1, 30), st.integers(-1, 30))
def test_is_the_longest_done_prefix(done: set[int], last: int, high: int) -> None:
    end = contiguous_end(done, last, high)
    assert last <= end <= max(last, high)
    assert all(s in done for s in range(last + 1, end + 1))
    assert end == max(last, high) or end + 1 not in done

"""Gap detection: where a contiguous run of finished positions ends.

Anything that hands out numbered items and may only commit a contiguous prefix of finished
ones (acknowledged offsets, processed sequence numbers, settled log entries) needs the same
question answered: starting after the last committed position, how far does the run of
finished positions go before the first gap? One function, no state, no Kafka.
"""

from __future__ import annotations

from collections.abc import Container

__all__ = ["contiguous_end"]


def contiguous_end(done: Container[int], last_committed: int, high_watermark: int) -> int:
    """Highest ``s <= high_watermark`` such that every position in ``(last_committed, s]`` is
    in ``done``; ``last_committed`` itself when ``last_committed + 1`` is not done.

    The result is never below ``last_committed`` and never above
    ``max(last_committed, high_watermark)``. The walk costs one membership test per position
    it passes, plus one for the gap.
    """
    end = last_committed
    while end < high_watermark and end + 1 in done:
        end += 1
    return end

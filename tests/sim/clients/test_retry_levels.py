"""Sarama's retry levels, the pure part of its order-keeping scheme."""

from __future__ import annotations

import pytest

from sim.clients.retry_levels import RetryLevels, Route


def test_normal_operation_passes_everything() -> None:
    levels: RetryLevels[str] = RetryLevels(3)
    assert levels.dispatch("a", 0, False) == (Route.SEND, ["a"])
    assert levels.idle


def test_one_retry_round_holds_new_messages_until_the_chaser_returns() -> None:
    levels: RetryLevels[str] = RetryLevels(3)
    assert levels.dispatch("r1", 1, False) == (Route.NEW_LEVEL, ["r1"])
    assert levels.high_watermark == 1
    assert levels.dispatch("new1", 0, False) == (Route.HELD, [])  # buffered at level 0
    assert levels.dispatch("r2", 1, False) == (Route.SEND, ["r2"])  # same level: through
    assert levels.dispatch("new2", 0, False) == (Route.HELD, [])
    # The chaser sent at level 0 comes back retried, at level 1: flush level 0 in order.
    assert levels.dispatch("chaser", 1, True) == (Route.SEND, ["new1", "new2"])
    assert levels.idle


def test_nested_levels_flush_down_to_a_level_still_expecting_its_chaser() -> None:
    levels: RetryLevels[str] = RetryLevels(3)
    levels.dispatch("a", 1, False)  # hwm 1, expecting chaser 1
    levels.dispatch("n0", 0, False)  # held at 0
    assert levels.dispatch("b", 2, False) == (Route.NEW_LEVEL, ["b"])  # hwm 2
    levels.dispatch("a2", 1, False)  # held at 1
    # Chaser of level 2 returns: level 1 flushes, but level 1's own chaser is still out.
    assert levels.dispatch("c2", 2, True) == (Route.SEND, ["a2"])
    assert levels.high_watermark == 1
    assert levels.dispatch("c1", 1, True) == (Route.SEND, ["n0"])
    assert levels.idle


def test_a_lower_chaser_only_clears_its_flag() -> None:
    levels: RetryLevels[str] = RetryLevels(3)
    levels.dispatch("a", 1, False)
    levels.dispatch("b", 2, False)
    assert levels.dispatch("c1", 1, True) == (Route.HELD, [])  # level 1's chaser came back
    # Level 2's chaser now flushes all the way down: nothing else is expected.
    assert levels.dispatch("c2", 2, True) == (Route.SEND, [])
    assert levels.idle


def test_stray_chasers_are_ignored_and_bad_levels_raise() -> None:
    levels: RetryLevels[str] = RetryLevels(2)
    assert levels.dispatch("c", 0, True) == (Route.HELD, [])
    assert levels.dispatch("c", 2, True) == (Route.HELD, [])
    with pytest.raises(ValueError, match="retry level"):
        levels.dispatch("x", 3, False)

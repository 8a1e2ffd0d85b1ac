"""Erlang C, Student's t and confidence intervals against known values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.core.queueing import (
    QueueingModelError,
    erlang_b,
    erlang_c,
    mmc_mean_wait,
    mmc_mean_wait_in_system,
)
from sim.core.statistics import IntervalError, mean_confidence_interval, student_t_cdf, t_quantile


def erlang_c_textbook(c: int, a: float) -> float:
    """validation.md's factorial formula, computed independently."""
    rho = a / c
    top = a**c / math.factorial(c) / (1 - rho)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


@pytest.mark.parametrize(
    ("c", "a", "expected"),
    [
        (1, 0.5, 0.5),  # M/M/1: P(wait) = rho
        (2, 1.0, 1 / 3),
        (10, 8.0, 0.40918),  # the classic call-centre table value
        (4, 2.8, 0.42865),
    ],
)
def test_erlang_c_known_values(c: int, a: float, expected: float) -> None:
    assert erlang_c(c, a) == pytest.approx(expected, abs=5e-5)


@given(c=st.integers(1, 60), rho=st.floats(0.01, 0.99))
def test_erlang_c_matches_the_factorial_formula(c: int, rho: float) -> None:
    assert erlang_c(c, rho * c) == pytest.approx(erlang_c_textbook(c, rho * c), rel=1e-9)


def test_erlang_b_known_value() -> None:
    assert erlang_b(2, 1.0) == pytest.approx(0.2)


def test_mmc_wait_m_m_1() -> None:
    # M/M/1: Wq = rho / (mu - lam)
    assert mmc_mean_wait(1, 5.0, 10.0) == pytest.approx(0.5 / 5.0)
    assert mmc_mean_wait_in_system(1, 5.0, 10.0) == pytest.approx(1 / 5.0)


def test_unstable_or_bad_arguments_raise() -> None:
    with pytest.raises(QueueingModelError, match="stable"):
        erlang_c(2, 2.0)
    with pytest.raises(QueueingModelError, match="servers"):
        erlang_c(0, 0.5)
    with pytest.raises(IntervalError, match="at least 2"):
        mean_confidence_interval([1.0])


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [(0.975, 1, 12.7062), (0.975, 9, 2.2622), (0.995, 9, 3.2498), (0.975, 30, 2.0423)],
)
def test_t_quantiles_match_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-4)
    assert student_t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, abs=1e-4)


def test_confidence_interval() -> None:
    ci = mean_confidence_interval([1.0, 2.0, 3.0, 4.0], 0.95)
    # mean 2.5, s = 1.29099, t(0.975, 3) = 3.18245
    assert ci.mean == 2.5
    assert ci.half_width == pytest.approx(3.18245 * 1.290994 / 2, rel=1e-5)
    assert ci.contains(2.5) and not ci.contains(10.0)

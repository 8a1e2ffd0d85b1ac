"""Confidence intervals from independent replications (Student's t).

A simulation estimate is reported as the mean over ``n`` independent replications plus or
minus ``t(1 - alpha/2, n - 1) * s / sqrt(n)``. The t quantile is computed exactly (to 1e-10)
by bisection on the t distribution's CDF, which is expressed through the regularized
incomplete beta function (continued fraction, modified Lentz), so no SciPy is needed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import attrs

__all__ = [
    "ConfidenceInterval",
    "IntervalError",
    "mean_confidence_interval",
    "student_t_cdf",
    "t_quantile",
]


class IntervalError(ValueError):
    """A confidence interval or t quantile was asked for with arguments outside their domain
    (fewer than two samples, a level or probability outside (0, 1), degrees of freedom < 1)."""


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def student_t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise IntervalError(f"degrees of freedom must be an int >= 1, got {df!r}")
    tail = 0.5 * _regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (0 < p < 1)."""
    if not 0.0 < p < 1.0:
        raise IntervalError(f"quantile probability must be in (0, 1), got {p!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while student_t_cdf(hi, df) < p:
        hi *= 2.0
    while hi - lo > 1e-10 * max(1.0, hi):
        mid = (lo + hi) / 2.0
        if student_t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@attrs.frozen
class ConfidenceInterval:
    """``mean`` plus or minus ``half_width`` at confidence ``level`` over ``n`` samples."""

    mean: float
    half_width: float
    level: float
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def contains(self, value: float) -> bool:
        """True if ``low <= value <= high``."""
        return self.low <= value <= self.high


def mean_confidence_interval(samples: Sequence[float], level: float = 0.95) -> ConfidenceInterval:
    """Student-t interval for the mean of independent, identically distributed ``samples``.

    Raises IntervalError with fewer than two samples or ``level`` outside (0, 1).
    """
    if len(samples) < 2:
        raise IntervalError(f"need at least 2 samples for an interval, got {len(samples)}")
    if not 0.0 < level < 1.0:
        raise IntervalError(f"confidence level must be in (0, 1), got {level!r}")
    n = len(samples)
    mean = statistics.fmean(samples)
    half = t_quantile(0.5 + level / 2.0, n - 1) * statistics.stdev(samples) / math.sqrt(n)
    return ConfidenceInterval(mean, half, level, n)

"""The simulator agrees with its recorded reference results (see :mod:`.cases`).

For every case and statistic, the difference between today's mean over the seeds and the
reference's must lie within a Welch t confidence interval of the difference of two means.
With 66 comparisons, a 95% interval each would fail about three by chance under a redesign
that changes nothing but the order of random draws, so the level is Bonferroni-corrected:
95% for the whole family. A statistic that is empty (None) must be empty in both.

Slow (60 runs of 20 simulated seconds: ~15 CPU-minutes today): ``pytest -m slow
tests/sim/reference``. It is deselected by default and not in CI while the simulator is
byte-identical to the reference anyway (``tests/sim/golden`` holds that); it is the guard for
a redesign that changes random draws.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from sim.core.statistics import t_quantile
from tests.sim.reference.cases import CASES, SEEDS, STATS, statistics_of

REFERENCE = json.loads((Path(__file__).parent / "reference.json").read_text(encoding="utf-8"))
FAMILY_LEVEL = 0.95
_COMPARISONS = len(CASES) * len(STATS)


def within_interval(reference: list[float], today: list[float], comparisons: int) -> bool:
    """Whether the two samples' means agree: |difference| <= Welch's t half-width at a
    Bonferroni-corrected level (exact equality when both samples have no spread)."""
    n, m = len(reference), len(today)
    var_a, var_b = statistics.variance(reference) / n, statistics.variance(today) / m
    difference = abs(statistics.fmean(reference) - statistics.fmean(today))
    if var_a + var_b == 0.0:
        return difference == 0.0
    df = (var_a + var_b) ** 2 / (var_a**2 / (n - 1) + var_b**2 / (m - 1))
    alpha = (1.0 - FAMILY_LEVEL) / comparisons
    return difference <= t_quantile(1.0 - alpha / 2, max(1, math.floor(df))) * math.sqrt(
        var_a + var_b
    )


def test_the_reference_covers_every_case_and_statistic() -> None:
    assert REFERENCE["seeds"] == list(SEEDS)
    assert sorted(REFERENCE["cases"]) == sorted(CASES)
    for name, case in REFERENCE["cases"].items():
        assert case["overrides"] == list(CASES[name])
        assert sorted(case["stats"]) == sorted(STATS)


def test_the_interval_check() -> None:
    assert within_interval([1.0, 2.0, 3.0], [1.5, 2.5, 2.0], 1)
    assert not within_interval([1.0, 1.1, 0.9], [5.0, 5.1, 4.9], 1)
    assert within_interval([2.0, 2.0], [2.0, 2.0], 1)
    assert not within_interval([2.0, 2.0], [2.5, 2.5], 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_statistics_agree_with_the_reference(name: str) -> None:
    runs = [statistics_of(name, seed) for seed in SEEDS]
    disagreements = []
    for path in STATS:
        reference = REFERENCE["cases"][name]["stats"][path]
        today = [run[path] for run in runs]
        if None in reference or None in today:
            if reference != today:
                disagreements.append(f"{path}: empty in one of them ({reference} vs {today})")
            continue
        if not within_interval(reference, today, _COMPARISONS):  # type: ignore[arg-type]
            disagreements.append(
                f"{path}: mean {statistics.fmean(today):.3f} vs reference "  # type: ignore[arg-type]
                f"{statistics.fmean(reference):.3f}"
            )
    assert disagreements == []

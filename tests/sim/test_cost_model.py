"""``sim.bench.cost_model``: the least-squares fit on data whose answer is known."""

from __future__ import annotations

import random

import pytest

from sim.bench.cost_model import fit, requests_per_message


def test_fit_recovers_the_coefficients_of_exact_data() -> None:
    rows = [
        {"messages": m, "requests": r, "runs": 1, "cpu_s": 60e-6 * m + 240e-6 * r + 0.5}
        for m, r in [(2000, 800), (5000, 900), (10000, 4000), (20000, 3000), (40000, 12000)]
    ]
    model = fit(rows, ("messages", "requests", "runs"), "cpu_s")
    assert model.coefficients["messages"] == pytest.approx(60e-6)
    assert model.coefficients["requests"] == pytest.approx(240e-6)
    assert model.coefficients["runs"] == pytest.approx(0.5)
    assert model.r_squared == pytest.approx(1.0)


def test_noise_lowers_r_squared_and_the_fit_stays_close() -> None:
    rng = random.Random(5)
    rows = []
    for _ in range(40):
        m, r = rng.randrange(1000, 50000), rng.randrange(100, 10000)
        rows.append({"m": m, "r": r, "y": 2.0 * m + 9.0 * r + rng.gauss(0, 5000)})
    model = fit(rows, ("m", "r"), "y")
    assert model.coefficients["m"] == pytest.approx(2.0, rel=0.05)
    assert model.coefficients["r"] == pytest.approx(9.0, rel=0.05)
    assert 0.9 < model.r_squared < 1.0


def test_a_term_that_explains_nothing_gives_r_squared_near_zero() -> None:
    rows = [{"x": 1.0, "y": y} for y in (1.0, 3.0, 1.0, 3.0)]  # the mean only
    assert fit(rows, ("x",), "y").r_squared == pytest.approx(0.0)


def test_fit_refuses_too_few_rows_and_missing_columns() -> None:
    with pytest.raises(ValueError, match=r"need at least 2 rows to fit \['a', 'b'\], got 1"):
        fit([{"a": 1, "b": 2, "y": 3}], ("a", "b"), "y")
    with pytest.raises(ValueError, match=r"row 1 lacks \['b'\]"):
        fit([{"a": 1, "b": 2, "y": 3}, {"a": 1, "y": 3}], ("a", "b"), "y")


def test_requests_per_message_by_kind() -> None:
    row = {"messages": 1000, "requests": 300, "requests.Produce": 100, "requests.Fetch": 200}
    assert requests_per_message(row) == {"Produce": 0.1, "Fetch": 0.2}

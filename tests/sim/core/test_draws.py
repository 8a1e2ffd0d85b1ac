"""The simulator's draws give exactly the standard library's values, draw for draw, from the
same generator state (so moving to them changed no run's outputs)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.core.distributions import Constant, Exponential, Lognormal, Uniform
from sim.core.draws import below, exponential, normal, round_half_even

seeds = st.integers(0, 2**64)


def twins(seed: int) -> tuple[random.Random, random.Random]:
    return random.Random(seed), random.Random(seed)


@given(seeds, st.floats(1e-6, 1e6))
def test_exponential_is_expovariate(seed: int, rate: float) -> None:
    ours, theirs = twins(seed)
    assert [exponential(ours, rate) for _ in range(50)] == [
        theirs.expovariate(rate) for _ in range(50)
    ]


@given(seeds, st.floats(-1e6, 1e6), st.floats(0, 10))
def test_normal_is_normalvariate(seed: int, mu: float, sigma: float) -> None:
    ours, theirs = twins(seed)
    assert [normal(ours, mu, sigma) for _ in range(50)] == [
        theirs.normalvariate(mu, sigma) for _ in range(50)
    ]


@given(seeds, st.integers(1, 2**70))
def test_below_is_randrange(seed: int, n: int) -> None:
    ours, theirs = twins(seed)
    assert [below(ours, n) for _ in range(50)] == [theirs.randrange(n) for _ in range(50)]


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_round_half_even_is_round(x: float) -> None:
    assert round_half_even(x) == round(x)


@pytest.mark.parametrize(
    "x",
    [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.49999999999999994, 2.0**52 + 1,
     -(2.0**52) - 1, 2.0**53, 1e300, -1e-300, 0.0, -0.0],
)  # fmt: skip
def test_round_half_even_rounds_ties_and_edges_as_round_does(x: float) -> None:
    assert round_half_even(x) == round(x)


@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf])
def test_round_half_even_refuses_what_round_refuses(x: float) -> None:
    with pytest.raises((ValueError, OverflowError)) as ours:
        round_half_even(x)
    with pytest.raises((ValueError, OverflowError)) as theirs:
        round(x)
    assert ours.type is theirs.type


def test_below_refuses_an_empty_range() -> None:
    with pytest.raises(ValueError, match="n >= 1"):
        below(random.Random(1), 0)


@given(seeds, st.integers(1, 10**7), st.floats(0, 10), st.integers(0, 10**6))
def test_samplers_draw_what_the_standard_library_would(
    seed: int, scale: int, sigma: float, width: int
) -> None:
    cases = [
        (Exponential(mean=scale), lambda rng: round(rng.expovariate(1.0 / scale))),
        (
            Lognormal(median=scale, sigma=sigma),
            lambda rng: round(rng.lognormvariate(math.log(scale), sigma)),
        ),
        (Uniform(low=scale, high=scale + width), lambda rng: rng.randint(scale, scale + width)),
        (Constant(value=scale), lambda rng: scale),
    ]
    for distribution, reference in cases:
        ours, theirs = twins(seed)
        sampler = distribution.sampler(ours)
        assert [sampler.draw() for _ in range(30)] == [reference(theirs) for _ in range(30)]
        ours, theirs = twins(seed)
        assert distribution.sample(ours) == reference(theirs)

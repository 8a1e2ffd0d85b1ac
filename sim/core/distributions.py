"""Random quantities: latency, service-time and size distributions, as integers.

Each distribution is an attrs class tagged by its ``distribution`` field, so a scenario
writes e.g. ``{ distribution = "lognormal", median = "250us", sigma = 0.5 }``. ``sample(rng)``
draws one value from the given :class:`random.Random` and rounds it to whole microseconds
(never negative); ``sampler(rng)`` binds the distribution to a generator for repeated draws
(:mod:`sim.core.draws`: the same values, one native call each in the compiled build);
``quantile(p)`` is the value a fraction ``p`` of the draws stay at or below
(before rounding), which is how the scenario's size limits judge a distribution's tail.
Values are microseconds, unless the field holding the distribution has another unit (a
``unit="bytes"`` field makes them bytes: ``value = "1KiB"``).
"""

from __future__ import annotations

import math
import random
from statistics import NormalDist
from typing import Final, Literal

import attrs

from replica.config_def import at_least, between, doc
from sim.core.draws import (
    ConstantSampler,
    ExponentialSampler,
    LognormalSampler,
    Sampler,
    UniformSampler,
)

__all__ = ["MAX_SIGMA", "Constant", "Distribution", "Exponential", "Lognormal", "Uniform"]

MAX_SIGMA: Final = 10
"""The largest ``sigma`` of a :class:`Lognormal` (see there why)."""


@attrs.frozen(kw_only=True)
class Constant:
    """Always ``value``."""

    distribution: Literal["constant"] = "constant"
    value: int = attrs.field(
        validator=at_least(0), metadata=doc("the latency", unit="us", inherit_unit=True)
    )

    @property
    def mean(self) -> float:
        return float(self.value)

    def quantile(self, p: float) -> float:
        return float(self.value)

    def sampler(self, rng: random.Random) -> Sampler:
        return ConstantSampler(self.value)

    def sample(self, rng: random.Random) -> int:
        return self.value


@attrs.frozen(kw_only=True)
class Uniform:
    """Uniform on the integers ``low..high`` (inclusive)."""

    distribution: Literal["uniform"] = "uniform"
    low: int = attrs.field(
        validator=at_least(0), metadata=doc("smallest value", unit="us", inherit_unit=True)
    )
    high: int = attrs.field(
        validator=at_least(0), metadata=doc("largest value, >= low", unit="us", inherit_unit=True)
    )

    def __attrs_post_init__(self) -> None:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}us) must be >= low ({self.low}us)")

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    def quantile(self, p: float) -> float:
        return self.low + p * (self.high - self.low)

    def sampler(self, rng: random.Random) -> Sampler:
        return UniformSampler(rng, self.low, self.high)

    def sample(self, rng: random.Random) -> int:
        return self.sampler(rng).draw()


@attrs.frozen(kw_only=True)
class Exponential:
    """Exponential with mean ``mean`` (memoryless; Poisson arrivals, M/M/c service)."""

    distribution: Literal["exponential"] = "exponential"
    mean: int = attrs.field(
        validator=at_least(1), metadata=doc("mean (us)", unit="us", inherit_unit=True)
    )

    def quantile(self, p: float) -> float:
        return -self.mean * math.log1p(-p)

    def sampler(self, rng: random.Random) -> Sampler:
        return ExponentialSampler(rng, self.mean)

    def sample(self, rng: random.Random) -> int:
        return self.sampler(rng).draw()


@attrs.frozen(kw_only=True)
class Lognormal:
    """Log-normal with median ``median`` and shape ``sigma`` (of the underlying normal).

    Kafka's purgatory benchmark uses the same family: mu = ln(median),
    sigma = (ln(p75) - mu) / 0.674490. ``sigma`` is at most :data:`MAX_SIGMA`: at 10 the
    draws already span e^(+-60) around the median over a billion samples, and beyond about
    100 a single draw overflows a float.
    """

    distribution: Literal["lognormal"] = "lognormal"
    median: int = attrs.field(
        validator=at_least(1), metadata=doc("median (us)", unit="us", inherit_unit=True)
    )
    sigma: float = attrs.field(
        default=0.5,
        validator=between(0, MAX_SIGMA),
        metadata=doc(f"standard deviation of ln(value), 0 to {MAX_SIGMA}"),
    )

    @property
    def mean(self) -> float:
        return self.median * math.exp(self.sigma**2 / 2)

    def quantile(self, p: float) -> float:
        return self.median * math.exp(self.sigma * NormalDist().inv_cdf(p))

    def sampler(self, rng: random.Random) -> Sampler:
        return LognormalSampler(rng, self.median, self.sigma)

    def sample(self, rng: random.Random) -> int:
        return self.sampler(rng).draw()


Distribution = Constant | Uniform | Exponential | Lognormal
"""Any of the distributions; scenarios pick one with the ``distribution`` key."""

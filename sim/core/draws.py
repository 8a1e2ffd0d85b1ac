"""Random draws without the standard library's Python frames, value for value the same.

The simulator draws about five random numbers per message: arrival gaps, partitions,
network latencies, handler local times, processing times. Through :mod:`random`'s methods
(``expovariate``, ``lognormvariate``, ``randrange``) each draw is several interpreted calls,
in the compiled build too, where they were a tenth of a run. The functions here do the same
arithmetic on the same calls into the generator's C core (``Random.random`` and
``Random.getrandbits``), in the same order, so each returns exactly what the standard library
(CPython 3.11) returns from the same generator state: a run's outputs did not change when
the simulator moved to them (``tests/sim/core/test_draws.py`` compares them draw for draw).
A run's results now depend on the Mersenne Twister alone, not on the standard library's
algorithms on top of it.

:class:`Sampler` is a distribution bound to its generator (``Distribution.sampler(rng)``):
``draw()`` is one call, native in the compiled build. A sampler holds the generator's bound
``random``/``getrandbits`` (no method lookup per draw) and rounds with
:func:`round_half_even` (``round`` on a float, without the builtin's lookup and boxing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from random import Random
from typing import Final

from mypy_extensions import mypyc_attr

__all__ = [
    "ConstantSampler",
    "ExponentialSampler",
    "LognormalSampler",
    "Sampler",
    "UniformSampler",
    "below",
    "below_with",
    "exponential",
    "exponential_with",
    "normal",
    "normal_with",
    "round_half_even",
]

_NV_MAGICCONST: Final = 4 * math.exp(-0.5) / math.sqrt(2.0)
"""Kinderman and Monahan's constant, as ``random`` computes it."""


def exponential(rng: Random, rate: float) -> float:
    """``rng.expovariate(rate)``: an exponential draw with mean ``1 / rate``."""
    return exponential_with(rng.random, rate)


def normal(rng: Random, mu: float, sigma: float) -> float:
    """``rng.normalvariate(mu, sigma)`` (Kinderman and Monahan's ratio of uniforms)."""
    return normal_with(rng.random, mu, sigma)


def below(rng: Random, n: int) -> int:
    """``rng.randrange(n)``: uniform on ``0 .. n - 1``; ``n`` must be >= 1."""
    return below_with(rng.getrandbits, n)


def round_half_even(x: float) -> int:
    """``round(x)`` for a finite float: the nearest integer, halfway cases to the even one.

    Raises ValueError for NaN and OverflowError for an infinity, as ``round`` does.
    ``x - floor(x)`` is exact for every finite double, so the tie test is exact too.
    """
    n = math.floor(x)
    rest = x - n
    if rest > 0.5 or (rest == 0.5 and n & 1):
        return n + 1
    return n


def exponential_with(random: Callable[[], float], rate: float) -> float:
    """:func:`exponential` with the generator's bound ``random``."""
    return -math.log(1.0 - random()) / rate


def normal_with(random: Callable[[], float], mu: float, sigma: float) -> float:
    """:func:`normal` with the generator's bound ``random``."""
    while True:
        u1 = random()
        u2 = 1.0 - random()
        z = _NV_MAGICCONST * (u1 - 0.5) / u2
        if z * z / 4.0 <= -math.log(u2):
            return mu + z * sigma


def below_with(getrandbits: Callable[[int], int], n: int) -> int:
    """:func:`below` with the generator's bound ``getrandbits`` (a caller drawing many times
    looks the method up once)."""
    if n < 1:
        raise ValueError(f"below needs n >= 1, got {n}")
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


@mypyc_attr(allow_interpreted_subclasses=True)  # a scripted workload subclasses it (tests)
class Sampler:
    """Integer draws from one distribution with one generator (see the subclasses). A
    distribution of one's own provides ``sampler(rng)`` returning a subclass."""

    def draw(self) -> int:
        """The next draw."""
        raise NotImplementedError


class ConstantSampler(Sampler):
    """Always ``value``; draws nothing from a generator."""

    def __init__(self, value: int) -> None:
        self.value = value

    def draw(self) -> int:
        return self.value


class UniformSampler(Sampler):
    """``rng.randint(low, high)``."""

    def __init__(self, rng: Random, low: int, high: int) -> None:
        self._getrandbits = rng.getrandbits
        self.low = low
        self.width = high - low + 1

    def draw(self) -> int:
        return self.low + below_with(self._getrandbits, self.width)


class ExponentialSampler(Sampler):
    """``round(rng.expovariate(1 / mean))``."""

    def __init__(self, rng: Random, mean: float) -> None:
        self._random = rng.random
        self.rate = 1.0 / mean

    def draw(self) -> int:
        return round_half_even(exponential_with(self._random, self.rate))


class LognormalSampler(Sampler):
    """``round(rng.lognormvariate(ln(median), sigma))``."""

    def __init__(self, rng: Random, median: float, sigma: float) -> None:
        self._random = rng.random
        self.mu = math.log(median)
        self.sigma = sigma

    def draw(self) -> int:
        return round_half_even(math.exp(normal_with(self._random, self.mu, self.sigma)))

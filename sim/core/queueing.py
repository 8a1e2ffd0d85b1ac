"""Closed-form M/M/c results the Burrow worker pool is validated against.

An M/M/c queue has Poisson arrivals at rate ``lam``, ``c`` servers each serving at rate ``mu``
(exponential service) and offered load ``a = lam / mu``; it is stable when the utilisation
``rho = a / c < 1``. Erlang C, the probability that an arrival has to wait, is computed with
the numerically stable Erlang B recursion ``B(0) = 1``, ``B(k) = a B(k-1) / (k + a B(k-1))``
and ``C = B(c) / (1 - rho (1 - B(c)))``, which equals the textbook factorial formula without
overflowing for large ``c``.
"""

from __future__ import annotations

import math

__all__ = ["QueueingModelError", "erlang_b", "erlang_c", "mmc_mean_wait", "mmc_mean_wait_in_system"]


class QueueingModelError(ValueError):
    """An M/M/c queue was described with parameters outside the model: no servers, a rate that
    is not a finite positive number, or an offered load that makes the queue unstable."""


def _check_servers(c: int) -> None:
    if isinstance(c, bool) or not isinstance(c, int) or c < 1:
        raise QueueingModelError(f"number of servers must be an int >= 1, got {c!r}")


def _check_positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise QueueingModelError(f"{name} must be a finite number > 0, got {value!r}")


def erlang_b(c: int, a: float) -> float:
    """Blocking probability of an M/M/c/c loss system with offered load ``a`` (Erlang B)."""
    _check_servers(c)
    _check_positive("offered load a", a)
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(c: int, a: float) -> float:
    """Probability of waiting in an M/M/c queue with offered load ``a = lam / mu`` (Erlang C).

    Raises QueueingModelError unless ``c >= 1`` and ``0 < a < c`` (a stable queue).
    """
    _check_servers(c)
    _check_positive("offered load a", a)
    if a >= c:
        raise QueueingModelError(f"offered load a must be < c for a stable queue, got a={a} c={c}")
    b = erlang_b(c, a)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


def mmc_mean_wait(c: int, arrival_rate: float, service_rate: float) -> float:
    """Mean wait in queue ``Wq = C(c, a) / (c mu - lam)`` (in the rates' time unit)."""
    _check_positive("arrival_rate", arrival_rate)
    _check_positive("service_rate", service_rate)
    a = arrival_rate / service_rate
    return erlang_c(c, a) / (c * service_rate - arrival_rate)


def mmc_mean_wait_in_system(c: int, arrival_rate: float, service_rate: float) -> float:
    """Mean time in system ``W = Wq + 1 / mu``."""
    return mmc_mean_wait(c, arrival_rate, service_rate) + 1.0 / service_rate

"""Where messages come from: an arrival process driving a producer.

:func:`arrival_times` gives integer-microsecond times of a Poisson process (exponential gaps)
or of a constant-rate one, one by one or a chunk at a time (:meth:`ArrivalTimes.take`). Times
accumulate in floating point and are rounded one by one, so the long-run rate is exact even
when the mean gap is a few microseconds.
:class:`WorkloadDriver` produces messages at those times with sizes drawn from a
distribution and keys drawn uniformly from ``key_space`` distinct keys (``key_space = 0``:
no key, so the hash partitioner picks a random partition). It does not schedule an event per
message: it is the producer's arrival source (``Producer.attach``), handing it the arrivals
as columns, :data:`CHUNK` at a time, whenever the producer plans further ahead; the producer
sends each at its time, as ``Producer.send`` would.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Final, Protocol

from sim.clients.errors import ClientConfigError
from sim.clients.producer import ArrivalSource
from sim.clients.workload_config import (
    MIN_RATE,
    RATE_RULE,
    ArrivalKind,
    ProducerWorkload,
    valid_rate,
)
from sim.core.draws import ConstantSampler, below, exponential_with, round_half_even
from sim.core.engine import Scheduler

__all__ = [
    "CHUNK",
    "MIN_RATE",
    "ArrivalKind",
    "ArrivalTarget",
    "ArrivalTimes",
    "ProducerWorkload",
    "WorkloadDriver",
    "arrival_times",
]

CHUNK: Final = 64
"""Arrivals drawn per request of the producer (the draws are the same whatever the chunk)."""


def arrival_times(
    kind: ArrivalKind, rate_per_s: float, rng: random.Random, start_us: int = 0
) -> Iterator[int]:
    """Arrival times (us, non-decreasing, after ``start_us``) at ``rate_per_s`` on average,
    endlessly.

    Raises ClientConfigError for an unknown kind or a rate that is not a finite number >=
    :data:`MIN_RATE`.
    """
    return iter(ArrivalTimes(kind, rate_per_s, rng, start_us).next, None)  # never None: endless


class ArrivalTimes:
    """The times of one arrival process (see :func:`arrival_times`), one at a time
    (:meth:`next`) or a chunk at a time (:meth:`take`), with the same draws either way."""

    __slots__ = ("_gap", "_poisson", "_random", "_rate", "_t")

    def __init__(
        self, kind: ArrivalKind, rate_per_s: float, rng: random.Random, start_us: int
    ) -> None:
        if kind not in ("poisson", "constant"):
            raise ClientConfigError(f"arrivals must be 'poisson' or 'constant', got {kind!r}")
        if not valid_rate(rate_per_s):
            raise ClientConfigError(f"rate must be {RATE_RULE}, got {rate_per_s!r}")
        self._gap = 1_000_000.0 / rate_per_s
        self._rate = 1.0 / self._gap
        self._poisson = kind == "poisson"
        self._random = rng.random
        self._t = float(start_us)

    def next(self) -> int:
        """The next time."""
        self._t += exponential_with(self._random, self._rate) if self._poisson else self._gap
        return round_half_even(self._t)

    def take(self, n: int) -> list[int]:
        """The next ``n`` times."""
        return [self.next() for _ in range(n)]


class ArrivalTarget(Protocol):
    """What a :class:`WorkloadDriver` drives: a ``sim.clients.producer.Producer``, or anything
    else that takes an arrival source (a test's recorder of the chunks)."""

    def attach(self, source: ArrivalSource) -> None:
        """Take arrivals from ``source`` from now on."""

    def detach(self) -> None:
        """Take no more arrivals."""


class WorkloadDriver:
    """Sends ``workload``'s messages through ``producer`` until stopped or the count is met."""

    def __init__(
        self,
        scheduler: Scheduler,
        producer: ArrivalTarget,
        workload: ProducerWorkload,
        *,
        rng: random.Random,
    ) -> None:
        self._scheduler = scheduler
        self._producer = producer
        self._workload = workload
        self._rng = rng
        self._sizes = workload.message_size.sampler(rng)
        self._times: ArrivalTimes | None = None
        self.sent = 0
        """Messages handed to the producer so far (the latest may arrive in the future)."""

    def start(self, at: int | None = None) -> None:
        """Begin sending; the first message follows ``at`` (default: now) by one gap."""
        start = self._scheduler.now if at is None else at
        self._times = ArrivalTimes(self._workload.arrivals, self._workload.rate, self._rng, start)
        self._producer.attach(self._next_arrivals)

    def stop(self) -> None:
        """Send nothing more (messages that arrived by now are sent)."""
        if self._times is not None:
            self._times = None
            self._producer.detach()

    def _next_arrivals(self) -> tuple[str, list[int], list[bytes | None], list[int]] | None:
        workload = self._workload
        n = CHUNK
        if workload.message_count is not None:
            n = min(n, workload.message_count - self.sent)
        times = self._times
        if times is None or n <= 0:
            return None
        self.sent += n
        key_space = workload.key_space
        sizes = self._sizes
        if not key_space and isinstance(sizes, ConstantSampler):
            # Neither keys nor sizes draw: the times can be drawn at once.
            return workload.topic, times.take(n), [None] * n, [sizes.value] * n
        # Each arrival draws its time, then its key, then its size, in that order.
        rng = self._rng
        arrival_times: list[int] = []
        keys: list[bytes | None] = []
        value_sizes: list[int] = []
        for _ in range(n):
            arrival_times.append(times.next())
            keys.append(b"key-%d" % below(rng, key_space) if key_space else None)
            value_sizes.append(sizes.draw())
        return workload.topic, arrival_times, keys, value_sizes

"""Where messages come from: an arrival process driving a producer.

:func:`arrival_times` yields integer-microsecond times of a Poisson process (exponential gaps)
or of a constant-rate one. Times accumulate in floating point and are rounded one by one, so
the long-run rate is exact even when the mean gap is a few microseconds.
:class:`WorkloadDriver` produces messages at those times with sizes drawn from a
distribution and keys drawn uniformly from ``key_space`` distinct keys (``key_space = 0``:
no key, so the hash partitioner picks a random partition). It does not schedule an event per
message: it is the producer's arrival source (``Producer.attach``), handing it the arrivals
as columns, :data:`CHUNK` at a time, whenever the producer plans further ahead; the producer
sends each at its time, as ``Producer.send`` would.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from typing import ClassVar, Literal

import attrs

from replica.config_def import FieldErrors, doc, int_at_least, one_of, require
from sim.clients.errors import ClientConfigError
from sim.clients.producer import Producer
from sim.core.distributions import Constant, Distribution
from sim.core.engine import Scheduler

__all__ = [
    "CHUNK",
    "MIN_RATE",
    "ArrivalKind",
    "ProducerWorkload",
    "WorkloadDriver",
    "arrival_times",
]

ArrivalKind = Literal["poisson", "constant"]

MIN_RATE = 1e-6
"""The lowest rate, messages per second (one message in 11.6 days): below about 1e-302 the
mean gap between arrivals is no longer a finite float."""

CHUNK = 64
"""Arrivals drawn per request of the producer (the draws are the same whatever the chunk)."""

_RATE_RULE = f"a finite number >= {MIN_RATE} (messages per second)"


def _valid_rate(rate: object) -> bool:
    """Whether ``rate`` is a usable arrival rate: a finite int or float >= :data:`MIN_RATE`."""
    return (
        isinstance(rate, int | float)
        and not isinstance(rate, bool)
        and math.isfinite(rate)
        and rate >= MIN_RATE
    )


def arrival_times(
    kind: ArrivalKind, rate_per_s: float, rng: random.Random, start_us: int = 0
) -> Iterator[int]:
    """Arrival times (us, non-decreasing, after ``start_us``) at ``rate_per_s`` on average.

    Raises ClientConfigError for an unknown kind or a rate that is not a finite number >=
    :data:`MIN_RATE`.
    """
    if kind not in ("poisson", "constant"):
        raise ClientConfigError(f"arrivals must be 'poisson' or 'constant', got {kind!r}")
    if not _valid_rate(rate_per_s):
        raise ClientConfigError(f"rate must be {_RATE_RULE}, got {rate_per_s!r}")
    mean_gap = 1_000_000.0 / rate_per_s
    t = float(start_us)
    poisson = kind == "poisson"
    while True:
        t += rng.expovariate(1.0 / mean_gap) if poisson else mean_gap
        yield round(t)


@attrs.frozen(kw_only=True)
class ProducerWorkload:
    """What one producer sends: to which topic, how often, how large, with which keys.

    Raises ClientConfigError naming the field when a value is out of range.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(ClientConfigError)

    topic: str = attrs.field(metadata=doc("topic to produce to"))
    rate: float = attrs.field(
        default=1000.0,
        validator=require(_RATE_RULE, _valid_rate),
        metadata=doc(f"messages per second (at least {MIN_RATE})"),
    )
    arrivals: ArrivalKind = attrs.field(
        default="poisson",
        validator=one_of(("poisson", "constant")),
        metadata=doc("'poisson' (exponential gaps) or 'constant' (fixed gaps)"),
    )
    message_size: Distribution = attrs.field(
        factory=lambda: Constant(value=1024), metadata=doc("record value size", unit="bytes")
    )
    key_space: int = attrs.field(
        default=0,
        validator=int_at_least(0),
        metadata=doc("distinct keys, drawn uniformly (0: messages have no key)"),
    )
    message_count: int | None = attrs.field(
        default=None, metadata=doc("stop after this many messages (none: run until stopped)")
    )


class WorkloadDriver:
    """Sends ``workload``'s messages through ``producer`` until stopped or the count is met."""

    def __init__(
        self,
        scheduler: Scheduler,
        producer: Producer,
        workload: ProducerWorkload,
        *,
        rng: random.Random,
    ) -> None:
        self._scheduler = scheduler
        self._producer = producer
        self._workload = workload
        self._rng = rng
        self._times: Iterator[int] | None = None
        self.sent = 0
        """Messages handed to the producer so far (the latest may arrive in the future)."""

    def start(self, at: int | None = None) -> None:
        """Begin sending; the first message follows ``at`` (default: now) by one gap."""
        start = self._scheduler.now if at is None else at
        self._times = arrival_times(self._workload.arrivals, self._workload.rate, self._rng, start)
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
        if self._times is None or n <= 0:
            return None
        times: list[int] = []
        keys: list[bytes | None] = []
        sizes: list[int] = []
        rng = self._rng
        key_space = workload.key_space
        sample = workload.message_size.sample
        for at in itertools.islice(self._times, n):
            times.append(at)
            keys.append(b"key-%d" % rng.randrange(key_space) if key_space else None)
            sizes.append(sample(rng))
        self.sent += n
        return workload.topic, times, keys, sizes

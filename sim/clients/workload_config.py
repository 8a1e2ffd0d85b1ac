"""What one producer sends (:class:`ProducerWorkload`, a scenario's producer workload) and
the rules for its arrival rate.

:mod:`sim.clients.workload` (which exports these names too) drives a producer with it. The
settings live apart from the driver because their fields carry validators and documentation,
which the compiled build cannot compile (see docs/benchmarks.md): this module stays
interpreted, the driver is compiled.
"""

from __future__ import annotations

import math
from typing import ClassVar, Final, Literal

import attrs

from replica.config_def import FieldErrors, doc, int_at_least, one_of, require
from sim.clients.errors import ClientConfigError
from sim.core.distributions import Constant, Distribution

__all__ = ["MIN_RATE", "RATE_RULE", "ArrivalKind", "ProducerWorkload", "valid_rate"]

ArrivalKind = Literal["poisson", "constant"]

MIN_RATE: Final = 1e-6
"""The lowest rate, messages per second (one message in 11.6 days): below about 1e-302 the
mean gap between arrivals is no longer a finite float."""

RATE_RULE: Final = f"a finite number >= {MIN_RATE} (messages per second)"


def valid_rate(rate: object) -> bool:
    """Whether ``rate`` is a usable arrival rate: a finite int or float >= :data:`MIN_RATE`."""
    return (
        isinstance(rate, int | float)
        and not isinstance(rate, bool)
        and math.isfinite(rate)
        and rate >= MIN_RATE
    )


@attrs.frozen(kw_only=True)
class ProducerWorkload:
    """What one producer sends: to which topic, how often, how large, with which keys.

    Raises ClientConfigError naming the field when a value is out of range.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(ClientConfigError)

    topic: str = attrs.field(metadata=doc("topic to produce to"))
    rate: float = attrs.field(
        default=1000.0,
        validator=require(RATE_RULE, valid_rate),
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

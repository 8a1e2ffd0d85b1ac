"""The simulated network's settings and fault, as a scenario declares them.

:class:`NetworkConfig` is the scenario's ``[network]`` section and :class:`LatencySpike` a
``[[faults]]`` entry; :mod:`sim.core.network` (which exports both) explains what they do.
They live apart from the network itself because their fields carry validators and
documentation, which the compiled build cannot compile (see docs/benchmarks.md): this module
stays interpreted, the network is compiled.
"""

from __future__ import annotations

from typing import Literal

import attrs

from replica.config_def import at_least, doc
from sim.core.distributions import Distribution, Lognormal

__all__ = ["LatencySpike", "NetworkConfig"]


@attrs.frozen(kw_only=True)
class NetworkConfig:
    """``[network]``: one-way latency per link class; links deliver in order (TCP-like)."""

    client_broker: Distribution = attrs.field(
        factory=lambda: Lognormal(median=250, sigma=0.3),
        metadata=doc("latency between a client and a broker"),
    )
    broker_broker: Distribution = attrs.field(
        factory=lambda: Lognormal(median=250, sigma=0.3),
        metadata=doc("latency between two brokers (replication)"),
    )


@attrs.frozen(kw_only=True)
class LatencySpike:
    """A fault: ``extra`` one-way latency on matching links during ``[at, at + duration)``.

    ``src``/``dst`` are node names or shell patterns (``broker-*``, ``*``); with
    ``bidirectional`` the reverse direction is slowed too.
    """

    type: Literal["latency_spike"] = "latency_spike"
    at: int = attrs.field(validator=at_least(0), metadata=doc("start (virtual time)", unit="us"))
    duration: int = attrs.field(
        validator=at_least(1), metadata=doc("length of the spike", unit="us")
    )
    extra: int = attrs.field(
        validator=at_least(0), metadata=doc("added one-way latency", unit="us")
    )
    src: str = attrs.field(default="*", metadata=doc("sending node (pattern)"))
    dst: str = attrs.field(default="*", metadata=doc("receiving node (pattern)"))
    bidirectional: bool = attrs.field(default=True, metadata=doc("also slow dst -> src"))

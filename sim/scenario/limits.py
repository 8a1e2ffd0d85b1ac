"""Size limits: the scenarios a laptop can run, so a typo does not hang or exhaust memory.

A scenario is refused, in one line naming the field, when it asks for more than a limit of
:data:`LIMITS`: a million brokers, 10^8 partitions, a rate of 10^12 messages per second, a
day of simulated time. Each limit is far above the bundled scenarios (the ``default`` study
sends 600,000 messages in 60 s on 3 brokers) and well below what would take hours or tens of
gigabytes; the costs behind them were measured on the default scenario (about 1.5 KB of
memory and 0.15 ms of wall time per simulated message; 1,000 partitions of RF 3 make one
simulated second take about 6 s).

``[simulation] allow_large = true`` (or ``--set simulation.allow_large=true``) lifts every
limit, for people who mean it. ``python -m sim knobs`` states each limit in the help text of
the knobs it bounds. Limits are checked after every other check (they assume a consistent
scenario), by :func:`check_limits`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

from sim.core.distributions import Distribution
from sim.core.units import format_duration
from sim.scenario.errors import ScenarioError
from sim.scenario.schema import Scenario

__all__ = ["LIMITS", "TAIL", "Limit", "check_limits", "limit_help"]

TAIL = 1 - 1e-9
"""A distribution of message sizes is judged by its quantile at ``TAIL``: the value one draw
in a billion exceeds."""

Measure = Callable[[Scenario], Iterator[tuple[str, float]]]
"""The limited quantity of a scenario: (field path to blame, value) for each place it occurs."""


def _number(value: float) -> str:
    """``1,000,000``; a fraction keeps one decimal."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _bytes(value: float) -> str:
    """``4GiB``, ``1.5MiB``, ``900B``: one decimal at most, in the largest unit that fits."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale:
            return f"{value / scale:,.1f}".removesuffix(".0") + unit
    return f"{value:.0f}B"


@attrs.frozen
class Limit:
    """One size limit: what it bounds, the bound, why, and where ``knobs`` states it.

    ``measure`` yields the quantity at each place it occurs; ``show`` spells a value (and the
    maximum) with its unit; ``knobs`` are the knob paths (list entries as ``[]``) whose help
    text states the limit.
    """

    quantity: str
    maximum: float
    reason: str
    knobs: tuple[str, ...]
    measure: Measure
    show: Callable[[float], str] = _number

    def rule(self) -> str:
        """``at most 100 brokers``."""
        return f"at most {self.show(self.maximum)} {self.quantity}"


def _seconds(scenario: Scenario) -> float:
    return scenario.simulation.duration / 1e6


def _expected_messages(scenario: Scenario) -> Iterator[tuple[int, float]]:
    """(producer index, messages it is expected to send in the run)."""
    for i, producer in enumerate(scenario.producers):
        expected = producer.workload.rate * _seconds(scenario)
        count = producer.workload.message_count
        yield i, expected if count is None else min(expected, count)


def _expected_bytes(scenario: Scenario) -> float:
    return sum(
        n * scenario.producers[i].workload.message_size.mean
        for i, n in _expected_messages(scenario)
    )


def _replicas(scenario: Scenario) -> float:
    offsets = scenario.offsets
    topics = sum(t.partitions * t.replication_factor for t in scenario.topics)
    return topics + offsets.offsets_topic_num_partitions * offsets.offsets_topic_replication_factor


def _sizes(scenario: Scenario) -> Iterator[tuple[str, float]]:
    for i, producer in enumerate(scenario.producers):
        size: Distribution = producer.workload.message_size
        yield f"producers[{i}].message_size", size.quantile(TAIL)


LIMITS: tuple[Limit, ...] = (
    Limit(
        "of simulated time",
        3_600_000_000,
        "one virtual second costs at least a garbage collection and a sample of every probe",
        ("simulation.duration",),
        lambda s: iter([("simulation.duration", s.simulation.duration)]),
        show=lambda value: format_duration(int(value), "us"),
    ),
    Limit(
        "time-series samples per probe (simulation.duration / simulation.sample_interval)",
        100_000,
        "every probe keeps every sample in memory",
        ("simulation.sample_interval",),
        lambda s: iter(
            [("simulation.sample_interval", s.simulation.duration / s.simulation.sample_interval)]
        ),
    ),
    Limit(
        "brokers",
        100,
        "each broker runs the whole broker stack and its replica fetchers",
        ("cluster.brokers",),
        lambda s: iter([("cluster.brokers", s.cluster.brokers)]),
    ),
    Limit(
        "request handler threads per broker",
        1_000,
        "far beyond any broker's num.io.threads",
        ("cluster.num_io_threads",),
        lambda s: iter([("cluster.num_io_threads", s.cluster.num_io_threads)]),
    ),
    Limit(
        "partitions per topic",
        1_000,
        "every fetch visits every partition: 1,000 partitions of RF 3 make a simulated second "
        "take seconds",
        ("topics[].partitions",),
        lambda s: ((f"topics[{i}].partitions", t.partitions) for i, t in enumerate(s.topics)),
    ),
    Limit(
        "partitions of __consumer_offsets",
        1_000,
        "each one is a partition every broker hosting it replicates (Kafka's default is 50)",
        ("offsets.offsets_topic_num_partitions",),
        lambda s: iter(
            [("offsets.offsets_topic_num_partitions", s.offsets.offsets_topic_num_partitions)]
        ),
    ),
    Limit(
        "partition replicas over all topics and __consumer_offsets (partitions x replication "
        "factor)",
        10_000,
        "each replica is a log, a fetcher entry and purgatory keys on its broker",
        (
            "topics[].partitions",
            "topics[].replication_factor",
            "offsets.offsets_topic_num_partitions",
            "offsets.offsets_topic_replication_factor",
        ),
        lambda s: iter([("topics", _replicas(s))]),
    ),
    Limit(
        "messages per second per producer",
        1_000_000,
        "the simulator handles about 7,000 messages per wall-clock second",
        ("producers[].rate",),
        lambda s: ((f"producers[{i}].rate", p.workload.rate) for i, p in enumerate(s.producers)),
    ),
    Limit(
        "messages expected over all producers (rate x simulation.duration, or message_count)",
        2_000_000,
        "each message costs about 1.5 KB of memory and 0.15 ms of wall time",
        ("producers[].rate", "producers[].message_count", "simulation.duration"),
        lambda s: iter([("producers", sum(n for _, n in _expected_messages(s)))]),
    ),
    Limit(
        f"per message (the size distribution's {TAIL} quantile)",
        1024**2,
        "Kafka's default max.request.size; records are held in memory",
        ("producers[].message_size",),
        _sizes,
        show=_bytes,
    ),
    Limit(
        "of message values expected over all producers (messages x mean size)",
        4 * 1024**3,
        "records are held in memory for the whole run",
        ("producers[].message_size",),
        lambda s: iter([("producers", _expected_bytes(s))]),
        show=_bytes,
    ),
    Limit(
        "Burrow workers",
        10_000,
        "Burrow's NumWorkers is goroutines in one process",
        ("burrow.num_workers",),
        lambda s: iter([] if s.burrow is None else [("burrow.num_workers", s.burrow.num_workers)]),
    ),
    Limit(
        "consume-proxy readers",
        10_000,
        "each is a network node with its own connection to its server",
        ("proxy.readers.count",),
        lambda s: iter([] if s.proxy is None else [("proxy.readers.count", s.proxy.readers.count)]),
    ),
    Limit(
        "Burrow consumers",
        100,
        "each is a consumer, a worker pool and a group member with its own heartbeats",
        ("burrow.members",),
        lambda s: iter([] if s.burrow is None else [("burrow.members", s.burrow.members)]),
    ),
)
"""Every size limit, in the order they are checked."""


def check_limits(scenario: Scenario) -> Scenario:
    """``scenario`` unchanged if it is within every limit of :data:`LIMITS`, or if its
    ``simulation.allow_large`` is set.

    Raises ScenarioError naming the first field over a limit, the limit and how to lift it.
    """
    if scenario.simulation.allow_large:
        return scenario
    for limit in LIMITS:
        for path, value in limit.measure(scenario):
            if value > limit.maximum:
                raise ScenarioError(
                    path,
                    f"{limit.show(value)} {limit.quantity} is above the limit of "
                    f"{limit.show(limit.maximum)} ({limit.reason}; set "
                    "simulation.allow_large = true to run it anyway)",
                )
    return scenario


def limit_help(knob: str) -> str:
    """The limits stated on knob path ``knob`` (list entries as ``[]``), as help text:
    ``"; limit: at most 100 brokers"``, or ``""`` for a knob without a limit."""
    rules = [limit.rule() for limit in LIMITS if knob in limit.knobs]
    if not rules:
        return ""
    return "; limit: " + "; ".join(rules) + " (simulation.allow_large lifts it)"

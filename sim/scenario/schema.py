"""What a scenario file contains: the :class:`Scenario` and its sections.

Knob names are Kafka's (``replica.fetch.wait.max.ms`` is ``replica_fetch_wait_max_ms``; the
dotted spelling is accepted too), Sarama's or Burrow's where Kafka has none, and the
simulator's own for what only a simulation has (``[simulation]``, latency distributions).
Defaults are Kafka's where Kafka has one. ``python -m sim knobs`` lists every knob.

Times inside the simulator are integer microseconds; broker and client settings keep Kafka's
unit (milliseconds for ``*_ms``). Node names on the network (what latency spikes match;
:func:`network_nodes`): ``broker-<id>`` for brokers (ids ``0 .. brokers-1``, as
``cluster.broker_node_name`` spells them), ``controller`` and the clients' ids.
"""

from __future__ import annotations

import math
from typing import Literal

import attrs

from cluster import broker_node_name
from coordinator.config import GroupConfig, OffsetConfig
from replica.config import BrokerConfig
from replica.config_def import at_least, doc, optional, require
from sim.core.distributions import Distribution, Exponential
from sim.core.network import LatencySpike, NetworkConfig, NodeKind, spike_links
from sim.core.units import format_duration
from sim.scenario.clients import BurrowSection, ConsumerSection, ProducerSection
from sim.scenario.errors import ScenarioError
from sim.scenario.proxy import ProxySection

__all__ = [
    "CONTROLLER_NODE",
    "BrokerFailure",
    "ClusterConfig",
    "ConsumerCrash",
    "Fault",
    "FollowerStall",
    "LatencySpike",
    "NetworkConfig",
    "Scenario",
    "SimulationConfig",
    "TopicConfig",
    "check_scenario",
    "consumer_ids",
    "network_nodes",
    "proxy_ids",
    "subscribes",
]

MAX_SEED = 2**63 - 1
"""The largest run seed: sweeps, replications and comparisons keep seeds as ``int64``."""

CONTROLLER_NODE = "controller"
"""The controller's node name (the cluster sends its requests from ``"controller"``)."""


@attrs.frozen(kw_only=True)
class SimulationConfig:
    """``[simulation]``: the run itself."""

    seed: int = attrs.field(
        default=0,
        validator=require(
            "an integer from 0 to 2**63 - 1 (seeds are int64 columns of a sweep's tables)",
            lambda value: 0 <= value <= MAX_SEED,
        ),
        metadata=doc("run seed, 0 to 2**63 - 1; every random stream is derived from it"),
    )
    duration: int = attrs.field(
        default=60_000_000,
        validator=at_least(1),
        metadata=doc("virtual time to simulate", unit="us"),
    )
    warmup: int = attrs.field(
        default=5_000_000,
        validator=at_least(0),
        metadata=doc("start of the run left out of the summary statistics", unit="us"),
    )
    sample_interval: int = attrs.field(
        default=100_000,
        validator=at_least(1),
        metadata=doc("period of the time-series samples", unit="us"),
    )
    allow_large: bool = attrs.field(
        default=False,
        metadata=doc(
            "lift the size limits (the 'limit:' notes of `python -m sim knobs`), for runs "
            "meant to be huge: they may take hours or exhaust memory"
        ),
    )


@attrs.frozen(kw_only=True)
class ClusterConfig:
    """``[cluster]``: the brokers, their request handling and their Kafka settings."""

    brokers: int = attrs.field(
        default=3, validator=at_least(1), metadata=doc("number of brokers (ids 0..brokers-1)")
    )
    num_io_threads: int = attrs.field(
        default=8,
        validator=at_least(1),
        metadata=doc("num.io.threads: request handler threads per broker"),
    )
    queued_max_requests: int = attrs.field(
        default=500,
        validator=at_least(1),
        metadata=doc("queued.max.requests: request queue size before the network threads block"),
    )
    request_local_time: Distribution = attrs.field(
        factory=lambda: Exponential(mean=50),
        metadata=doc("time a handler thread spends on one request (Kafka's LocalTimeMs metric)"),
    )
    broker: BrokerConfig = attrs.field(
        factory=BrokerConfig,
        metadata=doc("replica.* and min.insync.replicas settings", flatten=True),
    )
    group: GroupConfig = attrs.field(
        factory=GroupConfig,
        metadata=doc("the group coordinator's group.* settings", flatten=True),
    )


@attrs.frozen(kw_only=True)
class TopicConfig:
    """``[[topics]]``: a topic created before the run."""

    name: str = attrs.field(
        validator=require(
            "a non-empty name not starting with '__'",
            lambda name: isinstance(name, str) and name != "" and not name.startswith("__"),
        ),
        metadata=doc("topic name"),
    )
    partitions: int = attrs.field(default=1, validator=at_least(1), metadata=doc("num.partitions"))
    replication_factor: int = attrs.field(
        default=1, validator=at_least(1), metadata=doc("default.replication.factor")
    )


@attrs.frozen(kw_only=True)
class BrokerFailure:
    """A fault: broker ``broker`` crashes at ``at`` and restarts after ``duration`` (if set).

    Its connections break and its requests are lost; the controller moves the leadership of
    its partitions to live ISR members. ``log = "lost"`` restarts it with empty logs (a lost
    disk): it re-replicates everything from the leaders; a partition whose only in-sync
    replica it was comes back empty (its data is lost, as in Kafka).
    """

    type: Literal["broker_failure"] = "broker_failure"
    broker: int = attrs.field(validator=at_least(0), metadata=doc("broker id"))
    at: int = attrs.field(
        validator=at_least(0), metadata=doc("crash time (virtual time)", unit="us")
    )
    duration: int | None = attrs.field(
        default=None,
        validator=optional(at_least(1)),
        metadata=doc("downtime; absent: the broker stays down", unit="us"),
    )
    log: Literal["kept", "lost"] = attrs.field(
        default="kept", metadata=doc("whether the broker's logs survive the crash")
    )


@attrs.frozen(kw_only=True)
class FollowerStall:
    """A fault: broker ``broker``'s replica fetchers send no fetch during the window.

    The broker keeps leading and serving, but as a follower it falls behind: the leaders'
    high watermarks (so acks=all produces and offset commits) wait for it until it has lagged
    for replica.lag.time.max.ms and the ISR shrinks; once it fetches again and catches up, the
    ISR expands.
    """

    type: Literal["follower_stall"] = "follower_stall"
    broker: int = attrs.field(validator=at_least(0), metadata=doc("broker id"))
    at: int = attrs.field(validator=at_least(0), metadata=doc("start (virtual time)", unit="us"))
    duration: int | None = attrs.field(
        default=None,
        validator=optional(at_least(1)),
        metadata=doc("length of the stall; absent: until the end", unit="us"),
    )


@attrs.frozen(kw_only=True)
class ConsumerCrash:
    """A fault: consumer ``consumer`` is killed at ``at`` (no final commit) and, after
    ``duration`` if set, a new instance starts from the group's committed offsets.

    ``consumer`` is a client id: ``consumer-<i>`` (the i-th ``[[consumers]]``), ``burrow`` or
    ``burrow-<i>`` (the other Burrow ``members``).
    """

    type: Literal["consumer_crash"] = "consumer_crash"
    consumer: str = attrs.field(default="burrow", metadata=doc("client id of the consumer"))
    at: int = attrs.field(
        validator=at_least(0), metadata=doc("crash time (virtual time)", unit="us")
    )
    duration: int | None = attrs.field(
        default=None,
        validator=optional(at_least(1)),
        metadata=doc("downtime; absent: it stays down", unit="us"),
    )


Fault = LatencySpike | BrokerFailure | FollowerStall | ConsumerCrash
"""Any fault; ``[[faults]]`` entries pick one with the ``type`` key."""


@attrs.frozen(kw_only=True)
class Scenario:
    """A whole scenario file. Build it with :func:`sim.scenario.load_scenario`."""

    description: str = attrs.field(
        default="", metadata=doc("one line shown by `python -m sim scenarios`")
    )
    simulation: SimulationConfig = attrs.field(factory=SimulationConfig, metadata=doc("the run"))
    cluster: ClusterConfig = attrs.field(factory=ClusterConfig, metadata=doc("brokers"))
    network: NetworkConfig = attrs.field(factory=NetworkConfig, metadata=doc("links"))
    topics: list[TopicConfig] = attrs.field(
        factory=list, metadata=doc("topics created before the run")
    )
    offsets: OffsetConfig = attrs.field(
        factory=OffsetConfig, metadata=doc("__consumer_offsets settings")
    )
    producers: list[ProducerSection] = attrs.field(factory=list, metadata=doc("producers"))
    consumers: list[ConsumerSection] = attrs.field(
        factory=list, metadata=doc("plain Kafka consumers")
    )
    burrow: BurrowSection | None = attrs.field(
        default=None, metadata=doc("the Burrow consumer, if any")
    )
    proxy: ProxySection | None = attrs.field(
        default=None, metadata=doc("consume-proxy servers and their readers, if any")
    )
    faults: list[Fault] = attrs.field(factory=list, metadata=doc("faults injected during the run"))


def check_scenario(scenario: Scenario) -> Scenario:
    """Checks that involve several sections; returns ``scenario`` unchanged.

    Raises ScenarioError naming the first offending field.
    """
    simulation = scenario.simulation
    if simulation.warmup >= simulation.duration:
        raise ScenarioError(
            "simulation.warmup",
            "must be shorter than simulation.duration "
            f"({format_duration(simulation.duration, 'us')}), "
            f"got {format_duration(simulation.warmup, 'us')} (set simulation.warmup as well)",
        )
    brokers = scenario.cluster.brokers
    topics: set[str] = set()
    for i, topic in enumerate(scenario.topics):
        if topic.name in topics:
            raise ScenarioError(f"topics[{i}].name", f"topic {topic.name!r} is defined twice")
        topics.add(topic.name)
        if topic.replication_factor > brokers:
            raise ScenarioError(
                f"topics[{i}].replication_factor",
                f"must be <= cluster.brokers ({brokers}), got {topic.replication_factor}",
            )
    if scenario.offsets.offsets_topic_replication_factor > brokers:
        raise ScenarioError(
            "offsets.offsets_topic_replication_factor",
            f"must be <= cluster.brokers ({brokers}), got "
            f"{scenario.offsets.offsets_topic_replication_factor}",
        )
    for i, producer in enumerate(scenario.producers):
        _check_topic(f"producers[{i}].topic", producer.workload.topic, topics)
    for i, consumer in enumerate(scenario.consumers):
        for j, name in enumerate(consumer.topics):
            _check_topic(f"consumers[{i}].topics[{j}]", name, topics)
    if scenario.burrow is not None:
        _check_topic("burrow.topic", scenario.burrow.topic, topics)
    if scenario.proxy is not None:
        _check_proxy(scenario, scenario.proxy, topics)
    _check_groups(scenario)
    _check_faults(scenario)
    return scenario


def subscribes(scenario: Scenario, consumer: ConsumerSection | BurrowSection) -> bool:
    """Whether ``consumer`` (one of ``scenario.consumers``, or ``scenario.burrow``) joins its
    group rather than being assigned every partition: ``group_membership`` ``"on"``, or
    ``"auto"`` with another consumer of the scenario in the same group (Burrow's
    ``members`` count each)."""
    config = consumer.consumer if isinstance(consumer, BurrowSection) else consumer.config
    if config.group_membership != "auto":
        return config.group_membership == "on"
    if config.group_id is None:
        return False
    members = sum(c.config.group_id == config.group_id for c in scenario.consumers)
    burrow = scenario.burrow
    if burrow is not None and burrow.consumer.group_id == config.group_id:
        members += burrow.members
    return members > 1


def _check_groups(scenario: Scenario) -> None:
    """Members' session timeouts are within the cluster's bounds; a group has only members or
    only assigned consumers (an assigned consumer's commits to a group with members are
    refused); several Burrow consumers join their group."""
    group = scenario.cluster.group
    low, high = group.group_min_session_timeout_ms, group.group_max_session_timeout_ms
    sections: list[tuple[str, ConsumerSection | BurrowSection]] = [
        (f"consumers[{i}]", consumer) for i, consumer in enumerate(scenario.consumers)
    ]
    if scenario.burrow is not None:
        sections.append(("burrow.consumer", scenario.burrow))
    joined: dict[str | None, bool] = {}
    for path, section in sections:
        member = subscribes(scenario, section)
        config = section.consumer if isinstance(section, BurrowSection) else section.config
        if isinstance(section, BurrowSection) and section.members > 1 and not member:
            raise ScenarioError(
                "burrow.members",
                f"{section.members} Burrow consumers must join their group: set "
                "burrow.consumer.group_membership to 'auto' or 'on'",
            )
        if isinstance(section, ConsumerSection) and section.members > 1 and member:
            raise ScenarioError(
                f"{path}.members",
                "a fixed share of the partitions (members > 1) is for consumers outside a "
                "group; a group member gets its partitions from the group's assignment",
            )
        if config.group_id is not None and joined.setdefault(config.group_id, member) != member:
            raise ScenarioError(
                f"{path}.group_membership",
                f"group {config.group_id!r} has members and assigned consumers: an assigned "
                "consumer's commits would be refused (set group_membership alike, or use "
                "another group_id)",
            )
        timeout = config.session_timeout_ms
        if member and not low <= timeout <= high:
            raise ScenarioError(
                f"{path}.session_timeout_ms",
                f"must be within cluster.group_min_session_timeout_ms ({low}) and "
                f"cluster.group_max_session_timeout_ms ({high}), got {timeout} (the "
                "coordinator would answer INVALID_SESSION_TIMEOUT)",
            )


def _check_proxy(scenario: Scenario, proxy: ProxySection, topics: set[str]) -> None:
    """The proxy's topic exists and has a partition for each server; its group is its own."""
    _check_topic("proxy.topic", proxy.topic, topics)
    partitions = next(t.partitions for t in scenario.topics if t.name == proxy.topic)
    if proxy.servers > partitions:
        raise ScenarioError(
            "proxy.servers",
            f"must be <= the partitions of {proxy.topic!r} ({partitions}), got {proxy.servers}: "
            "a server without a partition has nothing to serve",
        )
    consumers = [c.config for c in scenario.consumers]
    if scenario.burrow is not None:
        consumers.append(scenario.burrow.consumer)
    if any(config.group_id == proxy.group_id for config in consumers):
        raise ScenarioError(
            "proxy.group_id",
            f"group {proxy.group_id!r} is a consumer's group too: the proxy's commits and the "
            "consumer's would overwrite each other (use another group_id)",
        )


def proxy_ids(scenario: Scenario) -> list[str]:
    """Client ids of the consume proxy's servers (``proxy-<i>``) and readers (``reader-<i>``),
    none without ``[proxy]``."""
    proxy = scenario.proxy
    if proxy is None:
        return []
    return [f"proxy-{i}" for i in range(proxy.servers)] + [
        f"reader-{i}" for i in range(proxy.readers.count)
    ]


def consumer_ids(scenario: Scenario) -> list[str]:
    """Client ids of the scenario's consumers: ``consumer-<i>``, then, with ``[burrow]``,
    ``burrow`` and ``burrow-<i>`` for its other ``members``."""
    ids = [f"consumer-{i}" for i in range(len(scenario.consumers))]
    if scenario.burrow is not None:
        ids += ["burrow"] + [f"burrow-{i}" for i in range(1, scenario.burrow.members)]
    return ids


def network_nodes(scenario: Scenario) -> dict[str, NodeKind]:
    """The nodes of a run's network, name -> kind: the brokers, the controller,
    ``producer-<i>``, :func:`consumer_ids`, then :func:`proxy_ids`."""
    nodes: dict[str, NodeKind] = {
        broker_node_name(i): "broker" for i in range(scenario.cluster.brokers)
    }
    nodes[CONTROLLER_NODE] = "broker"
    clients = [f"producer-{i}" for i in range(len(scenario.producers))]
    clients += [*consumer_ids(scenario), *proxy_ids(scenario)]
    nodes.update((client, "client") for client in clients)
    return nodes


def _check_faults(scenario: Scenario) -> None:
    """Fault targets exist (a latency spike's patterns match a link), and faults of one kind
    on one target do not overlap in time."""
    brokers = scenario.cluster.brokers
    consumers = consumer_ids(scenario)
    nodes = network_nodes(scenario)
    windows: dict[tuple[str, str], list[tuple[int, float, int]]] = {}
    for i, fault in enumerate(scenario.faults):
        if isinstance(fault, LatencySpike):
            if not spike_links(fault, nodes):
                directions = "either direction" if fault.bidirectional else "that direction"
                raise ScenarioError(
                    f"faults[{i}].src",
                    f"latency spike matches no link: no node pair matches src={fault.src!r} "
                    f"dst={fault.dst!r} in {directions} (nodes: {', '.join(nodes)})",
                )
            continue
        if isinstance(fault, ConsumerCrash):
            target = fault.consumer
            if target not in consumers:
                known = ", ".join(consumers) or "none"
                raise ScenarioError(
                    f"faults[{i}].consumer", f"no such consumer {target!r} (consumers: {known})"
                )
        else:
            target = str(fault.broker)
            if fault.broker >= brokers:
                raise ScenarioError(
                    f"faults[{i}].broker",
                    f"no such broker: ids are 0..{brokers - 1}, got {fault.broker}",
                )
        end = math.inf if fault.duration is None else fault.at + fault.duration
        previous = windows.setdefault((fault.type, target), [])
        for at, until, j in previous:
            if at < end and fault.at < until:
                raise ScenarioError(
                    f"faults[{i}].at",
                    f"overlaps faults[{j}] ({fault.type} of {target} from "
                    f"{format_duration(at, 'us')}): one {fault.type} at a time per target",
                )
        previous.append((fault.at, end, i))


def _check_topic(field: str, name: str, topics: set[str]) -> None:
    if name not in topics:
        known = ", ".join(sorted(topics)) or "none"
        raise ScenarioError(field, f"unknown topic {name!r} (topics: {known})")

"""Scenarios: TOML files describing a simulated cluster, its clients and faults.

>>> from sim.scenario import load_scenario
>>> scenario = load_scenario("default", ["producers[0].acks=1", "simulation.duration=10s"])
>>> scenario.producers[0].config.acks, scenario.simulation.duration
(1, 10000000)

Every error is a :class:`ScenarioError` whose message is one line naming the field.

What a scenario holds is :mod:`~sim.scenario.schema` (and :mod:`~sim.scenario.clients` for the
client sections); :mod:`~sim.scenario.files` finds files, follows ``base`` chains and applies
overrides; :mod:`~sim.scenario.limits` bounds the sizes a run may ask for;
:mod:`~sim.scenario.knobs` lists every knob. Underneath is a loader generic over
attrs classes, one concept a module: :mod:`~sim.scenario.specs` (what it reads of a class),
:mod:`~sim.scenario.tables` (keys made canonical, ``base`` merging),
:mod:`~sim.scenario.convert` (TOML values to typed values and instances),
:mod:`~sim.scenario.overrides` (``--set path=value``) and :mod:`~sim.scenario.formatting`
(paths, values and types as people read them).
"""

from sim.core.distributions import Constant, Distribution, Exponential, Lognormal, Uniform
from sim.scenario.clients import BurrowSection, ConsumerSection, ProducerSection
from sim.scenario.errors import ScenarioError
from sim.scenario.files import (
    Override,
    bundled_scenarios,
    load_scenario,
    resolve_source,
    with_overrides,
)
from sim.scenario.proxy import ProxyReaders, ProxySection
from sim.scenario.schema import (
    CONTROLLER_NODE,
    BrokerFailure,
    ClusterConfig,
    ConsumerCrash,
    Fault,
    FollowerStall,
    LatencySpike,
    NetworkConfig,
    Scenario,
    SimulationConfig,
    TopicConfig,
    check_scenario,
    consumer_ids,
    network_nodes,
    proxy_ids,
    subscribes,
)

__all__ = [
    "CONTROLLER_NODE",
    "BrokerFailure",
    "BurrowSection",
    "ClusterConfig",
    "Constant",
    "ConsumerCrash",
    "ConsumerSection",
    "Distribution",
    "Exponential",
    "Fault",
    "FollowerStall",
    "LatencySpike",
    "Lognormal",
    "NetworkConfig",
    "Override",
    "ProducerSection",
    "ProxyReaders",
    "ProxySection",
    "Scenario",
    "ScenarioError",
    "SimulationConfig",
    "TopicConfig",
    "Uniform",
    "bundled_scenarios",
    "check_scenario",
    "consumer_ids",
    "load_scenario",
    "network_nodes",
    "proxy_ids",
    "resolve_source",
    "subscribes",
    "with_overrides",
]

"""Small scenarios for the world, fault and validation tests: cheap to run, exact to reason about.

Three brokers, RF 3, min.insync.replicas 2, constant latencies (1 ms one way on every link,
100 us of handler time per request), a 3-partition topic and a 3-partition
``__consumer_offsets``, one acks=all producer at a low rate with no linger, and the Burrow
consumer committing every 500 ms from the earliest offset.
"""

from __future__ import annotations

import copy
from typing import Any

from sim.core.engine import Simulator
from sim.output import MetricsRecorder
from sim.scenario import Override, Scenario, with_overrides
from sim.scenario.convert import build
from sim.world import World

__all__ = ["BASE", "LOCAL_TIME_US", "ONE_WAY_US", "built_world", "small_scenario"]

ONE_WAY_US = 1000
LOCAL_TIME_US = 100

BASE: dict[str, Any] = {
    "description": "a small test world",
    "simulation": {"seed": 7, "duration": "3s", "warmup": "500ms", "sample_interval": "100ms"},
    "cluster": {
        "brokers": 3,
        "request_local_time": {"distribution": "constant", "value": f"{LOCAL_TIME_US}us"},
        "min_insync_replicas": 2,
    },
    "network": {
        "client_broker": {"distribution": "constant", "value": f"{ONE_WAY_US}us"},
        "broker_broker": {"distribution": "constant", "value": f"{ONE_WAY_US}us"},
    },
    "topics": [{"name": "events", "partitions": 3, "replication_factor": 3}],
    "offsets": {"offsets_topic_num_partitions": 3, "offsets_topic_replication_factor": 3},
    "producers": [{"topic": "events", "rate": 200.0, "acks": -1, "linger_ms": 0}],
    "burrow": {
        "topic": "events",
        "commit_interval_ms": 500,
        "processing_time": {"distribution": "exponential", "mean": "300us"},
        "consumer": {
            "group_id": "burrow",
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
        },
    },
}


def small_scenario(*overrides: Override, **sections: Any) -> Scenario:
    """:data:`BASE` with ``sections`` replacing whole top-level sections, then ``overrides``
    (``"path=value"`` or ``(path, value)``) applied like ``--set``."""
    table = copy.deepcopy(BASE)
    table.update(copy.deepcopy(sections))
    return with_overrides(build(Scenario, table), overrides)


def built_world(scenario: Scenario) -> tuple[Simulator, World, MetricsRecorder]:
    """A world built for ``scenario`` on a fresh simulator, not run yet (step it with
    ``sim.run_until``)."""
    sim = Simulator(scenario.simulation.seed)
    recorder = MetricsRecorder()
    return sim, World(sim, scenario, recorder), recorder

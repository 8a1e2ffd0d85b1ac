"""Log retention in simulated runs: broker logs stay bounded, and a consumer that falls behind
the log start offset is reset by auto.offset.reset, as in Kafka (issue 16)."""

from __future__ import annotations

import pyarrow.compute as pc

from replica.types import TopicPartition
from sim.core.engine import Simulator
from sim.output import MetricsRecorder
from sim.runner import run_scenario
from sim.scenario import Scenario
from sim.world import World
from tests.sim.world_scenarios import small_scenario

SEGMENT = 16 * 1024
RETENTION = (
    f"cluster.log_segment_bytes={SEGMENT}",
    f"cluster.log_retention_bytes={2 * SEGMENT}",
    "cluster.log_retention_check_interval_ms=200ms",
)


def _run_keeping_world(scenario: Scenario) -> tuple[World, dict[str, object]]:
    worlds: list[World] = []

    def build(sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> World:
        worlds.append(World(sim, scenario, recorder))
        return worlds[0]

    run = run_scenario(scenario, build=build)
    return worlds[0], run.summary


def test_retention_bounds_every_replica_and_a_consumer_that_keeps_up_loses_nothing() -> None:
    world, summary = _run_keeping_world(small_scenario(*RETENTION, "producers[0].rate=1000"))
    for partition in range(3):
        tp = TopicPartition("events", partition)
        for broker in world.cluster.brokers.values():
            log = broker.replica_manager.get_partition(tp)
            assert log is not None
            assert log.log.log_start_offset > 0
            # At most the retained bytes, the active segment and one check interval's appends.
            assert log.log.size_in_bytes <= 2 * SEGMENT + SEGMENT + 100 * 1100
    messages = summary["messages"]
    assert isinstance(messages, dict)
    assert messages["delivered"] >= messages["acked"] - 50  # only the last moments in flight


def test_a_consumer_behind_the_log_start_is_reset_and_skips_what_retention_deleted() -> None:
    slow = {
        "topics": ["events"],
        "group_id": "slow",
        "auto_offset_reset": "earliest",
        "processing_time": {"distribution": "constant", "value": "5ms"},
    }
    scenario = small_scenario(*RETENTION, "producers[0].rate=1000", consumers=[slow], burrow=None)
    run = run_scenario(scenario)
    messages = run.messages
    acked = pc.equal(messages.column("ack_error"), 0)
    delivered = pc.is_valid(messages.column("delivered_us"))
    skipped = pc.sum(pc.and_(acked, pc.invert(delivered))).as_py()
    assert skipped > 500  # 1,000 msg/s produced, 200 msg/s consumed, 48 KiB retained
    assert run.summary["messages"]["delivered"] > 400
    lookups = run.requests.filter(pc.equal(run.requests.column("api"), "ListOffsets"))
    assert lookups.num_rows >= 2  # the start, then a reset after OFFSET_OUT_OF_RANGE

"""Loss counted, not inferred: every message checked against the final leader logs.

The summary's ``loss`` section (and the messages table's ``log_copies`` / ``retained_out``
columns) must agree with a direct reading of the brokers' logs at the end of the run.
"""

from __future__ import annotations

import pyarrow.compute as pc

from sim.clients.records import message_id_of
from sim.core.engine import Simulator
from sim.output import MetricsRecorder, RunResult
from sim.output.health import loss_warnings
from sim.output.summary import format_summary, loss_counts, summarize
from sim.runner import build_cluster, run_scenario
from sim.scenario import Scenario
from sim.world import World
from tests.sim.world_scenarios import small_scenario


def _run_with_world(scenario: Scenario) -> tuple[RunResult, World]:
    worlds: list[World] = []

    def build(sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> World:
        worlds.append(build_cluster(sim, scenario, recorder))
        return worlds[-1]

    return run_scenario(scenario, build=build), worlds[0]


def _leader_log_ids(world: World, topic: str) -> list[int]:
    """The message ids in the leaders' logs of ``topic``, read record by record."""
    ids = []
    cluster = world.cluster
    for tp in cluster.controller.partitions():
        if tp.topic != topic:
            continue
        log = cluster.brokers[cluster.leader(tp)].replica_manager.partitions[tp].log
        for segment in log.segments:
            for batch in segment.batches:
                for index, record in enumerate(batch.records):
                    message_id = message_id_of(record)
                    if batch.base_offset + index >= log.log_start_offset and message_id is not None:
                        ids.append(message_id)
    return ids


def test_the_last_isr_replica_back_with_an_empty_disk_loses_acknowledged_messages() -> None:
    """Brokers 1 and 2 fail, leaving broker 0 the only in-sync replica of every partition;
    it fails too and comes back with an empty disk, so it leads empty logs, and brokers 1 and
    2, back later, truncate to it: what was acknowledged before is gone (as in Kafka, where no
    unclean election is needed for this). The summary counts exactly what the logs lack."""
    faults = [
        {"type": "broker_failure", "broker": 1, "at": "1s", "duration": "3s"},
        {"type": "broker_failure", "broker": 2, "at": "1200ms", "duration": "2800ms"},
        {"type": "broker_failure", "broker": 0, "at": "2s", "duration": "500ms", "log": "lost"},
    ]
    scenario = small_scenario(
        "producers[0].message_count=1000", "simulation.duration=6s", faults=faults
    )
    result, world = _run_with_world(scenario)
    messages = result.messages
    acked = set(
        messages.column("message_id").filter(pc.equal(messages.column("ack_error"), 0)).to_pylist()
    )
    in_logs = set(_leader_log_ids(world, "events"))
    lost = acked - in_logs
    loss = result.summary["loss"]["acks_all"]
    assert loss["lost_acked"] == len(lost) > 100
    assert loss["acked"] == len(acked)
    assert loss["retained_out"] == loss["duplicated"] == 0
    absent = pc.and_(
        pc.equal(messages.column("log_copies"), 0), pc.equal(messages.column("ack_error"), 0)
    )
    assert set(messages.column("message_id").filter(absent).to_pylist()) == lost
    assert loss_counts(result.summary)["lost_acked_acks_all"] == len(lost)
    assert f"acks=all {len(acked)} acked, {len(lost)} lost" in result.format_table()
    assert (
        f"warning: {len(lost)} of the {len(acked)} messages acknowledged with acks=all are "
        "missing from the final leader logs (lost, not deleted by retention)"
    ) in result.format_table()


def test_acks_all_with_min_insync_2_loses_nothing_in_a_leader_failover() -> None:
    failure = {"type": "broker_failure", "broker": 0, "at": "1s", "duration": "1500ms"}
    scenario = small_scenario(
        "producers[0].message_count=600", "simulation.duration=5s", faults=[failure]
    )
    result, world = _run_with_world(scenario)
    loss = result.summary["loss"]
    assert loss["acks_all"] == {
        "sent": 600, "acked": 600, "failed": 0, "lost_acked": 0, "retained_out": 0,
        "duplicated": loss["acks_all"]["duplicated"],
    }  # fmt: skip
    assert loss["acks_1"]["sent"] == loss["acks_0"]["sent"] == 0
    assert not [w for w in result.summary["warnings"] if "missing from the final" in w]
    # The check is real: every acknowledged message is in a leader's log, once per copy.
    in_logs = _leader_log_ids(world, "events")
    assert set(in_logs) == set(range(600))
    assert loss["acks_all"]["duplicated"] == len(in_logs) - 600


def test_retention_is_not_loss_and_acks_0_is_counted_as_sent_but_absent() -> None:
    """A recorder fed by hand: partition 0 kept offsets 2.. (retention deleted 0 and 1),
    partition 1 lost everything (a fresh leader with an empty log)."""
    recorder = MetricsRecorder()
    recorder.producer_acks("all", -1)
    recorder.producer_acks("zero", 0)
    for message_id in range(4):
        recorder.message_sent(message_id, 10 * message_id, "all", "t")
    recorder.messages_acked([0, 1, 2, 3], 100, 0, 0, 0)  # offsets 0..3 of partition 0
    for message_id in (10, 11, 12, 13):
        recorder.message_sent(message_id, message_id, "zero", "t")
    recorder.messages_acked([10, 11], 50, 0, -1, 0)  # acks=0: no offset
    recorder.messages_acked([12, 13], 60, 1, -1, 0)
    recorder.message_sent(20, 70, "all", "t")
    recorder.message_acked(20, 80, 1, 0)
    recorder.final_log("t", 0, 2, [2, 3, 3, 11])  # 3 appended twice; 10 before 11: deleted
    recorder.final_log("t", 1, 0, [13])
    messages, requests, samples = recorder.tables()
    rows = {row["message_id"]: row for row in messages.to_pylist()}
    assert [rows[i]["log_copies"] for i in (0, 1, 2, 3, 20)] == [0, 0, 1, 2, 0]
    assert [rows[i]["retained_out"] for i in (0, 1, 2, 3, 20)] == [True, True, False, False, False]
    assert [rows[i]["retained_out"] for i in (10, 11, 12, 13)] == [True, False, False, False]
    assert rows[12]["acks"] == 0 and rows[20]["acks"] == -1
    summary = summarize(messages, requests, samples, run={}, warmup_us=0, duration_us=200)
    assert summary["loss"]["acks_all"] == {
        "sent": 5, "acked": 5, "failed": 0, "lost_acked": 1, "retained_out": 2, "duplicated": 1
    }  # fmt: skip
    assert summary["loss"]["acks_0"] == {
        "sent": 4, "written": 4, "failed": 0, "sent_absent": 1, "retained_out": 1, "duplicated": 0
    }  # fmt: skip
    assert loss_counts(summary) == {
        "lost_acked_acks_all": 1, "lost_acked_acks_1": 0, "sent_absent_acks_0": 1,
        "duplicated_in_log": 1, "retained_out": 3,
    }  # fmt: skip
    assert (
        "checked against the final leader logs: acks=all 5 acked, 1 lost; acks=0 4 written, "
        "1 absent; 1 in the log twice or more, 3 deleted by retention"
    ) in format_summary(summary)
    assert loss_warnings(summary["loss"]) == [
        "1 of the 5 messages acknowledged with acks=all are missing from the final leader logs "
        "(lost, not deleted by retention): messages.parquet has log_copies = 0 for them"
    ]  # acks=0 promises nothing: its absent message is counted, not warned about
    assert loss_warnings(None) == []


def test_without_final_logs_there_is_no_loss_section() -> None:
    recorder = MetricsRecorder()
    recorder.message_sent(1, 10, "p", "t")
    messages, requests, samples = recorder.tables()
    assert messages.column("log_copies").null_count == 1
    summary = summarize(messages, requests, samples, run={}, warmup_us=0, duration_us=100)
    assert summary["loss"] is None
    assert set(loss_counts(summary).values()) == {None}

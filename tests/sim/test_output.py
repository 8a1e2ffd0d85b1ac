"""Run output: the recorder's tables, the summary, byte-identical run directories, progress."""

from __future__ import annotations

import functools
import io
import json
from array import array
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from sim.core.engine import Simulator, every
from sim.core.network import Network
from sim.core.request_handling import RequestHandlerPool, local_time_sampler
from sim.output import MetricsRecorder, RunResult
from sim.output.summary import format_summary, latency_stats, summarize
from sim.runner import run_scenario
from sim.scenario import Exponential, Scenario, load_scenario

SHORT = [
    "simulation.duration=1s",
    "simulation.warmup=200ms",
    "simulation.sample_interval=50ms",
    "producers.rate=2000",
    "burrow.commit_interval_ms=200",
]


def toy_world(sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> None:
    """A stand-in for the cluster (tests only): one broker answering produce requests through
    its handler pool, one consumer that processes messages and commits on a ticker. It uses the
    real network and request-handling models, so every column of every table gets filled."""
    network = Network(sim, scenario.network)
    for node, kind in (("broker-0", "broker"), ("producer-0", "client"), ("burrow", "client")):
        network.add_node(node, kind)  # type: ignore[arg-type]
    for fault in scenario.faults:
        network.add_latency_spike(fault)  # type: ignore[arg-type]
    producer = scenario.producers[0]
    burrow = scenario.burrow
    assert burrow is not None
    next_offset = 0
    uncommitted: list[int] = []
    duplicates = sim.rng("toy:duplicates")
    processing = sim.rng("toy:processing")

    def handle(request: tuple[str, int, int, list[int]], queue_time: int) -> None:
        nonlocal next_offset
        api, sent, message_id, batch = request
        purgatory = 300 if api == "OffsetCommit" else None
        offset = next_offset
        next_offset += 1

        def respond() -> None:
            if api == "Produce":
                recorder.message_acked(message_id, sim.now, 0, offset)
            else:
                for committed in batch:
                    recorder.message_committed(committed, sim.now)
            recorder.request_completed(
                api, 0, "producer-0" if api == "Produce" else "burrow", sent, sim.now,
                queue_time=queue_time, produce_purgatory=purgatory,
            )  # fmt: skip

        sim.call_later(
            purgatory or 0, lambda: network.send("broker-0", request_client(api), respond)
        )
        if api == "Produce":
            network.send("broker-0", "burrow", lambda: deliver(message_id))

    def request_client(api: str) -> str:
        return "producer-0" if api == "Produce" else "burrow"

    pool: RequestHandlerPool[tuple[str, int, int, list[int]]] = RequestHandlerPool(
        sim,
        num_io_threads=scenario.cluster.num_io_threads,
        queued_max_requests=scenario.cluster.queued_max_requests,
        local_time=local_time_sampler(scenario.cluster.request_local_time, sim.rng("toy:local")),
        handler=handle,
    )

    def deliver(message_id: int) -> None:
        recorder.message_delivered(message_id, sim.now)
        if duplicates.random() < 0.01:
            recorder.message_delivered(message_id, sim.now + 1)
        delay = burrow.config.processing_time.sample(processing)
        sim.call_later(delay, lambda: processed(message_id))

    def processed(message_id: int) -> None:
        recorder.message_processed(message_id, sim.now)
        uncommitted.append(message_id)

    def commit() -> None:
        batch = list(uncommitted)
        uncommitted.clear()
        sent = sim.now
        network.send("burrow", "broker-0", lambda: pool.submit(("OffsetCommit", sent, -1, batch)))

    message_ids = iter(range(10**9))
    gaps = Exponential(mean=round(1e6 / producer.workload.rate))
    arrivals = sim.rng("toy:arrivals")

    def send() -> None:
        message_id = next(message_ids)
        sent = sim.now
        recorder.message_sent(message_id, sent, "producer-0", producer.workload.topic)
        network.send(
            "producer-0", "broker-0", lambda: pool.submit(("Produce", sent, message_id, []))
        )
        sim.call_later(gaps.sample(arrivals), send)

    sim.call_at(0, send)
    every(sim, burrow.config.commit_interval_ms * 1000, commit)
    recorder.add_probe("broker-0", "request_queue_size", lambda: pool.queue_size)
    recorder.add_probe("broker-0", "busy_threads", lambda: pool.busy_threads)


@functools.cache
def _run(seed: int) -> RunResult:
    """One toy run per seed (results are immutable, so tests share them)."""
    return run_scenario(load_scenario("default", SHORT), seed=seed, build=toy_world)


def test_same_seed_gives_byte_identical_run_directories(tmp_path: Path) -> None:
    first = _run(3).write(tmp_path / "a")
    second = run_scenario(load_scenario("default", SHORT), seed=3, build=toy_world).write(
        tmp_path / "b"
    )
    names = sorted(path.name for path in first)
    assert names == sorted(path.name for path in second)
    assert names == [
        "commit_lag.png", "latency_percentiles.png", "messages.parquet", "requests.parquet",
        "summary.json", "timeseries.parquet", "timeseries.png",
    ]  # fmt: skip
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    other = _run(4).write(tmp_path / "c", plots=False)
    assert (tmp_path / "c" / "messages.parquet").read_bytes() != (
        tmp_path / "a" / "messages.parquet"
    ).read_bytes()
    assert all(path.suffix != ".png" for path in other)


def test_a_run_written_over_an_earlier_one_leaves_none_of_its_files(tmp_path: Path) -> None:
    """Rewriting a run directory (``sim run --out`` again, here with ``--no-plots``) removes
    the earlier run's plots and proxy table, which would otherwise show another run."""
    _run(3).write(tmp_path)
    (tmp_path / "proxy.parquet").write_bytes(b"an earlier run's consume proxy records")
    written = _run(4).write(tmp_path, plots=False)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(p.name for p in written)


def test_tables_hold_consistent_per_message_and_per_request_measurements() -> None:
    result = _run(5)
    messages = result.messages.to_pylist()
    assert 1700 < len(messages) < 2300  # 2000 msg/s for 1 s
    for row in messages:
        if row["acked_us"] is not None:
            assert row["produce_latency_us"] == row["acked_us"] - row["sent_us"] > 0
        if row["delivered_us"] is not None:
            assert row["end_to_end_latency_us"] == row["delivered_us"] - row["sent_us"]
        if row["committed_us"] is not None:
            assert row["commit_latency_us"] == row["committed_us"] - row["processed_us"] >= 0
            assert row["send_to_commit_latency_us"] == row["committed_us"] - row["sent_us"]
            assert row["send_to_commit_latency_us"] > row["commit_latency_us"]
        else:
            assert row["commit_latency_us"] is None and row["send_to_commit_latency_us"] is None
        assert row["duplicate"] == (row["deliveries"] > 1)
    assert any(row["duplicate"] for row in messages)
    assert sum(row["committed_us"] is not None for row in messages) > len(messages) // 2
    requests = result.requests
    assert set(requests.column("api").to_pylist()) == {"Produce", "OffsetCommit"}
    commits = [r for r in requests.to_pylist() if r["api"] == "OffsetCommit"]
    assert all(
        r["produce_purgatory_us"] == 300 and r["fetch_purgatory_us"] is None for r in commits
    )
    samples = result.timeseries
    assert set(samples.column("metric").to_pylist()) == {"request_queue_size", "busy_threads"}
    assert samples.column("time_us").to_pylist()[:4] == [0, 0, 50_000, 50_000]


def test_summary_counts_and_latency_percentiles() -> None:
    result = _run(5)
    summary = result.summary
    assert summary["run"] == {
        "description": load_scenario("default").description,
        "seed": 5,
        "duration_us": 1_000_000,
        "warmup_us": 200_000,
        "events_processed": summary["run"]["events_processed"],
    }
    counts = summary["messages"]
    assert counts["sent"] == result.messages.num_rows
    assert counts["duplicates"] == sum(result.messages.column("duplicate").to_pylist())
    after_warmup = [
        row["produce_latency_us"] for row in result.messages.to_pylist()
        if row["sent_us"] >= 200_000 and row["produce_latency_us"] is not None
    ]  # fmt: skip
    produce = summary["latency"]["produce"]
    assert produce["count"] == len(after_warmup)
    assert produce["max_ms"] == max(after_warmup) / 1000
    assert produce["p50_ms"] == sorted(after_warmup)[(len(after_warmup) + 1) // 2 - 1] / 1000
    assert set(summary["requests"]) == {"OffsetCommit", "Produce"}
    table = result.format_table()
    for label in ("produce (sent to acked)", "end-to-end (sent to delivered)",
                  "commit (processed to committed)", "send-to-commit (sent to committed)",
                  "Produce round trip", "OffsetCommit in produce purgatory", "messages: sent",
                  "sent after the warmup"):  # fmt: skip
        assert label in table


def test_unfinished_counts_messages_sent_after_the_warmup_that_never_got_there() -> None:
    recorder = MetricsRecorder()
    for message_id in range(6):
        recorder.message_sent(message_id, 100 * message_id, "p", "t")
    # 0: before the warmup (200), never acked: not counted. 1 too.
    for message_id in (2, 3, 4):
        recorder.message_acked(message_id, 1000, 0, message_id)
    recorder.message_acked(5, 1000, 0, -1, error=19)  # failed: counts as never acked
    for message_id in (2, 3):
        recorder.message_delivered(message_id, 1100)
    recorder.message_processed(2, 1200)
    recorder.message_committed(2, 1500)
    messages, requests, samples = recorder.tables()
    summary = summarize(messages, requests, samples, run={}, warmup_us=200, duration_us=2000)
    assert summary["unfinished"] == {
        "sent_after_warmup": 4,  # messages 2..5
        "never_acked": 1,
        "never_delivered": 2,
        "never_processed": 3,
        "never_committed": 3,
    }
    send_to_commit = summary["latency"]["send_to_commit"]
    assert (send_to_commit["count"], send_to_commit["max_ms"]) == (1, 1.3)  # 1500 - 200 us
    assert summary["latency"]["commit"]["max_ms"] == 0.3
    assert "of the 4 sent after the warmup, by the end: never acked 1 (25.0%)" in (
        format_summary(summary)
    )


def test_latency_stats_are_nearest_rank_in_milliseconds() -> None:
    stats = latency_stats(np.arange(1, 1001, dtype=np.int64) * 1000)
    assert stats == {
        "count": 1000, "mean_ms": 500.5, "p50_ms": 500.0, "p90_ms": 900.0, "p99_ms": 990.0,
        "p99.9_ms": 999.0, "max_ms": 1000.0,
    }  # fmt: skip
    empty = latency_stats(np.array([], dtype=np.int64))
    assert empty["count"] == 0 and empty["p99_ms"] is None


def test_recorder_keeps_first_events_and_flags_failures() -> None:
    recorder = MetricsRecorder()
    recorder.message_sent(1, 10, "p", "t")
    recorder.message_sent(1, 99, "p", "t")  # a second report of the same send is ignored
    recorder.message_sent(2, 20, "p", "t")
    recorder.message_acked(1, 30, 0, 7)
    recorder.message_acked(2, 40, 1, -1, error=19)  # NOT_ENOUGH_REPLICAS
    recorder.message_delivered(1, 50)
    recorder.message_delivered(1, 70)
    recorder.message_processed(1, 60)
    recorder.message_committed(1, 90)
    recorder.message_delivered(3, 80)  # never sent: not a row
    messages, requests, samples = recorder.tables()
    rows = messages.to_pylist()
    assert [row["message_id"] for row in rows] == [1, 2]
    assert (rows[0]["offset"], rows[0]["deliveries"]) == (7, 2)
    assert (rows[0]["commit_latency_us"], rows[0]["duplicate"]) == (30, True)
    assert (rows[1]["offset"], rows[1]["ack_error"], rows[1]["delivered_us"]) == (None, 19, None)
    assert requests.num_rows == 0 and samples.num_rows == 0
    assert messages.schema.field("partition").type == pa.int32()


def test_a_batch_ack_is_the_same_as_its_per_message_acks() -> None:
    batch, single = MetricsRecorder(), MetricsRecorder()
    for recorder in (batch, single):
        for message_id in range(1, 6):
            recorder.message_sent(message_id, 10 * message_id, "p", "t")
    batch.messages_acked([1, 2, 3], 100, 2, 40, 0)
    batch.messages_acked([4, 5], 120, 1, -1, 19)
    for index, message_id in enumerate([1, 2, 3]):
        single.message_acked(message_id, 100, 2, 40 + index)
    for message_id in [4, 5]:
        single.message_acked(message_id, 120, 1, -1, error=19)
    assert batch.tables()[0] == single.tables()[0]
    rows = batch.tables()[0].to_pylist()
    assert [row["offset"] for row in rows] == [40, 41, 42, None, None]
    assert [row["produce_latency_us"] for row in rows] == [90, 80, 70, 80, 70]


def test_batch_methods_take_any_sequence_of_ids() -> None:
    """A list, a tuple and a signed ``array('q')`` (the consume proxy's ids) go in alike."""
    tables = []
    for ids in ([1, 2, 3], (1, 2, 3), array("q", [1, 2, 3])):
        recorder = MetricsRecorder()
        recorder.messages_sent(ids, [10, 20, 30], "p", "t")
        recorder.messages_acked(ids, 40, 0, 7, 0)
        recorder.messages_delivered(ids, 50)
        recorder.messages_processed(ids, (60, 61, 62))
        recorder.messages_committed(ids, 70)
        tables.append(recorder.tables()[0])
    assert tables[0] == tables[1] == tables[2]
    rows = tables[0].to_pylist()
    assert [(row["message_id"], row["offset"], row["processed_us"]) for row in rows] == [
        (1, 7, 60), (2, 8, 61), (3, 9, 62),
    ]  # fmt: skip
    assert [row["send_to_commit_latency_us"] for row in rows] == [60, 50, 40]


def test_progress_bar_only_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = load_scenario("default", SHORT)
    run_scenario(scenario, progress=True, build=toy_world)
    assert capsys.readouterr().err == ""  # captured stderr is not a TTY

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    run_scenario(scenario, progress=True, build=toy_world)
    assert "simulating" in terminal.getvalue() and "1.0/1.0 virtual s" in terminal.getvalue()
    terminal.truncate(0)
    run_scenario(scenario, progress=False, build=toy_world)
    assert terminal.getvalue().strip("\x00") == ""


def test_summary_json_holds_no_wall_clock(tmp_path: Path) -> None:
    result = _run(5)
    assert result.wall_seconds > 0
    result.write(tmp_path, plots=False)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert "wall" not in json.dumps(summary)
    assert summary == json.loads(json.dumps(result.summary))

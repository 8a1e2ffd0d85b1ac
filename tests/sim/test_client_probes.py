"""The clients' time series: consumer-group lag, producer backlog, the Burrow pool, errors."""

from __future__ import annotations

import functools
import math

import pyarrow as pa
import pyarrow.compute as pc

from apis import KafkaConfig
from cluster import Client, Cluster
from coordinator import OffsetConfig
from replica.types import TopicPartition
from sim.output import RunResult
from sim.runner import run_scenario
from sim.world.client_probes import group_lag
from tests.sim.world_scenarios import small_scenario

TP = TopicPartition("events", 0)


def _series(samples: pa.Table, source: str, metric: str) -> dict[int, float]:
    mask = pc.and_(
        pc.equal(samples.column("source"), source), pc.equal(samples.column("metric"), metric)
    )
    rows = samples.filter(mask)
    return dict(zip(rows.column("time_us").to_pylist(), rows.column("value").to_pylist(),
                    strict=True))  # fmt: skip


def test_group_lag_is_the_log_end_minus_the_committed_offset() -> None:
    config = KafkaConfig(offsets=OffsetConfig(offsets_topic_num_partitions=5))
    cluster = Cluster(3, config=config)
    cluster.create_topic("events", 1, 3)
    client = Client(cluster)
    client.produce(TP, [b"x"] * 5, acks=1)
    cluster.run_until_idle()
    assert group_lag(cluster, "g", TP) == 5  # nothing committed: counted from the log start
    commit = client.commit("g", {TP: 3})
    cluster.advance(1000)  # the commit's acks=all append waits for a follower fetch
    assert commit.done
    assert group_lag(cluster, "g", TP) == 2
    cluster.stop_broker(cluster.coordinator("g"))  # the new coordinator loads the group
    assert group_lag(cluster, "g", TP) == 2
    for broker_id in sorted(cluster.controller.live_brokers):
        cluster.stop_broker(broker_id)
    assert math.isnan(group_lag(cluster, "g", TP))  # no leader, no coordinator: unknown


@functools.cache
def _crashed_consumer_run() -> RunResult:
    """The Burrow consumer crashes at 1.2 s and stays down: its group's commits stop."""
    return run_scenario(
        small_scenario(faults=[{"type": "consumer_crash", "consumer": "burrow", "at": "1200ms"}])
    )


def test_the_world_samples_the_group_lag_of_every_partition() -> None:
    run = _crashed_consumer_run()
    messages = run.messages
    for partition in range(3):
        lag = _series(run.timeseries, f"burrow:events-{partition}", "group_lag")
        assert lag[0] == 0
        rows = messages.filter(pc.equal(messages.column("partition"), partition)).to_pylist()
        committed = 1 + max(r["offset"] for r in rows if r["committed_us"] is not None)
        for time_us in (2_000_000, 2_500_000, 2_900_000):
            acked_since = sum(
                1 for r in rows
                if r["acked_us"] is not None and r["acked_us"] <= time_us
                and r["offset"] >= committed
            )  # fmt: skip
            # The leader's log end runs ahead of the acknowledgements by the appends whose
            # acks=all response is still on its way (a few ms at 200 msg/s).
            assert 0 <= lag[time_us] - acked_since <= 2, (partition, time_us)
        assert lag[2_900_000] > 100  # nobody commits: the lag grows with the log


def test_producer_backlog_and_cumulative_produce_errors() -> None:
    run = run_scenario(
        small_scenario(
            "producers[0].rate=1000",
            faults=[{"type": "broker_failure", "broker": 1, "at": "1s", "duration": "500ms"}],
        )
    )
    samples = run.timeseries
    backlog = _series(samples, "producer-0", "producer_backlog")
    buffered = _series(samples, "producer-0", "producer_buffered")
    assert all(0 <= buffered[t] <= backlog[t] for t in backlog)
    assert max(backlog.values()) > 0
    errors = _series(samples, "producer-0", "produce_errors")
    failed = [
        r["completed_us"] for r in run.requests.to_pylist()
        if r["client"] == "producer-0" and r["api"] == "Produce" and r["error"] != 0
    ]  # fmt: skip
    for time_us, value in errors.items():
        # A response at the sampling time itself may come before or after the sample.
        assert sum(t < time_us for t in failed) <= value <= sum(t <= time_us for t in failed)
    assert errors[900_000] == 0 < errors[2_900_000]
    commit_errors = _series(samples, "burrow", "commit_errors")
    assert list(commit_errors.values()) == sorted(commit_errors.values())  # cumulative


def test_the_burrow_pool_queue_fills_when_its_workers_cannot_keep_up() -> None:
    def pool(workers: int) -> tuple[dict[int, float], dict[int, float]]:
        run = run_scenario(
            small_scenario(
                "producers[0].rate=2000",
                f"burrow.num_workers={workers}",
                "burrow.processing_time.mean=1200us",
                "burrow.job_queue_size=100",
            )
        )
        return (
            _series(run.timeseries, "burrow", "pool_queue_depth"),
            _series(run.timeseries, "burrow", "pool_in_flight"),
        )

    queue, in_flight = pool(2)  # 2 workers, 1.2 ms each: 1,667 msg/s for 2,000 msg/s
    assert queue[2_900_000] == 100 and in_flight[2_900_000] == 2
    queue, in_flight = pool(4)  # rho 0.6
    assert max(queue.values()) < 50 and max(in_flight.values()) <= 4

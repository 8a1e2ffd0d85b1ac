"""Validation (validation.md): the Burrow worker pool behind an instantaneous broker is an
M/M/c queue, so its mean wait in queue must match Erlang C's Wq within the confidence
interval of independent replications; resequencing and commit delays are never negative,
and resequencing is zero with one worker."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import attrs
import pytest

from replica.types import TopicPartition
from sim.clients.burrow import BurrowConfig, BurrowConsumer
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.events import (
    InMemoryRecorder,
    MessageCommittable,
    MessageCommitted,
    MessageProcessed,
    ProcessingOutcome,
)
from sim.clients.records import make_record
from sim.clients.workload import arrival_times
from sim.core.distributions import Exponential
from sim.core.engine import Simulator
from sim.core.queueing import mmc_mean_wait
from sim.core.statistics import mean_confidence_interval
from tests.sim.clients.fake_cluster import FakeCluster

T0 = TopicPartition("t", 0)
MEAN_SERVICE_US = 10_000  # mu = 100 per second
CONSUMER = ConsumerConfig(group_id="g", enable_auto_commit=False, auto_offset_reset="earliest")


@attrs.frozen
class Replication:
    mean_wait_us: float
    resequencing_us: list[int]
    commit_latency_us: list[int]


def replicate(workers: int, rho: float, seed: int, messages: int, warmup: int) -> Replication:
    """One independent run: Poisson arrivals straight into the broker's log (no network
    latency), exponential processing; returns the mean wait of messages after ``warmup``."""
    sim = Simulator(seed)
    cluster = FakeCluster(sim, {"t": 1}, latency_us=0)
    recorder = InMemoryRecorder()
    config = BurrowConfig(
        num_workers=workers,
        job_queue_size=10**9,
        commit_interval_ms=200,
        processing_time=Exponential(mean=MEAN_SERVICE_US),
    )
    pool = BurrowConsumer(
        sim,
        cluster,
        cluster,
        config,
        CONSUMER,
        partitions=[T0],
        rng=sim.rng("burrow"),
        recorder=recorder,
    )
    pool.start()
    rate = rho * workers * 1_000_000 / MEAN_SERVICE_US
    times: Iterator[int] = arrival_times("poisson", rate, sim.rng("arrivals"))

    def arrive(message_id: int) -> None:
        cluster.append(T0, (make_record(message_id, None, 100),))
        if message_id + 1 < messages:
            sim.call_at(next(times), lambda: arrive(message_id + 1))

    sim.call_at(next(times), lambda: arrive(0))
    sim.run_until(int(messages / rate * 1_000_000) + 5_000_000)
    processed = {
        e.message_id: e for e in recorder.of_type(MessageProcessed)
        if e.outcome is ProcessingOutcome.OK
    }  # fmt: skip
    assert len(processed) == messages
    waits = [processed[m].started_us - processed[m].submitted_us for m in range(warmup, messages)]
    return Replication(
        statistics.fmean(waits),
        [e.time_us - processed[e.message_id].time_us for e in recorder.of_type(MessageCommittable)],
        [e.time_us - processed[e.message_id].time_us for e in recorder.of_type(MessageCommitted)],
    )


@pytest.mark.parametrize(
    ("workers", "rho", "messages"),
    [(1, 0.5, 1200), (4, 0.7, 2000), (10, 0.8, 2500)],
)
def test_worker_pool_reproduces_erlang_c_mean_wait(workers: int, rho: float, messages: int) -> None:
    """8 replications per point (about 5 s of CPU for the three points), 10% warm-up
    discarded, a 95% Student-t interval; a correct model misses a given point with
    probability 0.05 over seeds, and the seeds are fixed, so the test is deterministic."""
    runs = [replicate(workers, rho, seed, messages, messages // 10) for seed in range(8)]
    ci = mean_confidence_interval([r.mean_wait_us for r in runs], level=0.95)
    mu = 1_000_000 / MEAN_SERVICE_US
    expected_us = mmc_mean_wait(workers, rho * workers * mu, mu) * 1_000_000
    assert ci.contains(expected_us), f"Wq {expected_us:.0f} us outside {ci}"
    assert ci.half_width < 0.35 * expected_us  # the interval is tight enough to mean something
    for run in runs:
        assert min(run.resequencing_us) >= 0
        assert min(run.commit_latency_us) >= 0
        if workers == 1:
            assert max(run.resequencing_us) == 0  # one worker finishes in arrival order
        else:
            assert max(run.resequencing_us) > 0

"""The Burrow pool's batch schedule gives exactly the per-event pool's times and commits.

Both paths run the same workload with the same processing durations, read in job order from a
column, so they draw the same numbers: ``batch_schedule=False`` simulates every job as events,
the default computes each batch's FIFO c-worker schedule at once and reports it lazily.

Observers (commit ticks, commit responses, the crash) see what happened strictly before their
time; at an exact tie the per-event pool's order depends on when each event was scheduled. The
workload keeps ties out: every outside event falls on a whole millisecond and every duration is
1 us past one, so a job finishes on a whole millisecond only after 1000 jobs in a row.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from functools import partial

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from replica.types import TopicPartition
from sim.clients.burrow import BurrowConfig, BurrowConsumer
from sim.clients.burrow.schedule import BatchSchedule
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.events import (
    CommitCompleted,
    ConsumerHalted,
    InMemoryRecorder,
    MessageCommittable,
    MessageCommitted,
    MessageProcessed,
)
from sim.clients.records import make_record
from sim.core.draws import Sampler
from sim.core.engine import Simulator
from tests.sim.clients.fake_cluster import FakeCluster

MS = 1000
PARTITIONS = (TopicPartition("t", 0), TopicPartition("t", 1))
CONSUMER = ConsumerConfig(group_id="g", enable_auto_commit=False, auto_offset_reset="earliest")


@attrs.frozen
class Column:
    """A processing-time "distribution" that reads the next value of a column."""

    values: Iterator[int]
    distribution: str = "column"

    def sampler(self, rng: random.Random) -> Sampler:
        return ColumnSampler(self.values)


class ColumnSampler(Sampler):
    def __init__(self, values: Iterator[int]) -> None:
        self.values = values

    def draw(self) -> int:
        return next(self.values)


@attrs.frozen
class Workload:
    workers: int
    queue: int
    interval_ms: int
    commit_delay_ms: int
    committed_range: str
    durations: list[int]
    arrivals: list[tuple[int, int, int]]  # (ms, partition, messages)
    stop_ms: int | None
    close: bool


workloads = st.builds(
    Workload,
    workers=st.integers(1, 4),
    queue=st.integers(0, 6),
    interval_ms=st.integers(1, 30),
    commit_delay_ms=st.integers(0, 5),
    committed_range=st.sampled_from(["recomputed", "payload"]),
    durations=st.lists(st.integers(0, 12).map(lambda ms: ms * MS + 1), min_size=1, max_size=50),
    arrivals=st.lists(
        st.tuples(st.integers(0, 100), st.integers(0, 1), st.integers(1, 8)), max_size=15
    ),
    stop_ms=st.none() | st.integers(1, 200),
    close=st.booleans(),
)


def run(workload: Workload, *, batch_schedule: bool) -> tuple[InMemoryRecorder, BurrowConsumer]:
    sim = Simulator(7)
    cluster = FakeCluster(
        sim, {"t": 2}, latency_us=MS, commit_delay_us=workload.commit_delay_ms * MS
    )
    recorder = InMemoryRecorder()
    config = BurrowConfig(
        num_workers=workload.workers,
        job_queue_size=workload.queue,
        commit_interval_ms=workload.interval_ms,
        committed_range=workload.committed_range,  # type: ignore[arg-type]
        processing_time=Column(itertools.cycle(workload.durations)),  # type: ignore[arg-type]
    )
    pool = BurrowConsumer(
        sim, cluster, cluster, config, CONSUMER, partitions=PARTITIONS, rng=sim.rng("b"),
        recorder=recorder, batch_schedule=batch_schedule,
    )  # fmt: skip
    pool.start()
    ids = itertools.count(1)

    def produce(partition: int, count: int) -> None:
        records = tuple(make_record(next(ids), None, 10) for _ in range(count))
        cluster.append(PARTITIONS[partition], records)

    for at_ms, partition, count in workload.arrivals:
        sim.call_at(at_ms * MS, partial(produce, partition, count))
    if workload.stop_ms is not None:
        sim.call_at(workload.stop_ms * MS, pool.close if workload.close else pool.crash)
    sim.run_until(400 * MS)
    pool.flush()
    return recorder, pool


def outcome(recorder: InMemoryRecorder, pool: BurrowConsumer) -> dict[str, object]:
    """What must agree: per message its processing times and committable time, the commits,
    what they covered, the halt, and the pool's counters."""
    processed = sorted(
        (e.message_id, e.submitted_us, e.started_us, e.time_us)
        for e in recorder.of_type(MessageProcessed)
    )
    committable = sorted((e.message_id, e.time_us) for e in recorder.of_type(MessageCommittable))
    commits = [
        (e.started_us, e.time_us, e.offsets, e.trigger) for e in recorder.of_type(CommitCompleted)
    ]
    committed = sorted((e.message_id, e.time_us) for e in recorder.of_type(MessageCommitted))
    halted = [(e.time_us, e.reason) for e in recorder.of_type(ConsumerHalted)]
    return {
        "processed": processed,
        "committable": committable,
        "commits": commits,
        "committed": committed,
        "halted": halted,
        "counters": (pool.processed, pool.commits),
        # the pool's gauges mean nothing once it has stopped (the probes read 0 then)
        "gauges": None if pool.stopped else (pool.in_flight, pool.queued_jobs, pool.busy_workers),
    }


@settings(max_examples=200, deadline=None)
@given(workload=workloads)
def test_the_batch_schedule_matches_the_per_event_pool(workload: Workload) -> None:
    by_events = outcome(*run(workload, batch_schedule=False))
    by_batches = outcome(*run(workload, batch_schedule=True))
    assert by_batches == by_events


def test_the_workload_exercises_backpressure_and_the_batch_path() -> None:
    """One blocking example, checked to take the batch path and to block the poll loop."""
    workload = Workload(1, 1, 5, 1, "recomputed", [3 * MS + 1], [(0, 0, 6), (1, 1, 4)], None, False)
    recorder, pool = run(workload, batch_schedule=True)
    assert isinstance(pool._schedule, BatchSchedule)
    processed = sorted(recorder.of_type(MessageProcessed), key=lambda e: e.message_id)
    assert len(processed) == 10
    assert (
        max(e.started_us - e.submitted_us for e in processed) > 3 * MS
    )  # waited behind a full queue
    assert outcome(recorder, pool) == outcome(*run(workload, batch_schedule=False))


def test_the_schedule_is_a_fifo_queue_in_front_of_c_workers() -> None:
    schedule = BatchSchedule(num_workers=2, job_queue_size=1)
    tp = PARTITIONS[0]
    free_at = schedule.submit(0, [tp] * 4, [0, 1, 2, 3], [10, 11, 12, 13], [5, 3, 4, 1])
    assert schedule.started == [0, 0, 3, 5]
    assert schedule.finished == [5, 3, 7, 6]
    assert schedule.entered == [0, 0, 0, 3]  # job 3 waits for job 2 to leave the channel
    assert schedule.ready == [5, 5, 7, 7]
    assert free_at == 3
    assert schedule.advance(5) == (0, 0)  # strictly before 5: nothing
    assert schedule.advance(5, inclusive=True) == (0, 2)
    plan = schedule.plan()
    assert plan.offsets == {tp: 1} and plan.message_count == 2
    plan.mark_committed()
    assert schedule.committed == 2 and schedule.plan().empty

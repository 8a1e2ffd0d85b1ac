"""A tiny deterministic stand-in world for sweep tests, and a run function built on it.

It reads the same scenario knobs as the real cluster (the first producer's ``rate``,
``network.client_broker``, ``cluster.request_local_time`` and ``[burrow]``'s
``num_workers``, ``commit_interval_ms`` and ``processing_time``) and reports through the real
:class:`~sim.output.MetricsRecorder`, so a sweep of it goes through the real
``run_scenario``, summary and table code: Poisson sends, produce latency = two network hops
+ broker time, delivery one hop later, a FIFO pool of workers, and Burrow-style commits of
the longest processed prefix on a ticker. One commit in ten fails with
COORDINATOR_NOT_AVAILABLE and one message in five hundred is delivered twice, so duplicates
and commit failures are non-zero. A pool of fewer than four workers gives a warning (the run
summary lists it), so sweeps of it have runs with and without warnings. All randomness comes
from the simulator's seeded streams.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sim.core.engine import Simulator, every
from sim.output import REQUESTS_SCHEMA, MetricsRecorder
from sim.scenario import Scenario
from sim.sweep.simulate import simulate

COMMIT_FAILURE_PROBABILITY = 0.1
REDELIVERY_PROBABILITY = 0.002
COORDINATOR_NOT_AVAILABLE = 15


def fake_world(sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> None:
    """Schedule the stand-in world's events on ``sim`` (see the module docstring)."""
    producer = scenario.producers[0]
    burrow = scenario.burrow
    assert burrow is not None, "the fake world needs a [burrow] section"
    network, broker = scenario.network.client_broker, scenario.cluster.request_local_time
    sends, links, work, faults = (sim.rng(name) for name in ("sends", "links", "work", "faults"))
    processed: set[int] = set()
    queue: collections.deque[int] = collections.deque()
    idle = [burrow.num_workers]
    committed = [0]  # every message id below this is committed
    sent = [0]

    def send() -> None:
        message_id = sent[0]
        sent[0] += 1
        recorder.message_sent(message_id, sim.now, "producer-0", producer.topic)
        at_leader = sim.now + network.sample(links) + broker.sample(links)
        acked = at_leader + network.sample(links)
        sim.call_at(acked, lambda: recorder.message_acked(message_id, sim.now, 0, message_id))
        delivered = acked + network.sample(links)
        sim.call_at(delivered, lambda: deliver(message_id))
        sim.call_later(max(1, round(sends.expovariate(producer.rate) * 1e6)), send)

    def deliver(message_id: int) -> None:
        recorder.message_delivered(message_id, sim.now)
        if faults.random() < REDELIVERY_PROBABILITY:
            recorder.message_delivered(message_id, sim.now)
        queue.append(message_id)
        start_work()

    def start_work() -> None:
        while idle[0] and queue:
            idle[0] -= 1
            message_id = queue.popleft()
            sim.call_later(
                burrow.processing_time.sample(work), functools.partial(finish, message_id)
            )

    def finish(message_id: int) -> None:
        recorder.message_processed(message_id, sim.now)
        processed.add(message_id)
        idle[0] += 1
        start_work()

    def commit() -> None:
        upto = committed[0]
        while upto in processed:
            upto += 1
        if upto == committed[0]:
            return
        sent_at, first = sim.now, committed[0]
        done = sent_at + network.sample(links) * 2 + broker.sample(links)
        failed = faults.random() < COMMIT_FAILURE_PROBABILITY
        error = COORDINATOR_NOT_AVAILABLE if failed else 0

        def completed() -> None:
            recorder.request_completed("OffsetCommit", 0, "burrow", sent_at, sim.now, error=error)
            if not failed and committed[0] == first:
                for message_id in range(first, upto):
                    recorder.message_committed(message_id, sim.now)
                committed[0] = upto

        sim.call_at(done, completed)

    sim.call_at(0, send)
    every(sim, burrow.commit_interval_ms * 1000, commit)
    if burrow.num_workers < 4:
        recorder.warn(f"stand-in warning: only {burrow.num_workers} workers")


run_point = functools.partial(simulate, build_world=fake_world)
"""The sweep run function of the stand-in world (``tests.sim.sweep.fake_world:run_point``)."""


def failing(
    table: Mapping[str, Any], overrides: Mapping[str, Any], seed: int, duration_s: float | None
) -> dict[str, pa.Table]:
    """A run function that cannot run (as a broken user-supplied one would)."""
    raise RuntimeError("this run function always fails")


def no_messages(
    table: Mapping[str, Any], overrides: Mapping[str, Any], seed: int, duration_s: float | None
) -> dict[str, pa.Table]:
    """A broken run function: its result lacks the required ``messages`` table."""
    return {"requests": REQUESTS_SCHEMA.empty_table()}

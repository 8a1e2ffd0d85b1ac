"""A tiny deterministic stand-in world for sweep tests, and a run function built on it.

It reads the same scenario knobs as the real cluster (the first producer's ``rate``,
``network.client_broker``, ``cluster.request_local_time`` and ``[burrow]``'s
``num_workers``, ``commit_interval_ms`` and ``processing_time``) and reports through the real
:class:`~sim.output.MetricsRecorder`, so a sweep of it goes through the real
``run_scenario``, summary and table code: Poisson sends, produce latency = two network hops
+ broker time, delivery one hop later, a FIFO pool of workers, and Burrow-style commits of
the longest processed prefix on a ticker. One commit in ten fails with
COORDINATOR_NOT_AVAILABLE and one message in five hundred is delivered twice, so duplicates
and commit failures are non-zero. Its final log (reported when the run ends) lacks one
acknowledged message in a hundred and holds one in three hundred twice, so the loss counts are
non-zero too. A pool of fewer than four workers gives a warning (the run
summary lists it), so sweeps of it have runs with and without warnings. All randomness comes
from the simulator's seeded streams.
"""

from __future__ import annotations

import collections
import functools
import os
import signal
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from sim.core.engine import Simulator, every
from sim.output import REQUESTS_SCHEMA, MetricsRecorder
from sim.scenario import Scenario
from sim.sweep.simulate import simulate

COMMIT_FAILURE_PROBABILITY = 0.1
REDELIVERY_PROBABILITY = 0.002
LOST_EVERY = 100  # message ids divisible by this are absent from the final log
DOUBLED_EVERY = 150  # ... and by this (not by LOST_EVERY) appear twice
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

    def final_log() -> None:
        kept = [i for i in range(sent[0]) if i % LOST_EVERY]
        kept += [i for i in kept if i % DOUBLED_EVERY == 0]
        recorder.final_log(producer.topic, 0, 0, kept)

    sim.call_at(0, send)
    every(sim, burrow.commit_interval_ms * 1000, commit)
    recorder.producer_acks("producer-0", producer.acks)
    recorder.at_run_end(final_log)
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


# -- run functions that misbehave at some (point, seed) of tiny.toml --------------------------
# tiny.toml's points: 0 = (2 workers, 20 ms), 1 = (2, 100 ms), 2 = (8, 20 ms), 3 = (8, 100 ms).


def is_run(overrides: Mapping[str, Any], seed: int, point: int, at_seed: int) -> bool:
    """Whether ``overrides`` and ``seed`` are tiny.toml's run (``point``, ``at_seed``)."""
    workers, interval = ((2, 20), (2, 100), (8, 20), (8, 100))[point]
    knobs = (overrides.get("burrow.num_workers"), overrides.get("burrow.commit_interval_ms"))
    return knobs == (workers, interval) and seed == at_seed


def troubled(
    table: Mapping[str, Any], overrides: Mapping[str, Any], seed: int, duration_s: float | None
) -> dict[str, pa.Table]:
    """Raises at point 3 seed 2; never ends at point 0 seed 1 (swallowing every Exception, as
    a simulated component may); runs normally elsewhere."""
    if is_run(overrides, seed, 3, 2):
        raise RuntimeError("boom at point 3 seed 2")
    while is_run(overrides, seed, 0, 1):
        try:
            time.sleep(0.01)
        except Exception:  # the point: a time limit must get through this
            continue
    return run_point(table, overrides, seed, duration_s)


def crashing(
    table: Mapping[str, Any], overrides: Mapping[str, Any], seed: int, duration_s: float | None
) -> dict[str, pa.Table]:
    """Kills its own Python worker at point 2 seed 2 every time, and at point 1 seed 1 the
    first time only (it leaves a marker file in the folder the scenario's description names);
    runs normally elsewhere."""
    if is_run(overrides, seed, 2, 2):
        os.kill(os.getpid(), signal.SIGKILL)
    marker = Path(str(table["description"])) / "crashed-once"
    if is_run(overrides, seed, 1, 1) and not marker.exists():
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return run_point(table, overrides, seed, duration_s)


def jvm_of(pid: int) -> int:
    """The nearest ancestor of process ``pid`` that is a java process (Linux /proc)."""
    while pid > 1:
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
            return pid
    raise RuntimeError("no java process among the ancestors")


KILL_JVM = "SIM_TEST_KILL_JVM"


def jvm_killing(
    table: Mapping[str, Any], overrides: Mapping[str, Any], seed: int, duration_s: float | None
) -> dict[str, pa.Table]:
    """With the environment variable ``SIM_TEST_KILL_JVM`` set, kills the Spark JVM at point 3
    (after the other points had time to finish); otherwise, and elsewhere, runs normally."""
    if os.environ.get(KILL_JVM) and is_run(overrides, seed, 3, 1):
        time.sleep(3)
        os.kill(jvm_of(os.getpid()), signal.SIGKILL)
        time.sleep(60)
    return run_point(table, overrides, seed, duration_s)


INTERRUPT_DRIVER = "SIM_TEST_INTERRUPT_DRIVER"


def driver_interrupting(
    table: Mapping[str, Any], overrides: Mapping[str, Any], seed: int, duration_s: float | None
) -> dict[str, pa.Table]:
    """With the environment variable ``SIM_TEST_INTERRUPT_DRIVER`` set, sends SIGINT to the
    sweep's driver process (the Spark JVM's parent) at point 3 and keeps running, as a run
    still busy when someone interrupts the driver alone; otherwise runs normally."""
    if os.environ.get(INTERRUPT_DRIVER) and is_run(overrides, seed, 3, 1):
        jvm = jvm_of(os.getpid())
        driver = int(Path(f"/proc/{jvm}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(driver, signal.SIGINT)
        time.sleep(60)
    return run_point(table, overrides, seed, duration_s)


def logged(
    log_dir: Path,
    table: Mapping[str, Any],
    overrides: Mapping[str, Any],
    seed: int,
    duration_s: float | None,
) -> dict[str, pa.Table]:
    """:data:`run_point`, leaving a file per run in ``log_dir`` (bind it with a partial)."""
    tag = "-".join(f"{value}" for value in overrides.values())
    (log_dir / f"{tag}-seed-{seed}-{uuid.uuid4().hex}").touch()
    return run_point(table, overrides, seed, duration_s)

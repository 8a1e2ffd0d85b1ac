"""Memory of long runs: peak RSS against the simulated duration, with and without retention.

``python -m sim.bench.memory [--durations 10s,20s] [--scenario default] [--json]`` runs the
scenario for each duration in a fresh Python process (so each peak is its own), once as it is
and once with log retention on (:data:`RETENTION`: 1 MiB segments, 4 MiB kept per partition,
checked every second), and reports per run the peak resident set size, the simulated messages,
the bytes the brokers' logs hold at the end (``log_bytes``, Kafka's sizes) and the records they
hold (``log_records``). From the two durations it derives the growth of the peak per simulated
message: what a longer run costs. With retention the logs stop growing; what still grows is
the run's per-message measurements (the recorder's columns).

:func:`live_bytes_per_message` (reported by ``python -m sim bench`` as ``bytes_per_message``)
counts with tracemalloc instead: the bytes still allocated at the end of one run, per message.

The baseline is the same scenario without retention, in the same invocation; the numbers are
ratios and differences of runs made one after another on one machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import tracemalloc
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.output import RunResult
    from sim.scenario import Scenario
    from sim.world import World

__all__ = ["RETENTION", "live_bytes_per_message", "main", "measure", "retained_log"]

RETENTION = (
    "cluster.log_segment_bytes=1MiB",
    "cluster.log_retention_bytes=4MiB",
    "cluster.log_retention_check_interval_ms=1s",
)
"""The ``--set`` overrides that turn retention on for the measurement."""


def retained_log(world: World) -> tuple[int, int]:
    """``(bytes, records)`` the brokers of ``world`` (a :class:`sim.world.World`) hold in their
    partition logs, every replica counted."""
    size = records = 0
    for broker in world.cluster.brokers.values():
        for partition in broker.replica_manager.partitions.values():
            log = partition.log
            size += log.size_in_bytes
            records += log.log_end_offset - log.segments[0].base_offset
    return size, records


def _run_keeping_world(scenario: Scenario) -> tuple[RunResult, World]:
    """Run ``scenario``; return its result and its world (kept to look at the brokers)."""
    from sim.core.engine import Simulator
    from sim.output import MetricsRecorder
    from sim.runner import run_scenario
    from sim.world import World as WorldClass

    worlds: list[World] = []

    def build(sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> World:
        worlds.append(WorldClass(sim, scenario, recorder))
        return worlds[0]

    return run_scenario(scenario, build=build), worlds[0]


def _child(scenario_name: str, duration: str, overrides: Sequence[str]) -> None:
    """Run one measurement in this process and print it as JSON (the parent's subprocess)."""
    from sim.scenario import load_scenario, with_overrides

    scenario = with_overrides(
        load_scenario(scenario_name), [*overrides, f"simulation.duration={duration}"]
    )
    run, world = _run_keeping_world(scenario)
    log_bytes, log_records = retained_log(world)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "messages": run.summary["messages"]["sent"],
        "peak_rss_bytes": peak_kib * 1024,
        "log_bytes": log_bytes,
        "log_records": log_records,
    }))  # fmt: skip


def measure(scenario: str, duration: str, overrides: Sequence[str]) -> dict[str, int]:
    """One run in a fresh process: messages, peak RSS, log bytes and records at the end."""
    command = [sys.executable, "-m", "sim.bench.memory", "--child", scenario, duration, *overrides]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result: dict[str, int] = json.loads(output.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["--child"]:
        _child(arguments[1], arguments[2], arguments[3:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m sim.bench.memory", description=__doc__)
    parser.add_argument("--scenario", default="default")
    parser.add_argument("--durations", default="10s,20s", help="two or more, e.g. 10s,20s")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    options = parser.parse_args(arguments)
    durations = options.durations.split(",")
    for label, overrides in (("no retention", ()), ("retention", RETENTION)):
        runs = [measure(options.scenario, d, overrides) for d in durations]
        first, last = runs[0], runs[-1]
        growth = (last["peak_rss_bytes"] - first["peak_rss_bytes"]) / max(
            1, last["messages"] - first["messages"]
        )
        record = {"config": label, "durations": durations, "runs": runs,
                  "peak_growth_bytes_per_message": round(growth, 1)}  # fmt: skip
        if options.json:
            print(json.dumps(record))
            continue
        print(f"{label}: peak growth {growth:.0f} bytes per simulated message")
        for duration, run in zip(durations, runs, strict=True):
            print(
                f"  {duration:>6}: {run['messages']:>9} messages, peak RSS "
                f"{run['peak_rss_bytes'] / 2**20:7.1f} MiB, logs {run['log_bytes'] / 2**20:7.1f}"
                f" MiB in {run['log_records']} records"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def live_bytes_per_message(scenario: Scenario) -> float:
    """Run ``scenario`` under tracemalloc; return the bytes still allocated when it has ended
    (the world, its logs and the recorder still alive, the result's tables built) per message
    sent. What a longer run keeps per message; tracemalloc makes the run several times slower.
    """
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run, _world = _run_keeping_world(scenario)
        gc.collect()
        live = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    sent: int = run.summary["messages"]["sent"]
    return live / max(1, sent)

"""Memory of long runs: peak RSS against the simulated duration, per phase of the run.

``python -m sim.bench.memory [--durations 10s,20s] [--scenario default] [--configs retention]
[--json]`` runs the scenario for each duration in a fresh Python process (so each peak is its
own), once as it is (``no-retention``) and once with log retention on (``retention``:
:data:`RETENTION`, 1 MiB segments, 4 MiB kept per partition, checked every second), and
reports per run the simulated messages, the bytes the brokers' logs hold at the end
(``log_bytes``, Kafka's sizes) and the records they hold (``log_records``), and per phase of
the run (:data:`sim.runner.PHASES`, then ``write``: the run directory without plots) the
resident set size at its end (``live``) and its peak while it ran (``peak``: the kernel's
high-water mark, reset as each phase starts through ``/proc/self/clear_refs``; on a system
without it, the process's peak so far). From the first and last durations it derives, per
phase, how much a simulated message adds to the peak and to what stays resident: what a
longer run costs. With retention the logs stop growing; what still grows is the run's
per-message measurements (the recorder's columns, then the tables).

:func:`live_bytes_per_message` (reported by ``python -m sim bench`` as ``bytes_per_message``)
counts with tracemalloc instead: the bytes still allocated at the end of one run, per message.

The baseline is the same scenario without retention, in the same invocation; the numbers are
differences of runs made one after another on one machine. The scenario's size limits are
lifted (``simulation.allow_large``): a 10-minute default run sends 6 million messages.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import resource
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.output import RunResult
    from sim.scenario import Scenario
    from sim.world import World

__all__ = ["CONFIGS", "RETENTION", "live_bytes_per_message", "main", "measure", "retained_log"]

RETENTION = (
    "cluster.log_segment_bytes=1MiB",
    "cluster.log_retention_bytes=4MiB",
    "cluster.log_retention_check_interval_ms=1s",
)
"""The ``--set`` overrides that turn retention on for the measurement."""

CONFIGS: dict[str, tuple[str, ...]] = {"no-retention": (), "retention": RETENTION}
"""The configurations measured, by name: their ``--set`` overrides."""


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


class _PhaseMemory:
    """Resident set size per phase: at its end, and its peak (see the module docstring)."""

    def __init__(self) -> None:
        self.phases: dict[str, dict[str, int]] = {}
        self._resettable = self._reset_peak()

    @staticmethod
    def _reset_peak() -> bool:
        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            return False
        return True

    @staticmethod
    def _status(field: str) -> int | None:
        try:
            status = Path("/proc/self/status").read_text()
        except OSError:
            return None
        match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
        return None if match is None else int(match.group(1)) * 1024

    def ended(self, phase: str) -> None:
        """``phase`` ended: record its memory and start the next phase's peak."""
        fallback = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        peak = self._status("VmHWM") if self._resettable else None
        live = self._status("VmRSS")
        self.phases[phase] = {
            "live": fallback if live is None else live,
            "peak": fallback if peak is None else peak,
        }
        self._reset_peak()


def _child(scenario_name: str, duration: str, overrides: Sequence[str]) -> None:
    """Run one measurement in this process and print it as JSON (the parent's subprocess)."""
    from sim.core.engine import Simulator
    from sim.output import MetricsRecorder
    from sim.runner import run_scenario
    from sim.scenario import load_scenario, with_overrides
    from sim.world import World as WorldClass

    scenario = with_overrides(
        load_scenario(scenario_name),
        [*overrides, f"simulation.duration={duration}", "simulation.allow_large=true"],
    )
    memory = _PhaseMemory()
    logs: list[tuple[int, int]] = []

    def build(sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> World:
        world = WorldClass(sim, scenario, recorder)
        recorder.at_run_end(lambda: logs.append(retained_log(world)))
        return world

    run = run_scenario(scenario, build=build, on_phase=memory.ended)
    with tempfile.TemporaryDirectory() as out:
        run.write(out, plots=False)
        memory.ended("write")
    log_bytes, log_records = logs[0]
    print(json.dumps({
        "messages": run.summary["messages"]["sent"],
        "peak_rss_bytes": max(phase["peak"] for phase in memory.phases.values()),
        "phases": memory.phases,
        "log_bytes": log_bytes,
        "log_records": log_records,
    }))  # fmt: skip


def measure(scenario: str, duration: str, overrides: Sequence[str]) -> dict[str, Any]:
    """One run in a fresh process: messages, peak RSS, per-phase live and peak RSS, log
    bytes and records at the end."""
    command = [sys.executable, "-m", "sim.bench.memory", "--child", scenario, duration, *overrides]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"the {duration} run failed: {last}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def growth(first: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """Bytes per simulated message from run ``first`` to run ``last``: of the peak over the
    run, and per phase of its peak and of what stays resident at its end."""
    per = max(1, last["messages"] - first["messages"])
    phases = {
        name: {
            key: round((last["phases"][name][key] - first["phases"][name][key]) / per, 1)
            for key in ("live", "peak")
        }
        for name in last["phases"]
    }
    peak = round((last["peak_rss_bytes"] - first["peak_rss_bytes"]) / per, 1)
    return {"peak_growth_bytes_per_message": peak, "phases_bytes_per_message": phases}


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["--child"]:
        _child(arguments[1], arguments[2], arguments[3:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m sim.bench.memory", description=__doc__)
    parser.add_argument("--scenario", default="default")
    parser.add_argument("--durations", default="10s,20s", help="one or more, e.g. 10s,20s")
    parser.add_argument(
        "--configs", default=",".join(CONFIGS), help=f"some of {', '.join(CONFIGS)}"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    options = parser.parse_args(arguments)
    durations = options.durations.split(",")
    configs = options.configs.split(",")
    unknown = sorted(set(configs) - set(CONFIGS))
    if unknown:
        parser.error(f"--configs: unknown {', '.join(unknown)} (known: {', '.join(CONFIGS)})")
    for label in configs:
        runs = [measure(options.scenario, d, CONFIGS[label]) for d in durations]
        record = {"config": label, "durations": durations, "runs": runs}
        if len(runs) > 1:
            record.update(growth(runs[0], runs[-1]))
        if options.json:
            print(json.dumps(record))
            continue
        print(f"{label}:")
        if len(runs) > 1:
            print(f"  peak growth {record['peak_growth_bytes_per_message']:.0f} bytes per message")
        for duration, run in zip(durations, runs, strict=True):
            print(
                f"  {duration:>6}: {run['messages']:>9} messages, peak RSS "
                f"{run['peak_rss_bytes'] / 2**20:7.1f} MiB, logs {run['log_bytes'] / 2**20:7.1f}"
                f" MiB in {run['log_records']} records"
            )
            for phase, memory in run["phases"].items():
                print(
                    f"          {phase:<9} live {memory['live'] / 2**20:7.1f} MiB, "
                    f"peak {memory['peak'] / 2**20:7.1f} MiB"
                )
        if len(runs) > 1:
            for phase, per in record["phases_bytes_per_message"].items():
                print(
                    f"  per message, {phase:<9} live {per['live']:+7.0f} B, "
                    f"peak {per['peak']:+7.0f} B"
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

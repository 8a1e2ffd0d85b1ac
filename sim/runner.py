"""Running a scenario: build the simulated world, drive the engine, return a :class:`RunResult`.

:func:`run_scenario` is the entry point for the CLI and for sweeps (one call per
(point, seed)). Building the world -- network, brokers with their request handler pools,
clients, faults -- is one function, :func:`build_cluster`; ``run_scenario`` takes another
builder for tests and experiments. :func:`load_run` reads a written run directory back into the
same :class:`RunResult` (for notebooks: its tables are also DataFrames, ``result.messages_df()``).
"""

from __future__ import annotations

import gc
import json
import logging
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from sim.core.engine import Simulator, every
from sim.output import MetricsRecorder, RunResult, summarize
from sim.output.result import PROXY_TABLE, FaultWindow
from sim.scenario import Fault, Scenario, load_scenario
from sim.world import World

__all__ = ["PHASES", "WorldBuilder", "build_cluster", "load_run", "run_scenario"]

_log = logging.getLogger(__name__)

PHASES = ("build", "simulate", "tables", "summary")
"""The phases of :func:`run_scenario`, in order, as its ``on_phase`` callback names them."""

WorldBuilder = Callable[[Simulator, Scenario, MetricsRecorder], object]
"""Creates everything a run simulates on ``sim``, reporting to the recorder. Registers
time-series probes with ``recorder.add_probe`` and schedules its own events."""

_STEP_US = 1_000_000  # one virtual second


def build_cluster(sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> World:
    """Build the simulated Kafka cluster of ``scenario`` on ``sim`` (a :class:`sim.world.World`):
    the network, the brokers running the real broker code behind their request handler pools,
    the controller, the topics and ``__consumer_offsets``, the clients, the faults and the
    probes of the brokers and the clients, reporting to ``recorder``."""
    return World(sim, scenario, recorder)


def run_scenario(
    scenario: Scenario,
    seed: int | None = None,
    *,
    progress: bool = False,
    build: WorldBuilder | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> RunResult:
    """Simulate ``scenario`` for ``scenario.simulation.duration`` and return the result.

    ``seed`` defaults to ``scenario.simulation.seed``; the same scenario and seed give the
    same result, byte for byte once written. ``progress`` shows a tqdm bar of virtual time on
    stderr when stderr is a terminal. ``build`` defaults to :func:`build_cluster` (looked up
    at call time). ``on_phase(name)``, if given, is called as each of :data:`PHASES` ends
    (a benchmark measures memory per phase with it). Exceptions of the builder or of a
    simulated component propagate.
    """
    phase_ended = on_phase or _ignore
    config = scenario.simulation
    run_seed = config.seed if seed is None else seed
    sim = Simulator(run_seed)
    recorder = MetricsRecorder()
    started = time.perf_counter()
    (build_cluster if build is None else build)(sim, scenario, recorder)
    every(sim, config.sample_interval, partial(_sample_probes, recorder, sim), first=0)
    phase_ended("build")
    _drive(sim, config.duration, progress)
    recorder.run_ended()
    events_processed = sim.events_processed
    del sim  # with it the world, its logs and clients (the recorder let go of its probes)
    gc.collect()
    phase_ended("simulate")
    wall_seconds = time.perf_counter() - started
    _log.info("simulated %g virtual s (seed %d): %d events in %.2f s", config.duration / 1e6,
              run_seed, events_processed, wall_seconds)  # fmt: skip
    messages, requests, timeseries = recorder.take_tables()
    proxy = recorder.more_tables(messages).get(PROXY_TABLE)
    warnings = recorder.warnings
    del recorder  # its columns are in the tables now
    phase_ended("tables")
    run = {
        "description": scenario.description,
        "seed": run_seed,
        "duration_us": config.duration,
        "warmup_us": config.warmup,
        "events_processed": events_processed,
    }
    summary = summarize(
        messages, requests, timeseries, run=run, warmup_us=config.warmup,
        duration_us=config.duration, warnings=warnings, proxy=proxy,
    )  # fmt: skip
    pa.default_memory_pool().release_unused()  # the summary's temporaries, for numpy to reuse
    phase_ended("summary")
    faults = tuple(_fault_window(fault) for fault in scenario.faults)
    return RunResult(
        messages, requests, timeseries, summary, wall_seconds=wall_seconds, faults=faults,
        proxy=proxy,
    )  # fmt: skip


def load_run(directory: str | Path) -> RunResult:
    """The :class:`RunResult` of the run directory ``directory`` (``sim run --out``, or
    :meth:`RunResult.write`), equal to the one that was written: its three tables (and the
    ``proxy`` table of a run with a consume proxy), its summary, and its fault windows when
    the directory has the ``scenario.toml`` that ``sim run`` writes (none without it).
    ``wall_seconds`` is not recorded and reads as 0.

    Raises FileNotFoundError naming the first missing file (and, for the directory of
    ``sim run --seeds``, the run directories it holds), and ScenarioError if the
    ``scenario.toml`` does not load.
    """
    run_dir = Path(directory)
    if (run_dir / "replications.json").is_file() and not (run_dir / "summary.json").exists():
        seeds = sorted(p.name for p in run_dir.glob("seed-*") if p.is_dir())
        raise FileNotFoundError(
            f"{run_dir} holds replications (sim run --seeds), not one run: load one of its run "
            f"directories ({', '.join(seeds)})"
        )
    messages, requests, timeseries = (
        pq.read_table(run_dir / f"{name}.parquet")
        for name in ("messages", "requests", "timeseries")
    )
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    proxy_file = run_dir / f"{PROXY_TABLE}.parquet"
    scenario_file = run_dir / "scenario.toml"
    faults = load_scenario(scenario_file).faults if scenario_file.is_file() else []
    return RunResult(
        messages, requests, timeseries, summary,
        faults=tuple(_fault_window(fault) for fault in faults),
        proxy=pq.read_table(proxy_file) if proxy_file.is_file() else None,
    )  # fmt: skip


def _sample_probes(recorder: MetricsRecorder, sim: Simulator) -> None:
    recorder.sample_probes(sim.now)


def _ignore(phase: str) -> None:
    """The default ``on_phase``."""


def _fault_window(fault: Fault) -> FaultWindow:
    """The window of ``fault`` for the plots, labelled with its type and target."""
    target = getattr(fault, "broker", None)
    who = f"broker {target}" if target is not None else getattr(fault, "consumer", None)
    label = fault.type.replace("_", " ") + (f" ({who})" if who else "")
    end = None if fault.duration is None else fault.at + fault.duration
    return FaultWindow(label, fault.at, end)


def _drive(sim: Simulator, duration: int, progress: bool) -> None:
    """Run the engine to ``duration`` in steps of one virtual second.

    The cyclic garbage collector stays out of the way while the engine runs: automatic
    collection is off, and after each step the objects created during it are frozen out of
    the collector's view (``gc.freeze``) without being scanned. A run keeps every record it
    stores, and a collection would only rescan them: it would cost ~7% of a run, grow with the
    simulated duration, and find nothing, because the simulation makes no reference cycles
    per message or request (``tests/sim/test_runner_memory.py`` holds it to that: whatever
    cyclic garbage a run makes is freed when it ends). Objects are unfrozen, and automatic
    collection restored, when the run ends. A progress bar advances per step when shown.
    """
    show = progress and sys.stderr.isatty()
    bar = (
        tqdm(total=duration / 1e6, unit="s", desc="simulating", file=sys.stderr,
             bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} virtual s [{elapsed}<{remaining}]")
        if show
        else None
    )  # fmt: skip
    collecting = gc.isenabled()
    gc.disable()
    try:
        while sim.now < duration:
            sim.run_until(min(sim.now + _STEP_US, duration))
            gc.freeze()
            if bar is not None:
                bar.update(sim.now / 1e6 - bar.n)
    finally:
        gc.unfreeze()
        if collecting:
            gc.enable()
        if bar is not None:
            bar.close()

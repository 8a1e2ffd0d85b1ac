"""The sweep benchmark: the same sweep on ``local[2]`` and on ``local[1]``, and Spark's overhead.

Each trial starts a session on a master, times an empty job with one task per run (Spark's
fixed cost of scheduling the sweep's tasks) and the whole sweep job (simulations and Parquet
writes; the analysis is not included), and stops the session. Trials alternate between the
masters: ``local[2]`` first (the JVM warms up during the first trial, so this order can only
understate the speed-up), then ``local[1]``, then the other way round if ``repeat`` > 1. On a
machine shared with other work, the fastest trial of each master is the one least disturbed,
so the results use the minimum per master:

* ``speedup`` = sweep time on ``local[1]`` / sweep time on ``local[2]`` (target: 1.6);
* ``overhead_s`` = the first session start (JVM launch included, as for a fresh
  ``python -m sim sweep``) + the empty job on ``local[2]``: what Spark costs a sweep before
  any simulation runs.

Before each trial, :func:`parallel_capacity` measures how much faster two processes get a
fixed amount of pure-Python work done than one: 2.0 on an idle two-core machine, less when
other work shares the cores. No Spark speed-up can exceed it, so it tells a slow Spark from a
busy machine.

Before starting Spark, the first run is executed once in plain Python: if the run function
cannot run (the broker cluster is not wired in yet) the benchmark says so in one line.

**A sweep's fixed cost** (:func:`fixed_cost`, ``sweep-bench --fixed-cost``): the study cut to
its first point and first seed (:func:`one_point`) goes through everything ``python -m sim
sweep`` does -- a cold session start (JVM launch included), the sweep job, the analysis, the
report, the session stop -- and its run is also timed in plain Python in the same process,
just before: the difference is what Spark and the sweep's bookkeeping add to a sweep however
small, and their ratio how much slower a one-run sweep is than the run itself.
"""

from __future__ import annotations

import concurrent.futures
import math
import tempfile
import time
from pathlib import Path

import attrs
from pyspark import SparkContext

from sim.sweep.analysis import analyse
from sim.sweep.errors import SweepError
from sim.sweep.grid import expand_tasks
from sim.sweep.job import run_sweep
from sim.sweep.report import SweepTimings, write_report
from sim.sweep.runner import RunPoint
from sim.sweep.session import start_session
from sim.sweep.simulate import scenario_table
from sim.sweep.study import Study

MASTERS = ("local[2]", "local[1]")
TARGET_SPEEDUP = 1.6


@attrs.frozen
class MasterTiming:
    """Wall times of one master: session start, empty job, sweep; summed simulation time."""

    master: str
    parallel_capacity: float
    session_start_s: float
    empty_job_s: float
    sweep_s: float
    simulation_s: float


@attrs.frozen
class BenchResult:
    """Everything the benchmark measured; :meth:`as_dict` is what ``--json`` prints."""

    study: str
    runner: str
    runs: int
    duration_s: float | None
    direct_run_s: float
    timings: tuple[MasterTiming, ...]
    """Every trial, in the order they ran; the first is ``local[2]``."""

    def _fastest(self, master: str, attribute: str) -> float:
        return min(float(getattr(t, attribute)) for t in self.timings if t.master == master)

    @property
    def speedup(self) -> float:
        """Fastest sweep on ``local[1]`` over fastest sweep on ``local[2]``."""
        return self._fastest("local[1]", "sweep_s") / self._fastest("local[2]", "sweep_s")

    @property
    def overhead_s(self) -> float:
        """The first (cold) session start plus the fastest empty job on ``local[2]``."""
        return self.timings[0].session_start_s + self._fastest("local[2]", "empty_job_s")

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict: ``speedup``, ``overhead_s`` and the raw timings."""
        return {
            "speedup": round(self.speedup, 3),
            "overhead_s": round(self.overhead_s, 3),
            "target_speedup": TARGET_SPEEDUP,
            "meets_target": self.speedup >= TARGET_SPEEDUP,
            "study": self.study,
            "runner": self.runner,
            "runs": self.runs,
            "duration_s": self.duration_s,
            "direct_run_s": round(self.direct_run_s, 3),
            "parallel_capacity": round(min(t.parallel_capacity for t in self.timings), 3),
            "repeat": len(self.timings) // len(MASTERS),
            "timings": [
                {k: round(v, 3) if isinstance(v, float) else v for k, v in attrs.asdict(t).items()}
                for t in self.timings
            ],
        }


def direct_run(study: Study, run_point: RunPoint) -> float:
    """Run the study's first task in plain Python; return its wall time. Raises whatever the
    run function raises."""
    task = expand_tasks(study)[0]
    table = scenario_table(study.scenario_path)
    started = time.perf_counter()
    run_point(table, dict(task.overrides), task.seed, study.duration_s)
    return time.perf_counter() - started


def _noop(_: int) -> int:
    return 0


def _spin(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i * i
    return total


def parallel_capacity(iterations: int = 3_000_000, trials: int = 2) -> float:
    """Wall time of ``_spin`` twice in one process over wall time of it once in each of two
    processes: how many cores' worth of pure-Python work this machine gives two processes.

    Each side is the fastest of ``trials`` alternated timings, so one disturbed timing (a
    busy neighbour, a page-in) does not skew the ratio.
    """
    serial_s = parallel_s = math.inf
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        list(pool.map(_spin, [1, 1]))  # start both workers before timing
        for _ in range(trials):
            started = time.perf_counter()
            pool.submit(_spin, iterations).result()
            pool.submit(_spin, iterations).result()
            serial_s = min(serial_s, time.perf_counter() - started)
            started = time.perf_counter()
            list(pool.map(_spin, [iterations, iterations]))
            parallel_s = min(parallel_s, time.perf_counter() - started)
    return serial_s / parallel_s


def time_master(
    master: str, study: Study, run_point: RunPoint, runner_name: str, out_dir: Path
) -> MasterTiming:
    """Start a session on ``master``, time an empty job and the sweep, stop the session.

    Raises :class:`SweepError` if a SparkContext is already running in this process (its
    master could not be changed).
    """
    if SparkContext._active_spark_context is not None:
        raise SweepError("sweep-bench starts its own Spark sessions; stop the running one first")
    capacity = parallel_capacity()
    started = time.perf_counter()
    spark = start_session(master, app_name="sim-sweep-bench", ui=False, shuffle_partitions=2)
    session_start_s = time.perf_counter() - started
    try:
        n_tasks = len(expand_tasks(study))
        started = time.perf_counter()
        spark.sparkContext.parallelize(range(n_tasks), n_tasks).map(_noop).count()
        empty_job_s = time.perf_counter() - started
        started = time.perf_counter()
        output = run_sweep(
            spark, study, out_dir, run_point, runner_name=runner_name, progress=False
        )
        sweep_s = time.perf_counter() - started
    finally:
        spark.stop()
    return MasterTiming(
        master, capacity, session_start_s, empty_job_s, sweep_s, output.simulation_s
    )


def bench(
    study: Study, run_point: RunPoint, runner_name: str, direct_run_s: float, repeat: int = 1
) -> BenchResult:
    """``repeat`` rounds of :func:`time_master` over :data:`MASTERS`, alternating the order;
    ``direct_run_s`` is the time of :func:`direct_run` (measured first, as the check that the
    run function works)."""
    order = [m for r in range(repeat) for m in (MASTERS if r % 2 == 0 else MASTERS[::-1])]
    with tempfile.TemporaryDirectory(prefix="sim-sweep-bench-") as scratch:
        timings = tuple(
            time_master(master, study, run_point, runner_name, Path(scratch) / f"trial{i}")
            for i, master in enumerate(order)
        )
    return BenchResult(
        study=study.name,
        runner=runner_name,
        runs=len(expand_tasks(study)),
        duration_s=study.duration_s,
        direct_run_s=direct_run_s,
        timings=timings,
    )


def format_result(result: BenchResult, real_simulator: bool) -> str:
    """The human-readable report of a benchmark run."""
    lines = [
        f"sweep-bench: study {result.study}, {result.runs} runs of "
        f"{result.duration_s if result.duration_s is not None else 'the scenario'} simulated s",
        f"run function: {result.runner}"
        + ("" if real_simulator else "  (NOT the simulator: this measures the machinery only)"),
        f"one run in plain Python: {result.direct_run_s:.2f} s",
    ]
    for t in result.timings:
        lines.append(
            f"{t.master:>9}: session start {t.session_start_s:.2f} s, empty job "
            f"{t.empty_job_s:.2f} s, sweep {t.sweep_s:.2f} s (simulations "
            f"{t.simulation_s:.2f} s summed; machine's parallel capacity {t.parallel_capacity:.2f})"
        )
    verdict = "meets" if result.speedup >= TARGET_SPEEDUP else "BELOW"
    lines.append(
        f"speedup local[2] vs local[1] (fastest trials): {result.speedup:.2f}x ({verdict} the "
        f"{TARGET_SPEEDUP}x target); Spark fixed overhead: {result.overhead_s:.2f} s"
    )
    return "\n".join(lines)


@attrs.frozen
class FixedCost:
    """Wall times of a one-run sweep's steps beside the same run in plain Python (seconds)."""

    study: str
    direct_run_s: float
    session_start_s: float
    job_s: float
    simulation_s: float
    analysis_s: float
    report_s: float
    session_stop_s: float

    @property
    def sweep_s(self) -> float:
        """The whole one-run sweep, start to stop."""
        return (
            self.session_start_s + self.job_s + self.analysis_s + self.report_s
            + self.session_stop_s
        )  # fmt: skip

    @property
    def fixed_s(self) -> float:
        """What the sweep adds to the run: ``sweep_s`` minus the plain run."""
        return self.sweep_s - self.direct_run_s

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict of the timings, ``sweep_s``, ``fixed_s`` and their ratio."""
        return {
            **{
                k: round(v, 3) if isinstance(v, float) else v for k, v in attrs.asdict(self).items()
            },
            "sweep_s": round(self.sweep_s, 3),
            "fixed_s": round(self.fixed_s, 3),
            "sweep_over_direct": round(self.sweep_s / self.direct_run_s, 2),
        }


def one_point(study: Study) -> Study:
    """``study`` with only its first point (each knob's first value) and its first seed."""
    return attrs.evolve(
        study,
        grid=tuple(attrs.evolve(knob, values=knob.values[:1]) for knob in study.grid),
        seeds=study.seeds[:1],
    )


def fixed_cost(study: Study, run_point: RunPoint, runner_name: str, master: str) -> FixedCost:
    """Time a one-run sweep of ``one_point(study)`` on ``master`` step by step, after the same
    run in plain Python (see the module docstring). Raises :class:`SweepError` if a
    SparkContext is already running in this process (the start would not be cold)."""
    if SparkContext._active_spark_context is not None:
        raise SweepError("sweep-bench starts its own Spark sessions; stop the running one first")
    single = one_point(study)
    direct_run_s = direct_run(single, run_point)
    with tempfile.TemporaryDirectory(prefix="sim-sweep-fixed-") as scratch:
        out_dir = Path(scratch)
        started = time.perf_counter()
        spark = start_session(master, app_name="sim-sweep-fixed-cost", ui=False)
        session_start_s = time.perf_counter() - started
        try:
            started = time.perf_counter()
            output = run_sweep(spark, single, out_dir, run_point, runner_name=runner_name,
                               progress=False)  # fmt: skip
            job_s = time.perf_counter() - started
            started = time.perf_counter()
            _, summary = analyse(spark, out_dir)
            analysis_s = time.perf_counter() - started
        finally:
            started = time.perf_counter()
            spark.stop()
            session_stop_s = time.perf_counter() - started
        started = time.perf_counter()
        timings = SweepTimings(session_start_s, job_s, output.simulation_s, 1, analysis_s,
                               session_stop_s)  # fmt: skip
        write_report(out_dir, summary, timings)
        report_s = time.perf_counter() - started
    return FixedCost(
        study=study.name,
        direct_run_s=direct_run_s,
        session_start_s=session_start_s,
        job_s=job_s,
        simulation_s=output.simulation_s,
        analysis_s=analysis_s,
        report_s=report_s,
        session_stop_s=session_stop_s,
    )


def format_fixed_cost(cost: FixedCost) -> str:
    """The human-readable report of :func:`fixed_cost`."""
    return (
        f"sweep-bench --fixed-cost: study {cost.study} cut to one point and one seed\n"
        f"the run in plain Python: {cost.direct_run_s:.2f} s\n"
        f"the same run as a sweep: {cost.sweep_s:.2f} s = session start "
        f"{cost.session_start_s:.2f} s + job {cost.job_s:.2f} s (simulation "
        f"{cost.simulation_s:.2f} s) + analysis {cost.analysis_s:.2f} s + report "
        f"{cost.report_s:.2f} s + session stop {cost.session_stop_s:.2f} s\n"
        f"fixed cost of a sweep: {cost.fixed_s:.2f} s ({cost.sweep_s / cost.direct_run_s:.1f}x "
        "the run alone)"
    )

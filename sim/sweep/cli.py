"""Command-line entry points: ``python -m sim sweep`` and ``python -m sim sweep-bench``.

``sweep_main(argv)`` and ``sweep_bench_main(argv)`` take the arguments after the subcommand
and return the exit status: 0 on success; 1 when runs failed (the report lists them; running
the same command again retries them and keeps the rest) or the sweep could not run (no Java,
the Spark JVM killed); 2 for a bad study, runner name, argument or an output directory that
cannot be written or holds what the sweep would delete (all found before Spark starts); 130
when interrupted (Ctrl-C; a rerun resumes). Errors are printed as one line on stderr, never a
traceback (py4j's own error log and pyspark's accumulator server are silenced); the progress
bar also goes to stderr; results go to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa
from py4j.protocol import Py4JError
from pyspark import SparkContext
from pyspark.errors import PythonException
from pyspark.sql import SparkSession

from sim.logs import DEFAULT_LEVEL, LEVELS, configure_logging
from sim.output.directory import OutputDirError, prepare_output_dir
from sim.sweep.analysis import analyse
from sim.sweep.errors import (
    JavaNotFoundError,
    OutputConflictError,
    RunnerError,
    StudyError,
    SweepError,
)
from sim.sweep.job import check_sweep_output, run_sweep
from sim.sweep.manifest import FailedRun
from sim.sweep.report import SweepTimings, write_report
from sim.sweep.runner import DEFAULT_RUNNER, load_runner
from sim.sweep.session import start_session
from sim.sweep.simulate import check_points
from sim.sweep.study import load_study

_log = logging.getLogger(__name__)
DEFAULT_OUT = Path("sweeps")
BENCH_STUDY = "bench"
EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C, as a shell reports a process ended by SIGINT."""
LISTED_FAILURES = 3
"""Failed runs named in the one-line message (the report lists them all)."""


def task_error(exc: BaseException) -> str:
    """The last line of the Python error a Spark task raised (``Type: message``)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in reversed(lines):
        if ":" in line and not line.startswith(("at ", "File ", "JVM stacktrace")):
            return line
    return lines[-1] if lines else type(exc).__name__


def guarded(prog: str, body: Callable[[], int]) -> int:
    """Run ``body``, turning the sweep's known failures into one line on stderr and a status."""
    try:
        return body()
    except (StudyError, RunnerError, OutputDirError, OutputConflictError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except (JavaNotFoundError, SweepError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except PythonException as exc:
        print(f"{prog}: a Spark task failed: {task_error(exc)}", file=sys.stderr)
        return 1
    except (Py4JError, ConnectionError) as exc:  # a refused connection: the JVM is gone
        print(f"{prog}: Spark failed: {task_error(exc)}", file=sys.stderr)
        return 1


def _from_py4j(record: logging.LogRecord) -> bool:
    """False for a log record py4j wrote (a logging filter: keep the others)."""
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def silence_py4j() -> None:
    """Keep py4j from printing a traceback when the JVM dies: it logs the broken connection
    with ``logging.exception``, on its own loggers and on the root logger (which prints to
    stderr when nothing is configured). The sweep reports a dead JVM itself, in one line."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    root = logging.getLogger()
    if _from_py4j not in root.filters:
        root.addFilter(_from_py4j)


def failures_line(failed: tuple[FailedRun, ...], runs: int, report: Path) -> str:
    """The one line that says which runs failed, e.g. ``2 of 8 runs failed: point 1 seed 2
    (RuntimeError: boom), ...; ...``."""
    named = [f"point {f.point_id} seed {f.seed} ({f.error})" for f in failed[:LISTED_FAILURES]]
    more = f", and {len(failed) - LISTED_FAILURES} more" if len(failed) > LISTED_FAILURES else ""
    return (
        f"{len(failed)} of {runs} runs failed: {', '.join(named)}{more}; all are listed in "
        f"{report}; run the same command again to retry them (finished runs are kept)"
    )


def _stop(spark: SparkSession) -> None:
    """Stop ``spark``; a JVM that is already gone is not an error."""
    with contextlib.suppress(Py4JError, ConnectionError):
        spark.stop()


def _sweep_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sim sweep",
        description="Run a study's grid of simulations on Spark, analyse it, write a report.",
    )
    parser.add_argument("study", help="a study file (.toml) or a bundled study name (default)")
    parser.add_argument(
        "--master",
        help="Spark master URL, e.g. local[4] or spark://host:7077 (default: what spark-submit "
        "set, else local[*])",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help=f"output directory (default: {DEFAULT_OUT}/<study name>); created and checked "
        "before Spark starts",
    )
    parser.add_argument(
        "--runner",
        default=DEFAULT_RUNNER,
        help=f"run function as MODULE:FUNCTION (default: {DEFAULT_RUNNER}, the simulator)",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="wall-clock limit of each run; a run past it is recorded as failed (default: the "
        "study's time_limit_s, else none)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="run everything again; by default runs already finished in --out with the same "
        "inputs are kept (an interrupted sweep resumes)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--log-level",
        choices=LEVELS,
        default=DEFAULT_LEVEL,
        help="the project's and Spark's log level, on stderr (default: %(default)s; info says "
        "what each step took)",
    )
    return parser


def sweep_main(argv: Sequence[str]) -> int:
    """``python -m sim sweep STUDY [--master URL] [--out DIR] [--runner M:F]
    [--time-limit S] [--fresh] [--log-level LEVEL]``."""
    args = _sweep_parser().parse_args(list(argv))
    if args.time_limit is not None and not 0 < args.time_limit < float("inf"):
        print(f"sweep: --time-limit: expected a positive number of seconds, got {args.time_limit}",
              file=sys.stderr)  # fmt: skip
        return 2
    silence_py4j()
    configure_logging(args.log_level)

    def body() -> int:
        study = load_study(args.study)
        run_point = load_runner(args.runner)
        check_points(study)
        out_dir = prepare_output_dir(args.out or DEFAULT_OUT / study.name)
        check_sweep_output(study, out_dir, runner_name=args.runner, resume=not args.fresh)
        owns_spark = SparkContext._active_spark_context is None
        started = time.perf_counter()
        spark = start_session(
            args.master, app_name=f"sim-sweep-{study.name}", log_level=args.log_level
        )
        session_start_s = time.perf_counter() - started if owns_spark else None
        _log.info("Spark session ready in %.2f s (%s)", time.perf_counter() - started,
                  "started" if owns_spark else "already running")  # fmt: skip
        session_stop_s = analysis_s = None
        try:
            started = time.perf_counter()
            output = run_sweep(
                spark, study, out_dir, run_point, runner_name=args.runner,
                progress=not args.no_progress, time_limit_s=args.time_limit,
                resume=not args.fresh,
            )  # fmt: skip
            job_s = time.perf_counter() - started
            slots = spark.sparkContext.defaultParallelism
            _log.info("sweep job: %.2f s (simulations %.2f s summed over %d task slots)",
                      job_s, output.simulation_s, slots)  # fmt: skip
            manifest = output.manifest
            if output.kept:
                runs = len(manifest.points) * len(manifest.seeds)
                print(
                    f"resumed: {output.kept} of {runs} runs kept from an earlier attempt in "
                    f"{out_dir}, {runs - output.kept} run now (--fresh runs them all again)"
                )
            print(
                f"records: {out_dir / 'records'} ("
                + (
                    ", ".join(f"{t.name} {t.rows} rows" for t in manifest.tables.values())
                    or "none: no run finished"
                )
                + ")"
            )
            summary = pa.table({})
            analysis_s = 0.0  # nothing to analyse when no run finished
            if manifest.tables:
                started = time.perf_counter()
                _, summary = analyse(spark, out_dir)
                analysis_s = time.perf_counter() - started
                _log.info("analysis: %.2f s", analysis_s)
                print(f"summary: {out_dir / 'summary.csv'} ({summary.num_rows} points)")
        finally:
            if owns_spark:
                started = time.perf_counter()
                _stop(spark)
                session_stop_s = time.perf_counter() - started
                _log.info("Spark stopped in %.2f s", session_stop_s)
        timings = SweepTimings(
            session_start_s, job_s, output.simulation_s, slots, analysis_s, session_stop_s,
            kept_runs=output.kept,
        )  # fmt: skip
        report = write_report(out_dir, summary, timings)
        print(
            f"fixed cost: {timings.fixed_s:.1f} s (Spark start-up and shutdown, job overhead, "
            "analysis)"
        )
        print(f"report: {report}")
        if manifest.failed:
            runs = len(manifest.points) * len(manifest.seeds)
            print(f"sweep: {failures_line(manifest.failed, runs, report)}", file=sys.stderr)
            return 1
        return 0

    try:
        return guarded("sweep", body)
    except KeyboardInterrupt:
        print(
            "sweep: interrupted; the runs that finished are kept in the output directory: run "
            "the same command again to run the rest",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


def _bench_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sim sweep-bench",
        description="Time a sweep on local[2] against local[1]; report the speed-up and "
        "Spark's fixed overhead.",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--study", default=BENCH_STUDY, help=f"study to run (default: bundled {BENCH_STUDY!r})"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds of (local[2], local[1]) trials, alternating the order; the fastest trial "
        "of each master counts (default: 1; use 3 on a busy machine)",
    )
    parser.add_argument(
        "--runner",
        default=DEFAULT_RUNNER,
        help=f"run function as MODULE:FUNCTION (default: {DEFAULT_RUNNER}, the simulator)",
    )
    parser.add_argument(
        "--fixed-cost",
        action="store_true",
        help="instead: time a one-run sweep (the study's first point and seed) step by step "
        "against the same run in plain Python, on --master",
    )
    parser.add_argument(
        "--master", default="local[1]", help="master of --fixed-cost (default: %(default)s)"
    )
    return parser


def sweep_bench_main(argv: Sequence[str]) -> int:
    """``python -m sim sweep-bench [--json] [--study S] [--repeat N] [--runner M:F]
    [--fixed-cost [--master URL]]`` (see :mod:`.bench`)."""
    args = _bench_parser().parse_args(list(argv))
    # Benchmarks are not part of the installed wheel: imported only by this command.
    from sim.sweep.bench import bench, direct_run, fixed_cost, format_fixed_cost, format_result

    def body() -> int:
        study = load_study(args.study)
        run_point = load_runner(args.runner)
        check_points(study)
        real = args.runner == DEFAULT_RUNNER
        try:
            direct_run_s = direct_run(study, run_point)
        except Exception as exc:  # any failure of the run function, reported in one line
            what = "the simulator" if real else f"run function {args.runner}"
            print(
                f"sweep-bench: {what} cannot run yet ({type(exc).__name__}: {exc}); nothing "
                "measured. To time the Spark machinery alone, pass a stand-in run function, "
                "e.g. --runner tests.sim.sweep.fake_world:run_point",
                file=sys.stderr,
            )
            return 1
        if args.fixed_cost:
            cost = fixed_cost(study, run_point, args.runner, args.master)
            print(json.dumps(cost.as_dict(), indent=2) if args.json else format_fixed_cost(cost))
            return 0
        result = bench(study, run_point, args.runner, direct_run_s, repeat=max(1, args.repeat))
        if args.json:
            print(json.dumps(result.as_dict(), indent=2))
        else:
            print(format_result(result, real_simulator=real))
        return 0

    return guarded("sweep-bench", body)

"""Command-line entry points: ``python -m sim sweep`` and ``python -m sim sweep-bench``.

``sweep_main(argv)`` and ``sweep_bench_main(argv)`` take the arguments after the subcommand
and return the exit status: 0 on success, 1 when the run failed (no Java, a simulation
raised in a Spark task), 2 for a bad study, runner name, argument or an output directory that
cannot be written (all found before Spark starts). Errors are printed as one line on stderr;
the progress bar also goes to stderr; results go to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from py4j.protocol import Py4JJavaError
from pyspark import SparkContext
from pyspark.errors import PythonException

from sim.output.directory import OutputDirError, prepare_output_dir
from sim.sweep.analysis import analyse
from sim.sweep.errors import JavaNotFoundError, RunnerError, StudyError, SweepError
from sim.sweep.job import run_sweep
from sim.sweep.report import write_report
from sim.sweep.runner import DEFAULT_RUNNER, load_runner
from sim.sweep.session import start_session
from sim.sweep.simulate import check_points
from sim.sweep.study import load_study

DEFAULT_OUT = Path("sweeps")
BENCH_STUDY = "bench"


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
    except (StudyError, RunnerError, OutputDirError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except (JavaNotFoundError, SweepError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except (PythonException, Py4JJavaError) as exc:
        print(f"{prog}: a simulation failed in a Spark task: {task_error(exc)}", file=sys.stderr)
        return 1


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
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def sweep_main(argv: Sequence[str]) -> int:
    """``python -m sim sweep STUDY [--master URL] [--out DIR] [--runner M:F]``."""
    args = _sweep_parser().parse_args(list(argv))

    def body() -> int:
        study = load_study(args.study)
        run_point = load_runner(args.runner)
        check_points(study)
        out_dir = prepare_output_dir(args.out or DEFAULT_OUT / study.name)
        owns_spark = SparkContext._active_spark_context is None
        spark = start_session(args.master, app_name=f"sim-sweep-{study.name}")
        try:
            output = run_sweep(
                spark, study, out_dir, run_point, runner_name=args.runner,
                progress=not args.no_progress,
            )  # fmt: skip
            print(
                f"records: {out_dir / 'records'} ("
                + ", ".join(f"{t.name} {t.rows} rows" for t in output.manifest.tables.values())
                + ")"
            )
            _, summary = analyse(spark, out_dir)
            print(f"summary: {out_dir / 'summary.csv'} ({summary.num_rows} points)")
            print(f"report: {write_report(out_dir, summary)}")
        finally:
            if owns_spark:
                spark.stop()
        return 0

    return guarded("sweep", body)


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
    return parser


def sweep_bench_main(argv: Sequence[str]) -> int:
    """``python -m sim sweep-bench [--json] [--study S] [--repeat N] [--runner M:F]``
    (see :mod:`.bench`)."""
    args = _bench_parser().parse_args(list(argv))
    # Benchmarks are not part of the installed wheel: imported only by this command.
    from sim.sweep.bench import bench, direct_run, format_result

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
        result = bench(study, run_point, args.runner, direct_run_s, repeat=max(1, args.repeat))
        if args.json:
            print(json.dumps(result.as_dict(), indent=2))
        else:
            print(format_result(result, real_simulator=real))
        return 0

    return guarded("sweep-bench", body)

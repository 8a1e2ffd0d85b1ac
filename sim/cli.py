"""``python -m sim``: run scenarios, list them and their knobs, benchmark, sweep on Spark.

argparse (standard library) is enough for these subcommands and keeps the dependency list
short. Exit codes: 0 success; 1 a sweep or benchmark could not run (said in one line);
2 bad usage, a bad scenario or an output directory that cannot be written, reported as one
line on stderr, never a traceback, before anything is simulated.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from sim.output.directory import OutputDirError, prepare_output_dir
from sim.scenario import ScenarioError, bundled_scenarios, load_scenario

__all__ = ["main"]

EXIT_OK = 0
EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sim",
        description="Deterministic discrete-event simulator of a Kafka cluster's commit latency.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run a scenario", description="Run a scenario.")
    run.add_argument(
        "scenario", nargs="?", default=None, help="scenario file or bundled name (default: default)"
    )
    run.add_argument("--seed", help="run seed (simulation.seed)")
    run.add_argument(
        "--duration", help='virtual time to simulate, with its unit: e.g. "60s", "500ms"'
    )
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any knob, e.g. --set producers[0].acks=1 (repeatable)",
    )
    run.add_argument(
        "--out",
        help="write the run directory here (Parquet, JSON, PNG); created and checked before "
        "the run starts",
    )
    run.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")

    commands.add_parser("scenarios", help="list the bundled scenarios")
    commands.add_parser("studies", help="list the bundled studies (for sim sweep)")

    knobs = commands.add_parser("knobs", help="list every knob and its value in a scenario")
    knobs.add_argument("scenario", nargs="?", default=None, help="scenario (default: default)")
    knobs.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")

    bench = commands.add_parser("bench", help="measure engine overhead and scenario throughput")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--events", type=int, default=50_000, help="events per engine round")
    bench.add_argument("--rounds", type=int, default=15, help="engine rounds per variant")
    bench.add_argument(
        "--no-pure-python",
        action="store_true",
        help="with the compiled build, skip the pure-Python run beside it",
    )

    # Spark commands: parsed by sim.sweep.cli (imported only when used: pyspark is heavy).
    commands.add_parser("sweep", help="run a study's grid of simulations on Spark", add_help=False)
    commands.add_parser(
        "sweep-bench", help="time a sweep on local[2] against local[1]", add_help=False
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments and arguments[0] in ("sweep", "sweep-bench"):
        from sim.sweep.cli import sweep_bench_main, sweep_main

        spark_command = sweep_main if arguments[0] == "sweep" else sweep_bench_main
        return spark_command(arguments[1:])
    args = _parser().parse_args(arguments)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "scenarios":
            return _scenarios()
        if args.command == "studies":
            return _studies()
        if args.command == "knobs":
            return _knobs(args)
        return _bench(args)
    except (ScenarioError, OutputDirError) as error:
        print(error, file=sys.stderr)
        return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    overrides = list(args.overrides)
    if args.seed is not None:
        overrides.append(f"simulation.seed={args.seed}")
    if args.duration is not None:
        overrides.append(f"simulation.duration={_with_unit(args.duration)}")
    scenario = load_scenario(args.scenario, overrides)
    if args.out is not None:
        prepare_output_dir(Path(args.out))
    # Imported after the scenario is checked: pyarrow and matplotlib take a while to load.
    from sim.runner import run_scenario

    result = run_scenario(scenario, progress=not args.no_progress)
    if args.out is not None:
        result.write(args.out, plots=not args.no_plots)
    print(result.format_table())
    if args.out is not None:
        print(f"run directory: {args.out}")
    return EXIT_OK


_BARE_NUMBER = re.compile(r"\s*[0-9]*\.?[0-9]+\s*")


def _with_unit(duration: str) -> str:
    """``--duration`` as given, refused if it is a bare number: in a scenario a bare number
    is microseconds, which nobody means on the command line (``--duration 10``)."""
    if _BARE_NUMBER.fullmatch(duration):
        raise ScenarioError(
            "--duration",
            f'"{duration.strip()}" has no unit; write e.g. "{duration.strip()}s" or '
            f'"{duration.strip()}ms" (a bare number would be microseconds)',
        )
    return duration


def _scenarios() -> int:
    scenarios = bundled_scenarios()
    width = max(len(name) for name in scenarios)
    for name in scenarios:
        print(f"{name.ljust(width)}  {load_scenario(name).description}")
    return EXIT_OK


def _studies() -> int:
    from sim.sweep.grid import expand_tasks
    from sim.sweep.study import bundled_studies, load_study

    studies = {name: load_study(name) for name in bundled_studies()}
    width = max(len(name) for name in studies)
    for name, study in studies.items():
        runs = len(expand_tasks(study))  # bundled studies are small
        print(f"{name.ljust(width)}  {runs:>4} runs  {study.description}")
    return EXIT_OK


def _knobs(args: argparse.Namespace) -> int:
    from sim.scenario.knobs import knob_rows

    rows = knob_rows(load_scenario(args.scenario, args.overrides))
    width = max(len(row.path) for row in rows)
    for row in rows:
        print(f"{row.path.ljust(width)}  {row.value}  ({row.kind}; {row.help})")
    return EXIT_OK


def _bench(args: argparse.Namespace) -> int:
    from purgatory.compiled import compiled_packages
    from sim.bench import PACKAGES, engine_overhead, pure_python_figures, scenario_throughput

    results: dict[str, object] = {}
    engine = engine_overhead(events=args.events, rounds=args.rounds)
    results["engine_events_per_wall_s"] = engine.pop("events_per_wall_s")
    results.update(engine)
    scenario = scenario_throughput()
    results.update(scenario)
    compiled = compiled_packages(PACKAGES)
    results["compiled"] = compiled
    if any(compiled.values()) and not args.no_pure_python:
        pure = pure_python_figures(["--events", str(args.events), "--rounds", str(args.rounds)])
        results["pure_python"] = pure
        results["compiled_speedup"] = round(
            scenario["messages_per_cpu_s"] / pure["messages_per_cpu_s"], 2
        )
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for key, value in results.items():
            print(f"{key}: {value}")
    return EXIT_OK

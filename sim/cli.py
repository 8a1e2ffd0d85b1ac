"""``python -m sim``: run scenarios (once or over seeds), compare runs, list scenarios and knobs,
benchmark, sweep on Spark.

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

import attrs

from sim.logs import DEFAULT_LEVEL, LEVELS, configure_logging
from sim.output.directory import OutputDirError, prepare_output_dir
from sim.scenario import Scenario, ScenarioError, bundled_scenarios, load_scenario
from sim.scenario.files import DEFAULT_SCENARIO
from sim.scenario.schema import MAX_SEED

__all__ = ["main"]

EXIT_OK = 0
EXIT_USAGE = 2
MAX_SEEDS = 10_000
"""The most seeds ``run --seeds`` takes unless ``simulation.allow_large``: they run one after
another in this process, and ``--seeds 1000000000`` must not build a list that exhausts memory."""


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
    _add_fault_argument(run)
    run.add_argument(
        "--out",
        help="write the run directory here (Parquet, JSON, PNG); created and checked before "
        "the run starts",
    )
    run.add_argument(
        "--seeds",
        metavar="N|S1,S2,...",
        help="independent replications, one after another: N seeds from the run seed up, or "
        "a list; prints (and with --out writes) each statistic's mean and 95%% confidence "
        "interval across seeds, with each seed's run directory in OUT/seed-S",
    )
    run.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument(
        "--log-level", choices=LEVELS, default=DEFAULT_LEVEL,
        help="the project's log level, on stderr (default: %(default)s; info times each step)",
    )  # fmt: skip

    compare = commands.add_parser(
        "compare",
        help="B - A per statistic with 95%% confidence intervals",
        description="Compare two run directories (sim run --out, with or without --seeds) or "
        "two sweep output directories: per statistic, B - A with a 95% confidence interval, "
        "paired by seed where both ran the same seeds (Welch otherwise).",
    )
    compare.add_argument("a", type=Path, metavar="A", help="the baseline")
    compare.add_argument("b", type=Path, metavar="B", help="the variant")
    compare.add_argument(
        "--stat",
        dest="stats",
        action="append",
        default=[],
        metavar="GLOB",
        help="only statistics matching GLOB, e.g. '*_p99_ms' (repeatable; default: all, and "
        "the plot shows the p99 latencies, throughput and never_committed)",
    )
    compare.add_argument(
        "--out",
        type=Path,
        help="write compare.csv, compare.md and compare.png here (default: "
        "comparisons/<A name>-vs-<B name>)",
    )

    commands.add_parser("scenarios", help="list the bundled scenarios")
    commands.add_parser("studies", help="list the bundled studies (for sim sweep)")

    knobs = commands.add_parser("knobs", help="list every knob and its value in a scenario")
    knobs.add_argument("scenario", nargs="?", default=None, help="scenario (default: default)")
    knobs.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    _add_fault_argument(knobs)

    bench = commands.add_parser("bench", help="measure engine overhead and scenario throughput")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument("--events", type=int, default=50_000, help="events per engine round")
    bench.add_argument("--rounds", type=int, default=15, help="engine rounds per variant")
    bench.add_argument(
        "--no-pure-python",
        action="store_true",
        help="with the compiled build, skip the pure-Python run beside it",
    )
    bench.add_argument(
        "--skip-scale", action="store_true", help="skip the scale scenario and the memory figure"
    )
    bench.add_argument(
        "--repeat",
        type=_positive_int,
        default=1,
        help="run each scenario duration this many times; the best run counts (default 1)",
    )

    # Spark commands: parsed by sim.sweep.cli (imported only when used: pyspark is heavy).
    commands.add_parser("sweep", help="run a study's grid of simulations on Spark", add_help=False)
    commands.add_parser(
        "sweep-bench", help="time a sweep on local[2] against local[1]", add_help=False
    )
    return parser


def _add_fault_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fault",
        dest="faults",
        action="append",
        default=[],
        metavar="FAULT",
        help="add a fault, written like a [[faults]] table: its type, then KEY=VALUE pairs, "
        "e.g. --fault 'broker_failure broker=1 at=2s duration=1s' or "
        "--fault type=latency_spike,at=1s,duration=2s,extra=20ms,src=broker-2 (repeatable; "
        "applied after --set, checked like the scenario file's faults)",
    )


def _overrides(args: argparse.Namespace) -> list[str]:
    """``--set`` overrides, then one appending each ``--fault``."""
    from sim.scenario.overrides import fault_override

    return [*args.overrides, *(fault_override(fault) for fault in args.faults)]


def _described(scenario: Scenario, args: argparse.Namespace) -> Scenario:
    """``scenario`` with its description naming the ``--set`` and ``--fault`` options that
    changed it: the description titles the run's plots and its summary, and a file's
    "Burrow with 10 workers" must not title a run of ``--set burrow.num_workers=8``."""
    changes = [*args.overrides, *(f"fault {fault}" for fault in args.faults)]
    if not changes:
        return scenario
    return attrs.evolve(scenario, description=f"{scenario.description} [{'; '.join(changes)}]")


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
        if args.command == "compare":
            return _compare(args)
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


def _positive_int(text: str) -> int:
    """argparse type: an int >= 1 (else argparse's one-line error naming the option)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _run(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    overrides = _overrides(args)
    if args.seed is not None:
        overrides.append(f"simulation.seed={args.seed}")
    if args.duration is not None:
        overrides.append(f"simulation.duration={_with_unit(args.duration)}")
    scenario = _described(load_scenario(args.scenario, overrides), args)
    seeds = None if args.seeds is None else _seeds(args.seeds, scenario, args.seed)
    if args.out is not None:
        _refuse_other_outputs(prepare_output_dir(Path(args.out)), seeds)
    if seeds is not None:
        return _run_seeds(args, scenario, overrides, seeds)
    # Imported after the scenario is checked: pyarrow and matplotlib take a while to load.
    from sim.runner import run_scenario

    result = run_scenario(scenario, progress=not args.no_progress)
    if args.out is not None:
        result.write(args.out, plots=not args.no_plots)
        _write_provenance(Path(args.out), args, scenario, overrides)
    print(result.format_table())
    if args.out is not None:
        print(f"run directory: {args.out}")
    return EXIT_OK


def _refuse_other_outputs(out: Path, seeds: Sequence[int] | None) -> None:
    """Refuse ``--out`` if it holds another kind of output than this run writes: a single run
    over a replication directory (or the reverse), a sweep's output, or the directory of a
    seed this replication does not have. Writing there would leave a directory that mixes two
    runs (a stale ``replications.json`` beside a new single run), which ``sim compare`` and
    ``load_run`` would read without a word; the same run again rewrites its own files."""
    from sim.replications import REPLICATIONS_JSON, seed_dir
    from sim.sweep.manifest import MANIFEST_NAME

    others = {MANIFEST_NAME: "a sweep's output", "tasks": "a sweep's output"}
    if seeds is None:
        others[REPLICATIONS_JSON] = "a replication's output"
    else:
        others[_RUN_SUMMARY] = "a single run's output"
    for name, what in others.items():
        if (out / name).exists():
            raise OutputDirError(out, f"holds {what}, {name}", _CHOOSE_ANOTHER)
    if seeds is not None:
        wanted = {seed_dir(out, seed) for seed in seeds}
        for stale in sorted(path for path in out.glob("seed-*") if path not in wanted):
            raise OutputDirError(
                out, f"holds {stale.name}/, a seed this run does not have", _CHOOSE_ANOTHER
            )


_RUN_SUMMARY = "summary.json"
_CHOOSE_ANOTHER = "writing there would mix two outputs; choose another --out or empty it first"


def _write_provenance(
    out: Path,
    args: argparse.Namespace,
    scenario: Scenario,
    overrides: Sequence[str],
    extra: dict[str, object] | None = None,
) -> None:
    """``scenario.toml`` and ``provenance.json`` of a run directory (see sim.output.provenance)."""
    from sim.output.provenance import write_provenance
    from sim.scenario.writing import scenario_toml

    write_provenance(
        out, scenario_toml=scenario_toml(scenario), scenario=args.scenario or DEFAULT_SCENARIO,
        overrides=overrides, seed=scenario.simulation.seed, extra=extra,
    )  # fmt: skip


def _seeds(spec: str, scenario: Scenario, seed_given: str | None) -> list[int]:
    """The seeds ``--seeds`` names: ``N`` (the run seed and the N - 1 after it) or a list, at
    most :data:`MAX_SEEDS` of them unless the scenario allows large runs."""
    if "," not in spec:
        if not spec.strip().isdigit() or int(spec) < 1:
            raise ScenarioError("--seeds", f"expected a number of seeds >= 1 or a list of seeds "
                                f'such as "1,2,3", got "{spec}"')  # fmt: skip
        if int(spec) > MAX_SEEDS and not scenario.simulation.allow_large:
            raise ScenarioError(
                "--seeds",
                f"{int(spec):,} seeds is above the limit of {MAX_SEEDS:,} (each seed is a whole "
                "run, one after another; set simulation.allow_large = true to run them anyway)",
            )
        first = scenario.simulation.seed
        return _distinct_int64(list(range(first, first + int(spec))), spec)
    if seed_given is not None:
        raise ScenarioError("--seeds", "a list of seeds and --seed together: give one of them")
    items = [item.strip() for item in spec.split(",")]
    if not all(item.isdigit() for item in items):
        raise ScenarioError("--seeds", f'expected seeds (integers >= 0) such as "1,2,3", '
                            f'got "{spec}"')  # fmt: skip
    seeds = [int(item) for item in items]
    return _distinct_int64(seeds, spec)


def _distinct_int64(seeds: list[int], spec: str) -> list[int]:
    """``seeds`` if none repeats and all fit the int64 seed columns, else ScenarioError."""
    if max(seeds) > MAX_SEED:
        raise ScenarioError("--seeds", f'"{spec}" goes past the largest seed, {MAX_SEED} '
                            "(seeds are int64 columns)")  # fmt: skip
    if len(set(seeds)) != len(seeds):
        raise ScenarioError("--seeds", f'a seed is listed twice in "{spec}" (replications '
                            "must be independent)")  # fmt: skip
    return seeds


def _run_seeds(
    args: argparse.Namespace, scenario: Scenario, overrides: Sequence[str], seeds: list[int]
) -> int:
    """``run --seeds``: the replications of :mod:`sim.replications`, written to ``--out``."""
    from sim.output import RunResult
    from sim.replications import replicate, seed_dir

    out = None if args.out is None else Path(args.out)

    def finished(seed: int, seeded: Scenario, result: RunResult) -> None:
        print(f"seed {seed}: {result.summary['messages']['sent']} messages sent",
              file=sys.stderr)  # fmt: skip
        if out is not None:
            directory = seed_dir(out, seed)
            result.write(directory, plots=not args.no_plots)
            _write_provenance(directory, args, seeded, [*overrides, f"simulation.seed={seed}"])

    replications = replicate(scenario, seeds, progress=not args.no_progress, on_result=finished)
    print(replications.format_table())
    if out is not None:
        replications.write(out)
        _write_provenance(out, args, scenario, overrides, extra={"seeds": seeds})
        print(f"replication directory: {out}")
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


def _compare(args: argparse.Namespace) -> int:
    """``compare A B``: one line on stderr and status 2 when the inputs do not fit."""
    from sim.compare import PLOTTED, CompareError, compare, read_samples

    try:
        comparison = compare(read_samples(args.a), read_samples(args.b), args.stats)
    except CompareError as error:
        print(f"compare: {error}", file=sys.stderr)
        return EXIT_USAGE
    out = prepare_output_dir(
        args.out or Path("comparisons") / f"{args.a.resolve().name}-vs-{args.b.resolve().name}"
    )
    comparison.write(out, plotted=args.stats or PLOTTED)
    print(comparison.format_table())
    print(f"comparison: {out}")
    return EXIT_OK


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

    rows = knob_rows(load_scenario(args.scenario, _overrides(args)))
    width = max(len(row.path) for row in rows)
    for row in rows:
        print(f"{row.path.ljust(width)}  {row.value}  ({row.kind}; {row.help})")
    return EXIT_OK


def _bench(args: argparse.Namespace) -> int:
    from purgatory.compiled import compiled_packages
    from sim.bench import (
        PACKAGES,
        engine_overhead,
        pure_python_figures,
        scale_throughput,
        scenario_throughput,
    )
    from sim.bench.host import host
    from sim.bench.memory import live_bytes_per_message
    from sim.scenario import with_overrides

    results: dict[str, object] = {"host": host()}
    engine = engine_overhead(events=args.events, rounds=args.rounds)
    results["engine_events_per_wall_s"] = engine.pop("events_per_wall_s")
    results.update(engine)
    scenario = scenario_throughput(repeat=args.repeat)
    results.update(scenario)
    if not args.skip_scale:
        short = ["simulation.duration=2s", "simulation.warmup=500ms"]  # 20,000 messages
        results["bytes_per_message"] = round(
            live_bytes_per_message(with_overrides(load_scenario(), short))
        )
        results["scale"] = scale_throughput(repeat=args.repeat)
    compiled = compiled_packages(PACKAGES)
    results["compiled"] = compiled
    if any(compiled.values()) and not args.no_pure_python:
        options = {"--events": args.events, "--rounds": args.rounds, "--repeat": args.repeat}
        pure = pure_python_figures(
            [*(f"{name}={value}" for name, value in options.items()), "--skip-scale"]
        )
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

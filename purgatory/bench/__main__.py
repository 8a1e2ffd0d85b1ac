"""Command line: ``python -m purgatory.bench {timer,purgatory,reaper} [options] [--json]``."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence

from purgatory.bench import report
from purgatory.bench.errors import BenchArgumentError
from purgatory.bench.purgatory_workload import WorkloadConfig, run_purgatory_bench
from purgatory.bench.reaper_lateness import measure_lateness
from purgatory.bench.timer import STRUCTURES, run_timer_bench
from purgatory.compiled import compiled_packages, pure_python_command


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part.replace("_", "")) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers such as 10000,100000, got {text!r}"
        ) from None
    return values


def _name_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m purgatory.bench",
        description="Benchmarks of the purgatory library against naive baselines.",
    )
    commands = parser.add_subparsers(dest="bench", required=True)

    defaults_shown = argparse.ArgumentDefaultsHelpFormatter
    timer = commands.add_parser(
        "timer", help="timing wheel vs heapq vs SortedList", formatter_class=defaults_shown
    )
    timer.add_argument(
        "--live",
        type=_int_list,
        default=[10_000, 100_000, 1_000_000],
        help="steady-state live timers, comma-separated",
    )
    timer.add_argument(
        "--structures",
        type=_name_list,
        default=list(STRUCTURES),
        help=f"comma-separated subset of {','.join(STRUCTURES)}",
    )
    timer.add_argument("--per-tick", type=int, default=100, help="timers scheduled per tick")
    timer.add_argument("--repeat", type=int, default=3, help="measurement windows (median)")
    timer.add_argument(
        "--window-timers",
        type=int,
        default=None,
        help="timers per measurement window (None: max(live, 200000))",
    )
    timer.add_argument("--seed", type=int, default=1, help="seed of the timer stream")
    timer.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")

    work = commands.add_parser(
        "purgatory", help="Kafka's purgatory performance test", formatter_class=defaults_shown
    )
    defaults = WorkloadConfig()
    work.add_argument("--num", type=int, default=defaults.num, help="number of requests")
    work.add_argument("--rate", type=float, default=defaults.rate, help="requests per second")
    work.add_argument("--keys", type=int, default=defaults.keys, help="keys per request")
    work.add_argument(
        "--key-space-size", type=int, default=defaults.key_space_size, help="keys to draw from"
    )
    work.add_argument("--timeout", type=int, default=defaults.timeout, help="ms")
    work.add_argument("--pct50", type=float, default=defaults.pct50, help="median latency, ms")
    work.add_argument("--pct75", type=float, default=defaults.pct75, help="75th pct latency, ms")
    work.add_argument(
        "--purge-interval", type=int, default=defaults.purge_interval, help="the purgatory's"
    )
    work.add_argument("--seed", type=int, default=defaults.seed, help="seed of the requests")
    work.add_argument("--repeat", type=int, default=1, help="timed replays per implementation")
    work.add_argument("--no-memory", action="store_true", help="skip the tracemalloc replays")

    for sub in (timer, work):
        sub.add_argument("--json", action="store_true", help="one JSON object per line")
        sub.add_argument("--check", action="store_true", help="exit 1 if a target is not met")

    reaper = commands.add_parser(
        "reaper",
        help="real-time expiry lateness of the trio reaper vs one trio task per operation",
        formatter_class=defaults_shown,
    )
    reaper.add_argument("--num", type=int, default=10_000, help="outstanding operations")
    reaper.add_argument("--seed", type=int, default=0, help="seed of the timeouts")
    reaper.add_argument("--json", action="store_true", help="one JSON object")
    return parser


def _reaper(args: argparse.Namespace) -> list[str]:
    """Lateness percentiles (ms) of real-time expiry; takes about two seconds."""
    lateness = measure_lateness(args.num, seed=args.seed)
    if args.json:
        return [json.dumps({"bench": "reaper", **lateness})]
    rows = ["             count   p50_ms   p90_ms   p99_ms  p99.9_ms   max_ms"]
    for label, prefix in (("reaper", ""), ("task per op", "baseline_")):
        values = [lateness[f"{prefix}{key}_ms"] for key in ("p50", "p90", "p99", "p99_9", "max")]
        rows.append(
            f"{label:>11}  {int(lateness[f'{prefix}count']):6d}"
            + "".join(f" {value:8.2f}" for value in values)
        )
    rows.append("lateness: actual expiry time minus deadline, in real time (ms)")
    return rows


def _pure_python_line(argv: Sequence[str], compiled: float, as_json: bool) -> str:
    """With the compiled build: the same replay on pure Python (a subprocess, see
    :mod:`purgatory.compiled`), its requests per CPU second beside the compiled ones."""
    replay = [arg for arg in argv if arg != "--check"]  # its own targets are not the point
    command = pure_python_command("purgatory.bench", [*replay, "--json", "--no-memory"])
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    records = [json.loads(line) for line in output.splitlines()]
    pure = next(r["requests_per_cpu_s"] for r in records if r.get("impl") == "purgatory")
    speedup = round(compiled / pure, 2)
    if as_json:
        return json.dumps(
            {
                "bench": "purgatory",
                "build": "compiled",
                "requests_per_cpu_s": round(compiled, 1),
                "pure_python_requests_per_cpu_s": pure,
                "compiled_speedup": speedup,
            }
        )
    return (
        f"compiled build: {compiled:,.0f} req/CPU-s; pure Python (same replay, a subprocess): "
        f"{pure:,.0f} req/CPU-s; compiled speed-up {speedup}x"
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    try:
        if args.bench == "reaper":
            print("\n".join(_reaper(args)), flush=True)
            return 0
        if args.bench == "timer":
            timer_results = run_timer_bench(
                args.live,
                names=args.structures,
                per_tick=args.per_tick,
                repeat_windows=args.repeat,
                window_timers=args.window_timers,
                seed=args.seed,
                memory=not args.no_memory,
            )
            targets = report.timer_targets(timer_results)
            if args.json:
                lines = report.timer_json_lines(timer_results, targets)
            else:
                lines = [report.timer_table(timer_results, targets)]
        else:
            config = WorkloadConfig(
                num=args.num,
                rate=args.rate,
                keys=args.keys,
                key_space_size=args.key_space_size,
                timeout=args.timeout,
                pct50=args.pct50,
                pct75=args.pct75,
                purge_interval=args.purge_interval,
                seed=args.seed,
            )
            work_results = run_purgatory_bench(
                config, repeat=args.repeat, memory=not args.no_memory
            )
            targets = report.purgatory_targets(config, work_results)
            if args.json:
                lines = report.purgatory_json_lines(work_results, targets)
            else:
                lines = [report.purgatory_table(work_results, targets)]
            if compiled_packages(["purgatory"])["purgatory"]:
                compiled = next(r for r in work_results if r.impl == "purgatory")
                build_line = _pure_python_line(argv, compiled.requests_per_cpu_s, args.json)
                lines.insert(len(lines) - args.json, build_line)  # the targets line stays last
    except BenchArgumentError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines), flush=True)
    if args.check and not all(target.met for target in targets):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

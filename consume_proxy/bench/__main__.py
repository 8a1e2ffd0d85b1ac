"""``python -m consume_proxy.bench throughput [--n N] [--json]`` and ``python -m
consume_proxy.bench wakeup [--n N] [--interval-ms MS] [--seed S] [--json]``: print a table, or
one JSON object per line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import attrs

from consume_proxy.bench.throughput import run_throughput
from consume_proxy.bench.wakeup import run_wakeup


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m consume_proxy.bench", description=__doc__)
    commands = parser.add_subparsers(dest="bench", required=True)
    throughput = commands.add_parser("throughput", help="reads + acknowledgements per second")
    throughput.add_argument("--n", type=int, default=5000, help="records per path")
    throughput.add_argument("--json", action="store_true", help="one JSON object per line")
    wakeup = commands.add_parser("wakeup", help="record-to-reader latency: long poll vs polling")
    wakeup.add_argument("--n", type=int, default=200, help="records per reader")
    wakeup.add_argument("--interval-ms", type=float, default=10.0, help="the poller's sleep")
    wakeup.add_argument("--seed", type=int, default=1)
    wakeup.add_argument("--json", action="store_true", help="one JSON object per line")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one benchmark; return the exit status."""
    options = _parser().parse_args(argv)
    if options.bench == "throughput":
        rates = run_throughput(options.n)
        if options.json:
            for rate in rates:
                print(json.dumps({"bench": "throughput", **attrs.asdict(rate)}))
        else:
            print(f"{'path':9} {'records/CPU s':>13} {'records/s':>10}")
            for rate in rates:
                print(f"{rate.path:9} {rate.per_cpu_second:13.0f} {rate.per_wall_second:10.0f}")
        return 0
    results = run_wakeup(options.n, interval_ms=options.interval_ms, seed=options.seed)
    if options.json:
        for result in results:
            print(json.dumps({"bench": "wakeup", **attrs.asdict(result)}))
    else:
        print(f"{'reader':10} {'requests':>8} {'median ms':>10} {'p99 ms':>8} {'max ms':>8}")
        for result in results:
            print(
                f"{result.reader:10} {result.requests:8d} {result.median_ms:10.2f} "
                f"{result.p99_ms:8.2f} {result.max_ms:8.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

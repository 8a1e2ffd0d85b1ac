"""``python -m msgqueue.bench throughput [--n N] [--backends memory,sqlite] [--json]`` and
``python -m msgqueue.bench expiry [--n N] [--seed S] [--json]``: print a table, or one JSON
object per line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import attrs

from msgqueue.bench.expiry import run_expiry
from msgqueue.bench.throughput import BACKENDS, run_throughput


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m msgqueue.bench", description=__doc__)
    commands = parser.add_subparsers(dest="bench", required=True)
    throughput = commands.add_parser("throughput", help="messages per second")
    throughput.add_argument("--n", type=int, default=2000, help="messages per operation")
    throughput.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated")
    throughput.add_argument("--json", action="store_true", help="one JSON object per line")
    expiry = commands.add_parser("expiry", help="ttl and hide lateness: timers vs a 1 s sweep")
    expiry.add_argument("--n", type=int, default=100_000, help="messages")
    expiry.add_argument("--seed", type=int, default=1)
    expiry.add_argument("--json", action="store_true", help="one JSON object per line")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one benchmark; return the exit status."""
    options = _parser().parse_args(argv)
    if options.bench == "throughput":
        backends = tuple(name for name in options.backends.split(",") if name)
        if not set(backends) <= set(BACKENDS):
            print(f"--backends must name {' and/or '.join(BACKENDS)}", file=sys.stderr)
            return 2
        rates = run_throughput(options.n, backends)
        if options.json:
            for rate in rates:
                row = attrs.asdict(rate) | {
                    "per_cpu_second": rate.per_cpu_second,
                    "per_wall_second": rate.per_wall_second,
                }
                print(json.dumps({"bench": "throughput", **row}))
        else:
            print(f"{'backend':8} {'transport':11} {'operation':13} {'msg/CPU s':>10} {'msg/s':>8}")
            for rate in rates:
                print(
                    f"{rate.backend:8} {rate.transport:11} {rate.operation:13} "
                    f"{rate.per_cpu_second:10.0f} {rate.per_wall_second:8.0f}"
                )
        return 0
    results = run_expiry(options.n, seed=options.seed)
    if options.json:
        for result in results:
            print(json.dumps({"bench": "expiry", **attrs.asdict(result)}))
    else:
        print(f"{'mechanism':10} {'kind':5} {'min ms':>9} {'median':>9} {'p99':>9} {'max':>9}")
        for result in results:
            print(
                f"{result.mechanism:10} {result.kind:5} {result.min_ms:9.3f} "
                f"{result.median_ms:9.3f} {result.p99_ms:9.3f} {result.max_ms:9.3f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

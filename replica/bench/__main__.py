"""Command line: ``python -m replica.bench [--requests N] [--batch B] [--rounds R] [--json]``."""

from __future__ import annotations

import argparse
import json

from replica import bench


def main(argv: list[str] | None = None) -> None:
    """Run the four benchmarks and print their results (one JSON object each with --json)."""
    parser = argparse.ArgumentParser(prog="python -m replica.bench", description=bench.__doc__)
    parser.add_argument("--requests", type=int, default=4000, help="produce requests per run")
    parser.add_argument("--batch", type=int, default=10, help="records per produce request")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best kept)")
    parser.add_argument("--json", action="store_true", help="one JSON object per benchmark")
    args = parser.parse_args(argv)
    results = {
        "replication": bench.replication(args.requests, args.batch, args.rounds),
        "log_read": bench.log_read(rounds=args.rounds),
        "follower_fetch": bench.follower_fetch(rounds=args.rounds),
        "timestamp_lookup": bench.timestamp_lookup(rounds=args.rounds),
    }
    for name, result in results.items():
        if args.json:
            print(json.dumps({"benchmark": name, **result}, sort_keys=True))
        else:
            print(name)
            for key, value in result.items():
                shown = f"{value:,.2f}" if isinstance(value, float) else str(value)
                print(f"  {key:34} {shown}")


if __name__ == "__main__":
    main()

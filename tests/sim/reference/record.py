"""Record the simulator's reference results (see :mod:`tests.sim.reference.cases`).

    python -m tests.sim.reference.record [--jobs 2] > tests/sim/reference/reference.json

Runs every (case, seed) in ``--jobs`` worker processes; writes JSON to stdout: the cases'
overrides, the seeds and, per case and statistic, the values in seed order.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor

from tests.sim.reference.cases import CASES, SEEDS, STATS, statistics_of


def _run(job: tuple[str, int]) -> tuple[str, int, dict[str, float | None]]:
    name, seed = job
    return name, seed, statistics_of(name, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    jobs = [(name, seed) for name in CASES for seed in SEEDS]
    results: dict[tuple[str, int], dict[str, float | None]] = {}
    with ProcessPoolExecutor(parser.parse_args().jobs) as pool:
        for name, seed, stats in pool.map(_run, jobs):
            results[name, seed] = stats
            print(f"{name} seed {seed} done", file=sys.stderr)
    table = {
        "seeds": list(SEEDS),
        "cases": {
            name: {
                "overrides": list(CASES[name]),
                "stats": {path: [results[name, seed][path] for seed in SEEDS] for path in STATS},
            }
            for name in CASES
        },
    }
    json.dump(table, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

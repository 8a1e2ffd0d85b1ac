"""Cost model of the simulator: what a simulated message and a simulated request cost.

``python -m sim.bench.cost_model [--json]`` runs the default scenario at several producer
rates (:data:`RATES`) and ``linger.ms`` values (:data:`LINGERS_MS`), so that the number of
messages and the number of requests vary independently (a longer linger packs more messages
into a produce request), and fits, by least squares over the runs,

    CPU seconds of a run = a * messages + b * requests

where ``requests`` are the requests whose responses came back (clients' and followers', as the
run's ``requests`` table counts them). It prints ``a`` and ``b`` in microseconds, R² of the fit,
and the requests per message of each kind in the run closest to the scenario as bundled
(10,000 msg/s, linger.ms 5). A fixed cost per run (a third term, 1 in every run) came out
small and negative (-0.13 s), and engine events are nearly proportional to requests (with
them the fit gives one a negative coefficient), so neither is fitted. The fit itself is
:func:`fit`, any terms.

CPU time is the process's (``time.process_time``), which waiting for a busy machine's CPU does
not inflate; the runs are made one after another in one process.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np

if TYPE_CHECKING:
    from sim.scenario import Scenario

__all__ = [
    "DURATION_US",
    "LINGERS_MS",
    "RATES",
    "Fit",
    "fit",
    "main",
    "measure",
    "requests_per_message",
]

RATES: tuple[float, ...] = (1000.0, 2500.0, 5000.0, 10000.0)
"""Producer rates of the runs, messages per second."""

LINGERS_MS: tuple[int, ...] = (0, 5, 20)
"""``linger.ms`` values of the runs (each rate is run with each)."""

DURATION_US = 2_000_000
"""Simulated duration of each run (warmup: a quarter of it)."""

TERMS = ("messages", "requests")
"""The fitted terms."""


@attrs.frozen
class Fit:
    """A least-squares fit: ``coefficients`` by term name, ``r_squared`` of the fit."""

    coefficients: dict[str, float]
    r_squared: float


def fit(rows: Sequence[Mapping[str, float]], terms: Sequence[str], target: str) -> Fit:
    """Fit ``row[target] = sum(coefficient[t] * row[t] for t in terms)`` over ``rows`` by least
    squares (no implicit intercept: add a term that is 1 in every row for one).

    R² is 1 - residual sum of squares / total sum of squares about the mean of ``target``
    (1.0 when ``target`` is constant and fitted exactly). Raises ValueError with fewer rows
    than terms, or when a row lacks a term or the target (KeyError would not say which).
    """
    if len(rows) < len(terms):
        raise ValueError(f"need at least {len(terms)} rows to fit {list(terms)}, got {len(rows)}")
    for i, row in enumerate(rows):
        missing = [name for name in (*terms, target) if name not in row]
        if missing:
            raise ValueError(f"row {i} lacks {missing} (it has {sorted(row)})")
    x = np.array([[float(row[t]) for t in terms] for row in rows])
    y = np.array([float(row[target]) for row in rows])
    solution, *_ = np.linalg.lstsq(x, y, rcond=None)
    residual = float(np.sum((y - x @ solution) ** 2))
    total = float(np.sum((y - y.mean()) ** 2))
    r_squared = 1.0 - residual / total if total > 0 else float(residual == 0)
    coefficients = {t: float(c) for t, c in zip(terms, solution, strict=True)}
    return Fit(coefficients, r_squared)


def measure(scenario: Scenario) -> dict[str, float]:
    """Run ``scenario``; return its ``cpu_s``, ``messages``, ``requests``, ``events`` and
    ``requests.<api>`` for each kind of request."""
    from sim.runner import run_scenario

    cpu = time.process_time()
    result = run_scenario(scenario)
    cpu = time.process_time() - cpu
    by_api = Counter(result.requests.column("api").to_pylist())
    return {
        "cpu_s": cpu,
        "messages": result.messages.num_rows,
        "requests": result.requests.num_rows,
        "events": result.summary["run"]["events_processed"],
        **{f"requests.{api}": count for api, count in sorted(by_api.items())},
    }


def requests_per_message(row: Mapping[str, float]) -> dict[str, float]:
    """``requests.<api>`` of a :func:`measure` row, per message: ``{api: ratio}``."""
    messages = max(row["messages"], 1)
    return {
        name.removeprefix("requests."): round(count / messages, 4)
        for name, count in row.items()
        if name.startswith("requests.")
    }


def _runs(base: Scenario) -> list[dict[str, float]]:
    from sim.scenario import with_overrides

    rows = []
    for rate in RATES:
        for linger in LINGERS_MS:
            scenario = with_overrides(
                base,
                [
                    ("simulation.duration", DURATION_US),
                    ("simulation.warmup", DURATION_US // 4),
                    ("producers[0].rate", rate),
                    ("producers[0].linger_ms", linger),
                ],
            )
            rows.append({"rate": rate, "linger_ms": linger, **measure(scenario)})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from sim.scenario import load_scenario

    parser = argparse.ArgumentParser(prog="python -m sim.bench.cost_model", description=__doc__)
    parser.add_argument("--scenario", default="default", help="one producer (default: default)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    rows = _runs(load_scenario(options.scenario))
    model = fit(rows, TERMS, "cpu_s")
    bundled = min(rows, key=lambda r: (abs(r["rate"] - 10000), abs(r["linger_ms"] - 5)))
    per_kind = requests_per_message(bundled)
    report = {
        "us_per_message": round(model.coefficients["messages"] * 1e6, 1),
        "us_per_request": round(model.coefficients["requests"] * 1e6, 1),
        "r_squared": round(model.r_squared, 4),
        "requests_per_message": per_kind,
        "runs": rows,
    }
    if options.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"CPU = {report['us_per_message']} us x messages + {report['us_per_request']} us x "
        f"requests   (R^2 {report['r_squared']}, "
        f"{len(rows)} runs of {DURATION_US / 1e6:g} s)"
    )
    print(f"requests per message at {bundled['rate']:g} msg/s, linger.ms {bundled['linger_ms']}:")
    for api, ratio in per_kind.items():
        print(f"  {api:<16} {ratio:.4f}")
    print("runs: rate linger_ms messages requests events cpu_s")
    for row in rows:
        print(
            f"  {row['rate']:>7g} {row['linger_ms']:>3} {row['messages']:>8} "
            f"{row['requests']:>8} {row['events']:>9} {row['cpu_s']:7.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Instructions per simulated message, counted by callgrind: the simulator's deterministic cost.

    python -m sim.bench.instructions [--duration 1s] [--set KEY=VALUE ...] [--json]

Wall and CPU time depend on the machine and on what else runs on it (the same commit ran the
default scenario at 77,402 and at 52,547 messages per wall second on two 2-core VMs). The
number of instructions a run executes does not: valgrind's callgrind counts them, and the
same build, interpreter and scenario give the same count whatever the load (with
``PYTHONHASHSEED`` fixed, as here: the salt of str hashes moves dict probes). So a change to
the simulator's hot path is measured here first, its wall-clock effect by ``sim bench``.

This runs the bundled ``default`` scenario (``--set`` overrides it as ``sim run``'s does) for
``--duration`` simulated time, warmup half of it, in a child process under ``valgrind
--tool=callgrind``, counting only inside the engine's loop (``Simulator.run_until``: the
world's set-up and the result's tables are left out), and reports the instructions, the run's
messages, requests and engine events, and instructions per message. It needs valgrind and
the compiled build (``scripts/setup.sh --compiled``): callgrind finds the loop by the compiled
function's C symbol, :data:`RUN_UNTIL_SYMBOL`. A run takes about 50 times its uncounted time
(~35 s for the default 1 s).

``--fit`` runs the scenario at the producer rates and ``linger.ms`` values of
:data:`FIT_GRID`, which vary messages and engine events independently, and fits, by least
squares (:func:`sim.bench.cost_model.fit`),

    instructions = a * messages + b * events

the deterministic counterpart of ``python -m sim.bench.cost_model``'s fit of CPU time to
messages and requests. Counted in instructions, requests fit badly (~10% off: a produce at
``linger.ms`` 0 carries one message and costs less than one carrying many), engine events fit
to ~1% (a request is about four of them: its arrival, the handler's finish, the response's
arrival, and a client's timer or wake-up), and with both the fit is degenerate (they are
nearly proportional). About five minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from sim.scenario import Scenario, ScenarioError

__all__ = [
    "FIT_GRID",
    "FIT_TERMS",
    "RUN_UNTIL_SYMBOL",
    "InstructionsError",
    "collected_instructions",
    "cost_model",
    "main",
    "measure",
]

RUN_UNTIL_SYMBOL = "CPyDef_engine___Simulator___run_until"
"""mypyc's C function for ``sim.core.engine.Simulator.run_until``."""

FIT_GRID: tuple[tuple[float, int], ...] = (
    (10000.0, 5),
    (10000.0, 20),
    (10000.0, 0),
    (5000.0, 5),
    (2500.0, 0),
)
"""(producer rate in messages per second, ``linger.ms``) of the runs of :func:`cost_model`."""

FIT_TERMS = ("messages", "events")
"""The terms :func:`cost_model` fits."""

_COLLECTED = re.compile(r"^==\d+== Collected : (\d+)$", re.MULTILINE)


class InstructionsError(Exception):
    """The count cannot be made here (no valgrind, no compiled build, a failed run)."""


def collected_instructions(valgrind_stderr: str) -> int:
    """The ``Collected`` count from callgrind's report on stderr.

    Raises:
        InstructionsError: the report has no such line (callgrind did not run to the end).
    """
    found = _COLLECTED.findall(valgrind_stderr)
    if len(found) != 1:
        raise InstructionsError(
            f"callgrind reported no instruction count: {valgrind_stderr[-500:]}"
        )
    return int(found[0])


def _scenario(duration: str, overrides: Sequence[str]) -> Scenario:
    """The default scenario with ``overrides`` and ``duration`` (a duration with its unit),
    warmup half of it. Raises ScenarioError naming the field of a bad override."""
    from sim.scenario import load_scenario, with_overrides

    timing = ["simulation.warmup=0", f"simulation.duration={duration}"]
    scenario = load_scenario(overrides=[*overrides, *timing])
    return with_overrides(scenario, [("simulation.warmup", scenario.simulation.duration // 2)])


def _child(duration: str, overrides: Sequence[str]) -> dict[str, int]:
    """Run the scenario in this process; its messages, requests and engine events."""
    from sim.runner import run_scenario

    result = run_scenario(_scenario(duration, overrides))
    return {
        "messages": result.messages.num_rows,
        "requests": result.requests.num_rows,
        "events": result.summary["run"]["events_processed"],
    }


def measure(duration: str = "1s", overrides: Sequence[str] = ()) -> dict[str, float]:
    """Count the instructions of one run of the default scenario with ``overrides`` (``sim
    run``'s ``--set``) for ``duration`` (with its unit), see the module doc; return
    ``instructions``, ``messages``, ``requests``, ``events`` and ``instructions_per_message``.

    Raises:
        ScenarioError: a bad override or duration (one line naming the field).
        InstructionsError: valgrind is missing, the simulator's engine is not compiled, or
            the run failed.
    """
    from sim.core import engine

    _scenario(duration, overrides)  # a bad override fails here, in one line, not under valgrind

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise InstructionsError("valgrind is not installed (Debian: apt-get install valgrind)")
    if (engine.__file__ or "").endswith(".py"):
        raise InstructionsError(
            "the simulator is not compiled: callgrind finds its loop by the compiled "
            "function's symbol (scripts/setup.sh --compiled)"
        )
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            valgrind,
            "--tool=callgrind",
            f"--toggle-collect={RUN_UNTIL_SYMBOL}",
            f"--callgrind-out-file={Path(scratch) / 'callgrind.out'}",
            sys.executable,
            "-m",
            "sim.bench.instructions",
            "--child",
            f"--duration={duration}",
            *(f"--set={item}" for item in overrides),
        ]
        # str hashes are salted per process, and the salt moves dict probes, so the count by a
        # few hundredths of a percent: a fixed seed makes it repeat exactly.
        environment = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    if done.returncode != 0:
        raise InstructionsError(f"the run failed (exit {done.returncode}): {done.stderr[-500:]}")
    counts: dict[str, int] = json.loads(done.stdout)
    instructions = collected_instructions(done.stderr)
    return {
        "instructions": instructions,
        **counts,
        "instructions_per_message": round(instructions / max(counts["messages"], 1)),
    }


def cost_model(duration: str = "1s") -> dict[str, object]:
    """Count the instructions of a run at each point of :data:`FIT_GRID` (``duration`` each,
    see :func:`measure`) and fit them to :data:`FIT_TERMS`; return ``instructions_per_message``
    and ``instructions_per_event`` (the coefficients), ``r_squared`` and the ``runs``. Raises
    what :func:`measure` raises."""
    from sim.bench.cost_model import fit

    rows: list[dict[str, float]] = []
    for rate, linger_ms in FIT_GRID:
        overrides = [f"producers[0].rate={rate}", f"producers[0].linger_ms={linger_ms}"]
        rows.append({"rate": rate, "linger_ms": linger_ms, **measure(duration, overrides)})
    model = fit(rows, FIT_TERMS, "instructions")
    return {
        **{
            f"instructions_per_{term.removesuffix('s')}": round(coefficient)
            for term, coefficient in model.coefficients.items()
        },
        "r_squared": round(model.r_squared, 5),
        "runs": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sim.bench.instructions", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--duration", default="1s", help="simulated time, with its unit (1s)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--fit", action="store_true", help="fit instructions per message and per engine event"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if options.child:
        print(json.dumps(_child(options.duration, options.overrides)))
        return 0
    report: Mapping[str, object]
    try:
        if options.fit:
            if options.overrides:
                parser.error("--fit runs its own grid of rates and linger.ms: no --set")
            report = cost_model(options.duration)
        else:
            report = measure(options.duration, options.overrides)
    except (ScenarioError, InstructionsError) as error:
        print(f"sim.bench.instructions: {error}", file=sys.stderr)
        return 1
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m sim.bench.instructions``: callgrind's count of the engine loop's instructions."""

from __future__ import annotations

import pytest

from sim.bench.instructions import (
    FIT_GRID,
    InstructionsError,
    collected_instructions,
    cost_model,
    main,
    measure,
)
from sim.core.engine import Simulator
from tests.builds import compiled

CALLGRIND_TAIL = """==4711== Events    : Ir
==4711== Collected : 706561937
==4711==
==4711== I   refs:      706,561,937
"""


def test_the_count_is_read_from_callgrinds_report() -> None:
    assert collected_instructions("noise\n" + CALLGRIND_TAIL) == 706_561_937
    with pytest.raises(InstructionsError, match="no instruction count"):
        collected_instructions("==4711== I   refs: 12\n")


def test_a_bad_override_is_one_line_before_valgrind_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--set", "cluster.brokers=0"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("sim.bench.instructions: ") and "cluster.brokers" in error
    assert error.count("\n") == 1
    assert main(["--duration", "2x"]) == 1
    assert "simulation.duration" in capsys.readouterr().err


def test_a_run_is_counted_exactly_and_needs_the_compiled_build() -> None:
    if not compiled(Simulator):
        with pytest.raises(InstructionsError, match="not compiled"):
            measure("10ms")
        return
    first, second = measure("10ms"), measure("10ms")
    assert first == second  # deterministic, to the instruction
    assert first["messages"] > 0 and first["requests"] > 0 and first["events"] > 0
    assert first["instructions_per_message"] == round(first["instructions"] / first["messages"])


def test_the_cost_model_fits_each_runs_count_to_its_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[list[str]] = []

    def measure(duration: str, overrides: list[str]) -> dict[str, float]:
        made.append(overrides)
        rate = float(overrides[0].split("=")[1])
        linger = int(overrides[1].split("=")[1])
        messages, requests = rate, rate / (linger + 1) + 50
        events = 3 * requests + 100 * linger
        instructions = 9_000 * messages + 50_000 * events
        return {"messages": messages, "requests": requests, "events": events,
                "instructions": instructions}  # fmt: skip

    monkeypatch.setattr("sim.bench.instructions.measure", measure)
    model = cost_model("1s")
    assert len(made) == len(FIT_GRID) and all(len(overrides) == 2 for overrides in made)
    assert (model["instructions_per_message"], model["instructions_per_event"]) == (9_000, 50_000)
    assert model["r_squared"] == 1.0


def test_fit_takes_no_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--fit", "--set", "cluster.brokers=4"])
    assert "no --set" in capsys.readouterr().err

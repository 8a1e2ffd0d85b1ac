"""The memory benchmark's measurements (the runs themselves take minutes: not run here)."""

from __future__ import annotations

from sim.bench.memory import _PhaseMemory, growth
from sim.runner import PHASES, run_scenario
from sim.scenario import load_scenario


def test_a_phase_peak_sees_memory_freed_before_the_phase_ended() -> None:
    memory = _PhaseMemory()
    memory.ended("quiet")
    block = bytearray(64 * 2**20)
    block[::4096] = b"x" * len(block[::4096])  # touch every page: resident
    del block
    memory.ended("busy")
    quiet, busy = memory.phases["quiet"], memory.phases["busy"]
    assert busy["peak"] - busy["live"] >= 48 * 2**20
    assert busy["peak"] - quiet["peak"] >= 48 * 2**20


def test_growth_is_per_message_per_phase() -> None:
    def run(messages: int, live: int, peak: int) -> dict[str, object]:
        return {"messages": messages, "peak_rss_bytes": peak,
                "phases": {"simulate": {"live": live, "peak": peak}}}  # fmt: skip

    assert growth(run(1000, 10_000, 20_000), run(3000, 12_000, 26_000)) == {
        "peak_growth_bytes_per_message": 3.0,
        "phases_bytes_per_message": {"simulate": {"live": 1.0, "peak": 3.0}},
    }


def test_the_runner_reports_its_phases_in_order() -> None:
    seen: list[str] = []
    scenario = load_scenario(
        "default", ["simulation.duration=300ms", "simulation.warmup=100ms", "producers.rate=500"]
    )
    run_scenario(scenario, on_phase=seen.append)
    assert seen == list(PHASES) == ["build", "simulate", "tables", "summary"]

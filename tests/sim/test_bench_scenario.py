"""The scenario half of ``python -m sim bench``: runs the real world at several durations."""

from __future__ import annotations

import pytest

from sim.bench import scale_throughput, scenario_throughput
from sim.bench.memory import live_bytes_per_message
from tests.sim.world_scenarios import small_scenario


def test_scenario_throughput_runs_each_duration_and_reports_rates() -> None:
    report = scenario_throughput(small_scenario(), durations_s=(2, 1))
    assert set(report) == {
        "messages_per_wall_s", "events_per_wall_s", "messages_per_cpu_s", "events_per_cpu_s",
        "cpu_us_per_message_1s", "cpu_us_per_message_2s", "linearity",
    }  # fmt: skip
    assert all(value > 0 for value in report.values())


def test_repeated_runs_report_the_same_counts_and_the_best_times() -> None:
    once = scenario_throughput(small_scenario(), durations_s=(1,))
    best_of_3 = scenario_throughput(small_scenario(), durations_s=(1,), repeat=3)
    assert set(best_of_3) == set(once)
    # messages per CPU second x CPU per message = 1e6 in both: same messages, its own best CPU
    assert best_of_3["messages_per_cpu_s"] * best_of_3["cpu_us_per_message_1s"] == pytest.approx(
        1e6, rel=0.01
    )


@pytest.mark.parametrize("repeat", [0, -1])
def test_repeat_must_be_at_least_one(repeat: int) -> None:
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        scenario_throughput(small_scenario(), durations_s=(1,), repeat=repeat)
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        scale_throughput(small_scenario(), repeat=repeat)


@pytest.mark.parametrize("durations", [(), (2, 0)])
def test_scenario_throughput_needs_positive_durations(durations: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="durations_s must be positive seconds"):
        scenario_throughput(small_scenario(), durations_s=durations)


def test_scale_throughput_reports_messages_and_rates() -> None:
    report = scale_throughput(small_scenario(), duration_us=1_000_000)
    assert set(report) == {
        "messages", "messages_per_wall_s", "messages_per_cpu_s", "cpu_us_per_message",
    }  # fmt: skip
    assert 150 <= report["messages"] <= 250  # 200 msg/s for 1 s
    assert all(value > 0 for value in report.values())


def test_live_bytes_per_message_counts_what_a_run_keeps() -> None:
    per_message = live_bytes_per_message(small_scenario("simulation.duration=1s"))
    assert 100 < per_message < 1_000_000  # the world's fixed part is spread over ~200 messages

"""Run plots: the percentile curve, per-second time series, dropped panels, fault windows."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure

from sim.output import RunResult
from sim.output.plots import (
    commit_lag_figure,
    increase_per_second,
    latency_percentiles_figure,
    per_second,
    percentile_axis,
    percentile_curve,
    timeseries,
    timeseries_figure,
)
from sim.output.recorder import TIMESERIES_SCHEMA
from sim.output.result import FaultWindow
from sim.runner import run_scenario
from tests.sim.world_scenarios import small_scenario

RUN = {"description": "a test", "seed": 1, "warmup_us": 0, "duration_us": 3_000_000}


@functools.cache
def _broker_failure() -> RunResult:
    fault = {"type": "broker_failure", "broker": 1, "at": "1s", "duration": "1s"}
    return run_scenario(small_scenario(faults=[fault]))


def test_percentile_curve_is_nearest_rank_on_an_evenly_spaced_percentile_axis() -> None:
    values = np.random.default_rng(1).permutation(np.arange(1, 1001))
    quantiles, curve = percentile_curve(values, points=31)
    assert quantiles.size == curve.size == 32
    # Evenly spaced on log10(1 / (1 - q)) from 0 to 1 - 1/n = 0.999, then the maximum.
    np.testing.assert_allclose(percentile_axis(quantiles[:-1]), np.linspace(0, 3, 31), atol=1e-9)
    assert quantiles[-1] == 1.0
    # Nearest rank of 1..1000: the value at q is ceil(1000 q) (1 at q = 0).
    expected = [max(1, math.ceil(round(1000 * q, 9))) for q in quantiles]
    assert curve.tolist() == expected
    assert curve[0] == 1 and curve[-1] == 1000
    assert {900, 990, 999} <= set(curve.tolist())  # p90, p99, p99.9 are on the grid


def test_percentile_curve_follows_a_known_distribution() -> None:
    mean = 1000.0
    values = np.random.default_rng(2).exponential(mean, 1_000_000)
    quantiles, curve = percentile_curve(values)
    body = quantiles < 0.999  # the tail beyond has too few samples to be exact
    np.testing.assert_allclose(curve[body][1:], -mean * np.log1p(-quantiles[body][1:]), rtol=0.05)
    assert curve.size == 301  # a few hundred points however many values


def _samples(rows: list[tuple[int, str, str, float]]) -> pa.Table:
    times, sources, metrics, values = zip(*rows, strict=True)
    return pa.table(
        {
            "time_us": list(times),
            "source": list(sources),
            "metric": list(metrics),
            "value": list(values),
        },
        schema=TIMESERIES_SCHEMA,
    )


def test_per_second_keeps_the_mean_and_max_of_the_known_samples() -> None:
    samples = _samples(
        [
            (0, "a", "lag", 1.0),
            (500_000, "a", "lag", 3.0),
            (900_000, "a", "lag", math.nan),
            (1_000_000, "a", "lag", 10.0),
            (0, "b", "lag", 7.0),
        ]
    )
    assert per_second(samples).to_pylist() == [
        {"metric": "lag", "source": "a", "second": 0, "mean": 2.0, "max": 3.0},
        {"metric": "lag", "source": "a", "second": 1, "mean": 10.0, "max": 10.0},
        {"metric": "lag", "source": "b", "second": 0, "mean": 7.0, "max": 7.0},
    ]


def test_panels_with_nothing_in_them_are_dropped(tmp_path: Path) -> None:
    rows = []
    for t in range(0, 3_000_000, 100_000):
        rows += [
            (t, "burrow:events-0", "group_lag", float(t // 1000)),
            (t, "producer-0", "produce_errors", 0.0),
            (t, "broker-0", "replica_lag_max", math.nan),
            (t, "producer-0", "producer_backlog", 5.0),
        ]
    path = tmp_path / "timeseries.png"
    drawn = timeseries(_samples(rows), RUN, [FaultWindow("stall", 1_000_000, None)], path)
    assert drawn == ["group_lag", "producer_backlog"]  # lag and backlog first, the rest dropped
    assert path.stat().st_size > 10_000


def test_a_run_writes_its_plots_with_its_fault_windows(tmp_path: Path) -> None:
    result = _broker_failure()
    assert result.faults == (FaultWindow("broker failure (broker 1)", 1_000_000, 2_000_000),)
    written = result.write(tmp_path)
    plots = sorted(p.name for p in written if p.suffix == ".png")
    assert plots == ["commit_lag.png", "latency_percentiles.png", "timeseries.png"]
    for name in plots:
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")


def _legend(figure: Figure) -> list[str]:
    return figure.axes[0].get_legend_handles_labels()[1]


def test_the_commit_plot_shows_send_to_commit_and_says_when_nothing_was_committed() -> None:
    result = _broker_failure()
    figure = commit_lag_figure(result.messages, result.summary["run"], result.faults)
    assert _legend(figure) == [
        "fault: broker failure (broker 1)", "send to commit: median", "send to commit: max",
        "processing to commit: median", "processing to commit: max",
    ]  # fmt: skip
    assert not figure.axes[0].texts
    uncommitted = result.messages.set_column(
        result.messages.schema.get_field_index("committed_us"), "committed_us",
        pa.nulls(result.messages.num_rows, pa.int64()),
    )  # fmt: skip
    for column in ("commit_latency_us", "send_to_commit_latency_us"):
        index = uncommitted.schema.get_field_index(column)
        uncommitted = uncommitted.set_column(index, column, pa.nulls(len(uncommitted), pa.int64()))
    empty = commit_lag_figure(uncommitted, result.summary["run"], ())
    assert _legend(empty) == []
    [note] = empty.axes[0].texts
    assert note.get_text().startswith("no message was committed in this run")
    assert empty.axes[0].get_xlim() == (0.0, 3.0)


def test_an_empty_latency_is_named_in_the_percentile_plot() -> None:
    result = run_scenario(
        small_scenario("simulation.duration=1s", "burrow.commit_interval_ms=5000")
    )
    figure = latency_percentiles_figure(result.messages, result.summary["run"])
    labels = _legend(figure)
    assert labels[2:] == ["commit (n=0)", "send-to-commit (n=0)"]
    assert labels[0].startswith("produce (n=") and labels[0] != "produce (n=0)"


def test_error_counts_are_drawn_per_second_with_room_above_the_lines() -> None:
    # A running total of errors: 2 in second 0, none in second 1, 3 in second 2.
    totals = {0: 1.0, 500_000: 2.0, 1_000_000: 2.0, 1_500_000: 2.0, 2_000_000: 4.0,
              2_500_000: 5.0}  # fmt: skip
    rows = [(t, "producer-0", "produce_errors", v) for t, v in totals.items()]
    rows += [(t, "burrow", "pool_in_flight", 8.0) for t in totals]  # at its maximum throughout
    figure, drawn = timeseries_figure(_samples(rows), RUN, [])
    assert drawn == ["pool_in_flight", "produce_errors"]
    pool, errors = figure.axes
    assert [list(line.get_ydata()) for line in errors.lines] == [[2.0, 0.0, 3.0]]
    assert errors.get_ylabel() == "produce_errors\nper second"
    assert errors.get_ylim()[1] > 3.0 and pool.get_ylim()[1] > 8.0  # lines below the frame
    np.testing.assert_array_equal(increase_per_second(np.array([2.0, 2.0, 5.0])), [2, 0, 3])

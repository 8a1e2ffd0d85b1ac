"""The real run function: one (point, seed) of a sweep through :func:`sim.runner.run_scenario`.

The driver reads the study's scenario file once, with its ``base`` chain merged
(:func:`scenario_table`), and ships that table to the tasks, so workers need no scenario
files. In a task, :func:`run_point` builds the scenario, applies the point's overrides with
the scenario loader (exactly like ``--set``), runs it, and returns the :class:`RunResult`'s
tables plus its summary flattened to one row (``run_summary``).

:func:`simulate` is the same path with the world builder as a parameter, which is how tests
run a sweep against a small stand-in world, fast and without the broker cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from sim.output import RunResult
from sim.output.result import PROXY_TABLE
from sim.runner import WorldBuilder, build_cluster, run_scenario
from sim.scenario import Scenario, ScenarioError, with_overrides
from sim.scenario.convert import build
from sim.scenario.files import load_raw
from sim.sweep.errors import StudyError
from sim.sweep.grid import expand_points
from sim.sweep.study import DURATION_KNOB, Study, column_name


def scenario_table(path: Path) -> dict[str, Any]:
    """The TOML table of the scenario file at ``path``, ``base`` chain merged (picklable)."""
    return load_raw(path)


def point_scenario(
    table: Mapping[str, Any], overrides: Mapping[str, Any], duration_s: float | None
) -> Scenario:
    """The scenario of one point: ``table`` built, then ``overrides`` applied in order, then
    ``duration_s`` (rounded to whole microseconds) as ``simulation.duration``.

    Raises :class:`ScenarioError` (one line naming the field) for a bad table or override.
    """
    items = list(overrides.items())
    if duration_s is not None:
        items.append((DURATION_KNOB, round(duration_s * 1_000_000)))
    return with_overrides(build(Scenario, dict(table)), items)


def check_points(study: Study) -> None:
    """Build every point's scenario on the driver, before any Spark task starts.

    Raises :class:`StudyError` naming the study, the point and the scenario field when the
    scenario file or an override is bad, and naming the statistic when ``[report] metrics``
    asks for the consume proxy's (``proxy_*``) of a point without ``[proxy]``.
    """
    try:
        table = scenario_table(study.scenario_path)
    except ScenarioError as exc:
        raise StudyError(f"{study.origin}: [study] scenario: {exc}") from None
    proxy_metrics = [name for name in study.report_metrics if name.startswith("proxy_")]
    for point in expand_points(study):
        try:
            scenario = point_scenario(table, point.overrides(study.fixed), study.duration_s)
        except ScenarioError as exc:
            raise StudyError(
                f"{study.origin}: point {point.point_id} ({point.label()}): {exc}"
            ) from None
        if proxy_metrics and scenario.proxy is None:
            raise StudyError(
                f"{study.origin}: [report] metrics: {proxy_metrics[0]!r} is a consume proxy's "
                f"statistic, and point {point.point_id} ({point.label()}) has no [proxy] section"
            )


def flatten_summary(summary: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A run summary as one flat row: nested keys joined by ``_`` and made column-safe
    (``{"latency": {"commit": {"p99.9_ms": x}}}`` -> ``{"latency_commit_p99_9_ms": x}``)."""
    row: dict[str, Any] = {}
    for key, value in summary.items():
        name = column_name(f"{prefix}_{key}" if prefix else str(key))
        if isinstance(value, Mapping):
            row.update(flatten_summary(value, name))
        else:
            row[name] = value
    return row


def result_tables(result: RunResult) -> dict[str, pa.Table]:
    """The tables a sweep records for one run: messages, requests, timeseries, run_summary,
    and with a consume proxy its ``proxy`` table."""
    return {
        "messages": result.messages,
        "requests": result.requests,
        "timeseries": result.timeseries,
        **({PROXY_TABLE: result.proxy} if result.proxy is not None else {}),
        "run_summary": pa.Table.from_pylist([flatten_summary(result.summary)]),
    }


def simulate(
    table: Mapping[str, Any],
    overrides: Mapping[str, Any],
    seed: int,
    duration_s: float | None,
    *,
    build_world: WorldBuilder = build_cluster,
) -> dict[str, pa.Table]:
    """Run one point and seed with ``build_world`` and return :func:`result_tables`."""
    scenario = point_scenario(table, overrides, duration_s)
    return result_tables(run_scenario(scenario, seed=seed, progress=False, build=build_world))


def run_point(
    table: Mapping[str, Any], overrides: Mapping[str, Any], seed: int, duration_s: float | None
) -> dict[str, pa.Table]:
    """The sweep's real run function (:data:`sim.sweep.runner.DEFAULT_RUNNER`): the broker
    cluster of :func:`sim.runner.build_cluster`. Raises whatever the run raises."""
    return simulate(table, overrides, seed, duration_s)

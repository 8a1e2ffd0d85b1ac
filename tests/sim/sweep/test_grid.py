"""Grid expansion: Cartesian product in declaration order, one task per (point, seed)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.sweep.grid import expand_points, expand_tasks
from sim.sweep.study import Knob, Study


def make_study(values: list[list[int]], seeds: int) -> Study:
    grid = tuple(
        Knob(name=f"section.knob{i}", column=f"section_knob{i}", values=tuple(v))
        for i, v in enumerate(values)
    )
    return Study(
        origin="test",
        name="test",
        description="",
        scenario="default",
        scenario_path=Path("default.toml"),
        seeds=tuple(range(1, seeds + 1)),
        duration_s=None,
        fixed={"fixed.knob": 5, "section.knob0": -1},
        grid=grid,
        report_x=None,
        report_series=None,
    )


def test_points_vary_the_last_knob_fastest() -> None:
    points = expand_points(make_study([[1, 2], [10, 20, 30]], seeds=1))
    assert [p.point_id for p in points] == list(range(6))
    assert [tuple(v for _, v in p.knobs) for p in points] == [
        (1, 10), (1, 20), (1, 30), (2, 10), (2, 20), (2, 30)
    ]  # fmt: skip
    assert points[4].label() == "knob0=2, knob1=20"


def test_grid_values_override_the_fixed_ones_and_come_after_them() -> None:
    task = expand_tasks(make_study([[1, 2]], seeds=2))[3]
    assert (task.task_id, task.point_id, task.seed) == (3, 1, 2)
    assert task.overrides == (("fixed.knob", 5), ("section.knob0", 2))


@settings(max_examples=50)
@given(
    values=st.lists(
        st.lists(st.integers(), min_size=1, max_size=4, unique=True), min_size=1, max_size=3
    ),
    seeds=st.integers(1, 4),
)
def test_one_task_per_point_and_seed(values: list[list[int]], seeds: int) -> None:
    study = make_study(values, seeds)
    points = expand_points(study)
    tasks = expand_tasks(study)
    assert len(points) == math.prod(len(v) for v in values)
    assert [tuple(v for _, v in p.knobs) for p in points] == list(itertools.product(*values))
    assert len(tasks) == len(points) * seeds
    assert [t.task_id for t in tasks] == list(range(len(tasks)))
    assert {(t.point_id, t.seed) for t in tasks} == {
        (p.point_id, s) for p in points for s in study.seeds
    }
    assert [(t.point_id, t.seed) for t in tasks] == sorted((t.point_id, t.seed) for t in tasks)

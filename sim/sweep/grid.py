"""Grid expansion: a study's knobs -> points -> one task per (point, seed).

Points are the Cartesian product of the grid's value lists in the order the study declares
them, the last knob varying fastest; ``point_id`` numbers them from 0. The same study file
therefore always gives the same ids. Tasks are ordered by point, then seed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import attrs

from sim.sweep.study import KnobValue, Study


@attrs.frozen
class Point:
    """One combination of grid values. ``knobs`` maps knob names to values, in grid order."""

    point_id: int
    knobs: tuple[tuple[str, KnobValue], ...]

    def overrides(self, fixed: Mapping[str, Any]) -> dict[str, Any]:
        """The scenario overrides of this point: the study's ``[set]`` entries, then its knobs."""
        return {**fixed, **dict(self.knobs)}

    def label(self) -> str:
        """A short human-readable label, e.g. ``workers=4, commit_interval_ms=100``."""
        return ", ".join(f"{name.rsplit('.', 1)[-1]}={value}" for name, value in self.knobs)


@attrs.frozen
class Task:
    """One simulation: a point, a seed, and the full overrides to apply to the scenario."""

    task_id: int
    point_id: int
    seed: int
    overrides: tuple[tuple[str, Any], ...]


def expand_points(study: Study) -> list[Point]:
    """Every point of the study's grid, numbered in declaration order (last knob fastest)."""
    names = [knob.name for knob in study.grid]
    combos = itertools.product(*(knob.values for knob in study.grid))
    return [
        Point(point_id=i, knobs=tuple(zip(names, combo, strict=True)))
        for i, combo in enumerate(combos)
    ]


def expand_tasks(study: Study) -> list[Task]:
    """One task per (point, seed), ordered by point then seed; ``task_id`` numbers them from 0."""
    tasks: list[Task] = []
    for point in expand_points(study):
        overrides = tuple(point.overrides(study.fixed).items())
        for seed in study.seeds:
            tasks.append(Task(len(tasks), point.point_id, seed, overrides))
    return tasks

"""``OUT/sweep.json``: what a sweep ran, where it put the records, and which runs failed.

Beside it, ``OUT/scenario.toml`` is the study's scenario fully resolved, with the study's
``[set]`` values and duration applied (:mod:`sim.scenario.writing`): a run of the sweep is
that file plus its point's knobs (``points``) and its seed. The manifest's ``environment``
records the installation that ran the sweep (:func:`sim.output.provenance.environment`:
project version and git revision, Python, the libraries the output bytes depend on).

The sweep job writes it last, so its presence means the sweep ended and the records of every
run it lists as finished are complete; the analysis and the report read only this file and
the records, so they can run again on an old output directory without the study file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from sim.sweep.errors import SweepError
from sim.sweep.grid import Point
from sim.sweep.study import DEFAULT_REPORT_METRICS, KnobValue, Study

MANIFEST_NAME = "sweep.json"


@attrs.frozen
class TableInfo:
    """One table of records: its folder (relative to the output), row count and columns."""

    name: str
    path: str
    rows: int
    columns: tuple[str, ...]


@attrs.frozen
class KnobInfo:
    """One grid knob: the scenario name, its column in the records, and its values."""

    name: str
    column: str
    values: tuple[KnobValue, ...]


@attrs.frozen
class FailedRun:
    """A run that did not finish: its point, seed and error (one line)."""

    point_id: int
    seed: int
    error: str


@attrs.frozen
class Manifest:
    """Everything the analysis and the report need to know about a finished sweep."""

    study: str
    description: str
    scenario: str
    seeds: tuple[int, ...]
    duration_s: float | None
    fixed: Mapping[str, Any]
    knobs: tuple[KnobInfo, ...]
    points: Mapping[int, Mapping[str, KnobValue]]
    report_x: str | None
    report_series: str | None
    tables: Mapping[str, TableInfo]
    failed: tuple[FailedRun, ...]
    time_limit_s: float | None
    runner: str
    master: str
    spark_version: str
    wall_s: float
    environment: Mapping[str, Any] = attrs.field(factory=dict)
    report_metrics: tuple[str, ...] = DEFAULT_REPORT_METRICS
    report_references: Mapping[str, float] = attrs.field(factory=dict)

    @classmethod
    def for_study(
        cls,
        study: Study,
        *,
        points: Sequence[Point],
        tables: Mapping[str, TableInfo],
        failed: tuple[FailedRun, ...],
        time_limit_s: float | None,
        runner: str,
        master: str,
        spark_version: str,
        wall_s: float,
        environment: Mapping[str, Any],
    ) -> Manifest:
        """The manifest of a sweep of ``study`` that produced ``tables``; ``failed`` lists the
        runs that did not finish, ``time_limit_s`` the wall-time limit of each run,
        ``environment`` the installation (:func:`sim.output.provenance.environment`)."""
        return cls(
            study=study.name,
            description=study.description,
            scenario=study.scenario,
            seeds=study.seeds,
            duration_s=study.duration_s,
            fixed=dict(study.fixed),
            knobs=tuple(KnobInfo(k.name, k.column, k.values) for k in study.grid),
            points={p.point_id: dict(p.knobs) for p in points},
            report_x=study.report_x,
            report_series=study.report_series,
            tables=dict(tables),
            failed=failed,
            time_limit_s=time_limit_s,
            runner=runner,
            master=master,
            spark_version=spark_version,
            wall_s=round(wall_s, 3),
            environment=dict(environment),
            report_metrics=study.report_metrics,
            report_references=dict(study.report_references),
        )

    def knob(self, name: str) -> KnobInfo:
        """The grid knob called ``name``; raises :class:`KeyError` if there is none."""
        for knob in self.knobs:
            if knob.name == name:
                return knob
        raise KeyError(name)

    def write(self, out_dir: Path) -> Path:
        """Write ``out_dir/sweep.json`` and return its path."""
        path = out_dir / MANIFEST_NAME
        document = attrs.asdict(self, recurse=True)
        document["points"] = {str(k): v for k, v in self.points.items()}
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def read(cls, out_dir: Path) -> Manifest:
        """The manifest in ``out_dir``; raises :class:`SweepError` if it is missing or bad."""
        path = out_dir / MANIFEST_NAME
        try:
            document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                study=document["study"],
                description=document["description"],
                scenario=document["scenario"],
                seeds=tuple(document["seeds"]),
                duration_s=document["duration_s"],
                fixed=document["fixed"],
                knobs=tuple(
                    KnobInfo(k["name"], k["column"], tuple(k["values"])) for k in document["knobs"]
                ),
                points={int(k): v for k, v in document["points"].items()},
                report_x=document["report_x"],
                report_series=document["report_series"],
                tables={
                    name: TableInfo(t["name"], t["path"], t["rows"], tuple(t["columns"]))
                    for name, t in document["tables"].items()
                },
                failed=tuple(
                    FailedRun(f["point_id"], f["seed"], f["error"]) for f in document["failed"]
                ),
                time_limit_s=document["time_limit_s"],
                runner=document["runner"],
                master=document["master"],
                spark_version=document["spark_version"],
                wall_s=document["wall_s"],
                environment=document.get("environment", {}),  # absent before issue 15
                report_metrics=tuple(document.get("report_metrics", DEFAULT_REPORT_METRICS)),
                report_references=document.get("report_references", {}),
            )
        except FileNotFoundError:
            raise SweepError(f"{out_dir}: no {MANIFEST_NAME}; is this a finished sweep?") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise SweepError(f"{path}: not a sweep manifest ({exc!r})") from None

"""What each finished task leaves on disk, so that no finished run is lost and a rerun resumes.

Every Spark task ends by writing ``OUT/tasks/point-<id>-seed-<seed>.json`` (a temporary file,
then a rename), after its record tables: the :class:`TaskResult` (row counts, schemas, the
run's one-row summary, wall time) or, when its simulation raised or ran out of time, the
error. The driver reads these files instead of what the tasks return, so a sweep whose Spark
job was cut short (a crashed worker, a killed JVM, Ctrl-C) still knows every run that
finished.

Each file carries the task's *key* (:func:`task_key`): a SHA-256 of everything its run
depends on (the run function's name, the scenario table, the point's overrides, the seed,
the duration, the knob columns). A rerun into the same directory keeps the runs whose file
holds no error and the same key, and :func:`clear_unfinished` deletes the files of every
other run (failed or interrupted) before running them again. Finished runs are never deleted
behind the user's back: :func:`check_output_dir` refuses, before anything runs, a directory
holding finished runs that the study does not have (another study's, or this one's before it
changed) unless the sweep starts afresh, and any non-empty directory that is not a sweep's
output. When the sweep ends, the records of failed runs are deleted and their outcome files
(with the error) kept.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import uuid
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa

from sim.sweep.errors import OutputConflictError
from sim.sweep.grid import Task

TASKS_DIR = "tasks"
_SEED_FILE = re.compile(r"seed-(\d+)\.parquet")
_POINT_DIR = re.compile(r"point_id=(\d+)")


@attrs.frozen
class TaskResult:
    """One run's outcome: metadata of its record tables (they are already on disk), or the
    ``error`` that ended it (then ``rows``, ``schemas`` and ``summary`` are empty)."""

    task_id: int
    point_id: int
    seed: int
    rows: Mapping[str, int]
    schemas: Mapping[str, bytes]
    summary: Mapping[str, Any]
    wall_s: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True if the run finished and its tables were written."""
        return self.error is None


@attrs.frozen
class PendingTask:
    """A task to run and its key (see the module docstring)."""

    task: Task
    key: str


def task_key(
    runner: str,
    scenario: Mapping[str, Any],
    duration_s: float | None,
    point_columns: Sequence[tuple[pa.Field, Any]],
    task: Task,
) -> str:
    """The SHA-256 (hex) of everything the run of ``task`` depends on."""
    document = {
        "runner": runner,
        "scenario": scenario,
        "duration_s": duration_s,
        "columns": [[field.name, str(field.type), value] for field, value in point_columns],
        "point_id": task.point_id,
        "seed": task.seed,
        "overrides": [list(item) for item in task.overrides],
    }
    text = json.dumps(document, sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def task_file(out_dir: Path, point_id: int, seed: int) -> Path:
    """Where the outcome of run (point, seed) is kept."""
    return out_dir / TASKS_DIR / f"point-{point_id}-seed-{seed}.json"


def write_task_file(out_dir: Path, key: str, result: TaskResult) -> None:
    """Write ``result`` with its ``key`` atomically (a hidden temporary file, then a rename)."""
    path = task_file(out_dir, result.point_id, result.seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        **attrs.asdict(result),
        "key": key,
        "schemas": {name: base64.b64encode(data).decode() for name, data in result.schemas.items()},
    }
    scratch = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    scratch.write_text(json.dumps(document) + "\n", encoding="utf-8")
    os.replace(scratch, path)


def read_task_file(out_dir: Path, pending: PendingTask) -> TaskResult | None:
    """The outcome of ``pending``'s run if its file exists and holds the same key, else None
    (a file that cannot be read counts as missing)."""
    task = pending.task
    try:
        document = json.loads(task_file(out_dir, task.point_id, task.seed).read_text("utf-8"))
        if document["key"] != pending.key:
            return None
        return TaskResult(
            task_id=task.task_id,
            point_id=task.point_id,
            seed=task.seed,
            rows=document["rows"],
            schemas={k: base64.b64decode(v) for k, v in document["schemas"].items()},
            summary=document["summary"],
            wall_s=document["wall_s"],
            error=document["error"],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def clear_unfinished(
    out_dir: Path, records_dir: Path, keep: Collection[tuple[int, int]], *, outcomes: bool = True
) -> None:
    """Delete every record file in ``records_dir`` except those of the runs ``keep`` names as
    (point_id, seed), along with temporary files and the per-point files the driver writes
    (``all-seeds.parquet``); empty folders go too. With ``outcomes``, delete the other runs'
    outcome files as well."""
    for path in sorted((out_dir / TASKS_DIR).glob("*") if outcomes else ()):
        match = re.fullmatch(r"point-(\d+)-seed-(\d+)\.json", path.name)
        if match is None or (int(match[1]), int(match[2])) not in keep:
            path.unlink()
    if not records_dir.is_dir():
        return
    for path in sorted(records_dir.rglob("*"), reverse=True):  # files before their folders
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
            continue
        seed = _SEED_FILE.fullmatch(path.name)
        point = _POINT_DIR.fullmatch(path.parent.name)
        if seed is None or point is None or (int(point[1]), int(seed[1])) not in keep:
            path.unlink()


def check_output_dir(out_dir: Path, pending: Sequence[PendingTask], *, resume: bool) -> None:
    """Refuse an output directory whose contents the sweep of ``pending`` would delete.

    A directory that does not exist or is empty is fine. One that is not empty must be a
    sweep's output (it has ``tasks/`` or ``sweep.json``): a sweep deletes files in
    ``records/`` and ``tasks/`` and overwrites its reports. In a sweep's output, with
    ``resume``, every finished run must be one of ``pending`` with the same key (it is kept);
    a finished run of another point, seed or key would be deleted, so it is refused too.
    Without ``resume`` the caller asked to replace everything. Raises
    :class:`~sim.sweep.errors.OutputConflictError` (one line) otherwise.
    """
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        return
    if not (out_dir / TASKS_DIR).is_dir() and not (out_dir / "sweep.json").is_file():
        raise OutputConflictError(
            f"{out_dir}: not empty and not a sweep's output directory (it has no tasks/ nor "
            "sweep.json); a sweep deletes and overwrites files in its output directory: "
            "choose a new or empty one"
        )
    if not resume:
        return
    keys = {(p.task.point_id, p.task.seed): p.key for p in pending}
    others = []
    for path in sorted((out_dir / TASKS_DIR).glob("point-*-seed-*.json")):
        match = re.fullmatch(r"point-(\d+)-seed-(\d+)\.json", path.name)
        try:
            document = json.loads(path.read_text("utf-8"))
            finished, key = document["error"] is None, document["key"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # unreadable: not a result
        if match is not None and finished and keys.get((int(match[1]), int(match[2]))) != key:
            others.append(f"point {match[1]} seed {match[2]}")
    if others:
        named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise OutputConflictError(
            f"{out_dir}: holds {len(others)} finished runs this study does not have ({named}: "
            "from another study, or from this one before it changed); run with --fresh to "
            "replace them, or choose another --out"
        )

"""Study files: a base scenario, a grid over its knobs, and a number of seeds per point.

A study is a small TOML file::

    [study]
    name = "commit-interval"          # optional; defaults to the file's stem
    description = "..."               # optional
    scenario = "burrow"               # a bundled scenario name, or a path (relative to the study)
    seeds = 3                         # seeds per point: first_seed, first_seed + 1, ...
    first_seed = 1                    # optional (default 1)
    duration_s = 5.0                  # optional simulated duration; default: the scenario's own
    time_limit_s = 600                # optional wall-clock limit per run; default: none
    allow_large = false               # optional: lift the limits on points and runs

    [set]                             # optional: overrides applied to every point
    "producer.acks" = "all"

    [grid]                            # required: one list of values per knob
    "consumer.commit_interval_ms" = [100, 1000]
    "consumer.workers" = [1, 4, 8]

    [report]                          # optional: the axes of the plots
    x = "consumer.commit_interval_ms" # default: the first knob with more than one value
    series = "consumer.workers"       # default: the next knob with more than one value
    metrics = ["send_to_commit_p99_ms", "never_committed"]  # default: DEFAULT_REPORT_METRICS
    references = { "commit interval" = 50 }  # optional: horizontal lines on latency plots (ms)

Knob names are the scenario loader's override paths (``section.key``, ``producers[0].acks``,
Kafka's dotted names; see ``python -m sim knobs``). A key that contains a dot is a whole knob
name; a key without one is a section whose entries are knobs under it, so dotted TOML keys
(``burrow.num_workers = [1, 4]``) and sub-tables (``[grid.burrow]``) work too. Grid values are
scalars (bool, int, float, string), one type per knob (ints and floats mix as floats). A
``[set]`` value may also be a table, e.g. ``"burrow.processing_time" = { distribution =
"lognormal", median = "1ms", sigma = 0.5 }``, which a grid can then vary inside
(``"burrow.processing_time.sigma" = [0.25, 1.0]``). Overrides apply in order: ``[set]``, then
the point's grid values, then ``duration_s`` as ``simulation.duration``.

Size limits keep a typo from hanging the driver: at most :data:`MAX_POINTS` points and
:data:`MAX_RUNS` runs (points x seeds), unless ``allow_large = true``; seeds must fit in a
64-bit integer (they are an ``int64`` column of every table), whatever ``allow_large`` says.

``[report] metrics`` names the statistics plotted, one plot each, from
:func:`sim.sweep.statistics.metrics` (e.g. ``send_to_commit_p99_ms``, ``never_committed``);
``references`` labels values in milliseconds drawn as horizontal lines on the plots of latency
statistics (and a plot whose ``x`` is a commit interval also gets the line latency = x).

:func:`load_study` raises :class:`StudyError` with one line naming the bad field; it never lets
a TOML or type error escape.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from sim.scenario import ScenarioError, resolve_source
from sim.scenario.schema import MAX_SEED
from sim.sweep.errors import StudyError
from sim.sweep.statistics import metrics

KnobValue = bool | int | float | str
"""A value a grid or ``[set]`` entry may give a knob."""

RESERVED_COLUMNS = frozenset({"point_id", "seed"})
"""Columns the sweep adds to every table; no knob may map onto them."""

_SEGMENT = r"[A-Za-z_][A-Za-z0-9_-]*(?:\[\d+\])?"
_KNOB_NAME = re.compile(rf"{_SEGMENT}(?:\.(?:{_SEGMENT}|\d+))+")
DURATION_KNOB = "simulation.duration"
"""The knob ``duration_s`` sets (in microseconds)."""
_STUDY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_TOP_LEVEL = {"study", "set", "grid", "report"}
_STUDY_KEYS = {
    "name", "description", "scenario", "seeds", "first_seed", "duration_s", "time_limit_s",
    "allow_large",
}  # fmt: skip
MAX_POINTS = 10_000
"""The most points a study may have unless ``allow_large``: every point's scenario is built
and checked on the driver before Spark starts, and each point is a row of the report."""
MAX_RUNS = 100_000
"""The most runs (points x seeds) a study may have unless ``allow_large``."""
_LIFT = "set allow_large = true in [study] to run it anyway"
_REPORT_KEYS = {"x", "series", "metrics", "references"}
DEFAULT_REPORT_METRICS = (
    "send_to_commit_p99_ms",
    "commit_p99_ms",
    "commit_p50_ms",
    "end_to_end_p99_ms",
    "produce_p99_ms",
    "throughput_msg_s",
    "never_committed",
)
"""The statistics plotted when ``[report]`` names none."""


@attrs.frozen
class Knob:
    """One grid dimension: a scenario knob and the values the sweep gives it.

    ``column`` is the knob's column name in every output table (see :func:`column_name`).
    """

    name: str
    column: str
    values: tuple[KnobValue, ...]


@attrs.frozen
class Study:
    """A validated study. ``origin`` names its file in messages; ``scenario_path`` is the
    resolved file of the base scenario; ``fixed`` holds the ``[set]`` overrides;
    ``time_limit_s`` bounds each run's wall time (None: no limit); ``allow_large`` lifts the
    limits on points and runs."""

    origin: str
    name: str
    description: str
    scenario: str
    scenario_path: Path
    seeds: tuple[int, ...]
    duration_s: float | None
    fixed: Mapping[str, Any]
    grid: tuple[Knob, ...]
    report_x: str | None
    report_series: str | None
    time_limit_s: float | None = None
    allow_large: bool = False
    report_metrics: tuple[str, ...] = DEFAULT_REPORT_METRICS
    report_references: Mapping[str, float] = attrs.field(factory=dict)

    def knob(self, name: str) -> Knob:
        """The grid knob called ``name``; raises :class:`KeyError` if the grid has none."""
        for knob in self.grid:
            if knob.name == name:
                return knob
        raise KeyError(name)


def bundled_studies() -> list[str]:
    """Names of the studies shipped in ``sim/studies``, sorted."""
    folder = resources.files("sim").joinpath("studies")
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def _looks_like_path(ref: str) -> bool:
    return ref.endswith(".toml") or "/" in ref or "\\" in ref


def resolve_study(ref: str | Path) -> Path:
    """The file of a study given as a path or as the name of a bundled study.

    Raises :class:`StudyError` if no such file exists.
    """
    if isinstance(ref, Path) or _looks_like_path(ref):
        path = Path(ref)
        if not path.is_file():
            raise StudyError(f"{path}: no such study file")
        return path
    if ref in bundled_studies():
        return Path(str(resources.files("sim").joinpath("studies", f"{ref}.toml")))
    raise StudyError(
        f"unknown study {ref!r}: give a path to a .toml file or one of the bundled studies "
        f"({', '.join(bundled_studies())})"
    )


def _resolve_scenario(ref: str, base_dir: Path, origin: str) -> Path:
    try:
        return resolve_source(ref, relative_to=base_dir)
    except ScenarioError as exc:
        raise StudyError(f"{origin}: [study] scenario: {exc.problem} ({ref!r})") from None


def load_study(ref: str | Path) -> Study:
    """Read and validate a study given as a path or a bundled study name.

    Raises :class:`StudyError` (one line naming the file and the field) for a missing file,
    invalid TOML, an unknown section or key, a wrong type, an empty or duplicated grid list,
    knobs whose column names collide, a ``[report]`` axis that is not a grid knob, seeds that
    do not fit in 64 bits, or more points or runs than the limits allow.
    """
    path = resolve_study(ref)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise StudyError(f"{path}: not valid TOML: nested too deeply") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StudyError(f"{path}: cannot read the study file: {exc}") from None
    return parse_study(data, origin=str(path), base_dir=path.parent, default_name=path.stem)


def parse_study(
    data: Mapping[str, Any], *, origin: str, base_dir: Path, default_name: str
) -> Study:
    """Validate the parsed TOML of a study; see :func:`load_study` for what raises."""
    unknown = sorted(set(data) - _TOP_LEVEL)
    if unknown:
        raise StudyError(
            f"{origin}: unknown section [{unknown[0]}]; allowed: [study], [set], [grid], [report]"
        )
    study = _table(data, "study", origin, required=True)
    _reject_unknown(study, _STUDY_KEYS, "study", origin)

    name = _string(study, "name", origin, default=default_name)
    if not _STUDY_NAME.fullmatch(name):
        raise StudyError(
            f"{origin}: [study] name: {name!r} is not a file name (letters, digits, '_', '-', "
            "'.'; the default output folder is sweeps/<name>)"
        )
    description = _string(study, "description", origin, default="")
    scenario = _string(study, "scenario", origin, default=None)
    scenario_path = _resolve_scenario(scenario, base_dir, origin)
    n_seeds = _integer(study, "seeds", origin, minimum=1, default=None)
    first_seed = _integer(study, "first_seed", origin, minimum=0, default=1)
    if first_seed + n_seeds - 1 > MAX_SEED:
        raise StudyError(
            f"{origin}: [study] first_seed: the seeds {first_seed}..{first_seed + n_seeds - 1} "
            f"must fit in a 64-bit integer (the last may be at most {MAX_SEED})"
        )
    duration_s = _positive_seconds(study, "duration_s", origin)
    time_limit_s = _positive_seconds(study, "time_limit_s", origin)
    allow_large = _boolean(study, "allow_large", origin)

    fixed = _flatten(_table(data, "set", origin, required=False), "set", origin)
    for knob_name, value in fixed.items():
        _check_value(value, f"[set] {knob_name!r}", origin, tables=True)

    grid_table = _flatten(_table(data, "grid", origin, required=True), "grid", origin)
    if not grid_table:
        raise StudyError(f"{origin}: [grid] is empty; give at least one knob and its values")
    grid = tuple(_knob(name, values, origin) for name, values in grid_table.items())
    _check_columns(grid, origin)
    if not allow_large:
        _check_size(grid, n_seeds, origin)
    both = sorted(set(fixed) & set(grid_table))
    if both:
        raise StudyError(f"{origin}: [set] {both[0]!r} is also in [grid]; give it in one place")
    if duration_s is not None and DURATION_KNOB in {*fixed, *grid_table}:
        raise StudyError(
            f"{origin}: [study] duration_s and the knob {DURATION_KNOB!r} both set the "
            "duration; give one"
        )

    report = _table(data, "report", origin, required=False)
    _reject_unknown(report, _REPORT_KEYS, "report", origin)
    varying = [k.name for k in grid if len(k.values) > 1]
    report_x = _axis(report, "x", grid, origin, default=varying[0] if varying else None)
    others = [n for n in varying if n != report_x]
    report_series = _axis(report, "series", grid, origin, default=others[0] if others else None)
    if report_x is not None and report_x == report_series:
        raise StudyError(f"{origin}: [report] x and series are both {report_x!r}; pick two knobs")

    return Study(
        origin=origin,
        name=name,
        description=description,
        scenario=scenario,
        scenario_path=scenario_path,
        seeds=tuple(range(first_seed, first_seed + n_seeds)),
        duration_s=duration_s,
        fixed=fixed,
        grid=grid,
        report_x=report_x,
        report_series=report_series,
        time_limit_s=time_limit_s,
        allow_large=allow_large,
        report_metrics=_report_metrics(report, origin),
        report_references=_references(report, origin),
    )


def column_name(name: str) -> str:
    """A column-safe name: runs of characters other than letters, digits and ``_`` become one
    ``_`` (``producers[0].acks`` -> ``producers_0_acks``)."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")


def _table(data: Mapping[str, Any], key: str, origin: str, *, required: bool) -> dict[str, Any]:
    if key not in data:
        if required:
            raise StudyError(f"{origin}: missing section [{key}]")
        return {}
    value = data[key]
    if not isinstance(value, dict):
        raise StudyError(f"{origin}: [{key}] must be a table, got {_describe(value)}")
    return value


def _reject_unknown(table: Mapping[str, Any], allowed: set[str], section: str, origin: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        allowed_keys = ", ".join(sorted(allowed))
        raise StudyError(
            f"{origin}: [{section}] unknown key {unknown[0]!r}; allowed: {allowed_keys}"
        )


def _string(table: Mapping[str, Any], key: str, origin: str, *, default: str | None) -> str:
    if key not in table:
        if default is None:
            raise StudyError(f"{origin}: [study] {key}: missing (a string is required)")
        return default
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise StudyError(f"{origin}: [study] {key}: expected a non-empty string, got {value!r}")
    return value


def _integer(
    table: Mapping[str, Any], key: str, origin: str, *, minimum: int, default: int | None
) -> int:
    if key not in table:
        if default is None:
            raise StudyError(f"{origin}: [study] {key}: missing (an integer >= {minimum})")
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise StudyError(
            f"{origin}: [study] {key}: expected an integer >= {minimum}, got {value!r}"
        )
    return value


def _boolean(table: Mapping[str, Any], key: str, origin: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise StudyError(f"{origin}: [study] {key}: expected true or false, got {value!r}")
    return value


def _check_size(grid: tuple[Knob, ...], n_seeds: int, origin: str) -> None:
    """Refuse more than :data:`MAX_POINTS` points or :data:`MAX_RUNS` runs (counted, not
    expanded)."""
    points = math.prod(len(knob.values) for knob in grid)
    if points > MAX_POINTS:
        raise StudyError(
            f"{origin}: [grid]: {points:,} points (the product of the lengths of its value "
            f"lists) is above the limit of {MAX_POINTS:,} points (every point's scenario is "
            f"built and checked on the driver before Spark starts; {_LIFT})"
        )
    if points * n_seeds > MAX_RUNS:
        raise StudyError(
            f"{origin}: [study] seeds: {n_seeds:,} seeds x {points:,} points = "
            f"{points * n_seeds:,} runs is above the limit of {MAX_RUNS:,} runs (each run is a "
            f"Spark task and a row of every table; {_LIFT})"
        )


def _positive_seconds(table: Mapping[str, Any], key: str, origin: str) -> float | None:
    if key not in table:
        return None
    value = table[key]
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise StudyError(
            f"{origin}: [study] {key}: expected a positive number of seconds, got {value!r}"
        )
    return float(value)


def _flatten(table: Mapping[str, Any], section: str, origin: str) -> dict[str, Any]:
    """Knob name -> value: keys with a dot are knob names, keys without one are sections."""
    flat = _collect(table, "", section, origin)
    for name in flat:
        if not _KNOB_NAME.fullmatch(name):
            raise StudyError(
                f"{origin}: [{section}] {name!r}: a knob is named 'section.key' "
                "(letters, digits, '_', '-' and list indexes like producers[0], joined by '.')"
            )
    return flat


def _collect(table: Mapping[str, Any], prefix: str, section: str, origin: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}.{key}" if prefix else key
        if "." not in key and isinstance(value, dict):
            flat.update(_collect(value, name, section, origin))
        elif "." in key or prefix:
            flat[name] = value
        else:
            raise StudyError(
                f"{origin}: [{section}] {key!r}: a knob is named 'section.key' "
                '(quote dotted names, e.g. "burrow.num_workers")'
            )
    return flat


def _check_value(value: Any, where: str, origin: str, *, tables: bool = False) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise StudyError(f"{origin}: {where}: values must be finite, got {value!r}")
    if tables and isinstance(value, dict):
        return
    if not isinstance(value, bool | int | float | str):
        allowed = (
            "bool, integer, float, string or table" if tables else "bool, integer, float or string"
        )
        raise StudyError(f"{origin}: {where}: expected a {allowed}, got {_describe(value)}")


def _knob(name: str, values: Any, origin: str) -> Knob:
    where = f"[grid] {name!r}"
    if not isinstance(values, list) or not values:
        raise StudyError(f"{origin}: {where}: expected a non-empty list of values, got {values!r}")
    for value in values:
        _check_value(value, where, origin)
    kinds = {_kind(v) for v in values}
    if kinds == {"int", "float"}:
        values = [float(v) for v in values]
    elif len(kinds) > 1:
        raise StudyError(
            f"{origin}: {where}: all values must have one type, got {', '.join(sorted(kinds))}"
        )
    seen: set[KnobValue] = set()
    for value in values:
        if value in seen:
            raise StudyError(f"{origin}: {where}: value {value!r} is listed twice")
        seen.add(value)
    return Knob(name=name, column=column_name(name), values=tuple(values))


def _kind(value: KnobValue) -> str:
    return "bool" if isinstance(value, bool) else type(value).__name__


def _check_columns(grid: tuple[Knob, ...], origin: str) -> None:
    owners: dict[str, str] = {}
    for knob in grid:
        if knob.column in RESERVED_COLUMNS:
            raise StudyError(
                f"{origin}: [grid] {knob.name!r}: its column {knob.column!r} is reserved "
                f"({', '.join(sorted(RESERVED_COLUMNS))})"
            )
        if knob.column in owners:
            raise StudyError(
                f"{origin}: [grid] {knob.name!r} and {owners[knob.column]!r} both map to the "
                f"column {knob.column!r}; rename one"
            )
        owners[knob.column] = knob.name


def _axis(
    report: Mapping[str, Any], key: str, grid: tuple[Knob, ...], origin: str, *, default: str | None
) -> str | None:
    if key not in report:
        return default
    value = report[key]
    names = [k.name for k in grid]
    if value not in names:
        raise StudyError(
            f"{origin}: [report] {key}: {value!r} is not a [grid] knob; allowed: {', '.join(names)}"
        )
    return str(value)


def _report_metrics(report: Mapping[str, Any], origin: str) -> tuple[str, ...]:
    if "metrics" not in report:
        return DEFAULT_REPORT_METRICS
    names = report["metrics"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise StudyError(
            f"{origin}: [report] metrics must be a non-empty list of statistic names, "
            f"got {_describe(names)}"
        )
    known = metrics(proxy=True)
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise StudyError(
                f"{origin}: [report] metrics: {name!r} is not a sweep statistic; {hint}allowed: "
                f"{', '.join(known)}"
            )
    return tuple(names)


def _references(report: Mapping[str, Any], origin: str) -> dict[str, float]:
    table = report.get("references", {})
    if not isinstance(table, dict):
        raise StudyError(
            f"{origin}: [report] references must be a table of label = milliseconds, "
            f"got {_describe(table)}"
        )
    for key, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise StudyError(
                f"{origin}: [report] references: {key!r} must be a number of milliseconds "
                f">= 0, got {_describe(value)}"
            )
    return {key: float(value) for key, value in table.items()}


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)

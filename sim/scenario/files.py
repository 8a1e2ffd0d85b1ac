"""Scenario files: finding them (paths or bundled names), ``base`` inheritance, overrides.

A scenario file may start with ``base = "<bundled name or relative path>"``: the base file is
loaded first and this file is laid over it: sections (``[cluster]``, ``[burrow]``...) merge
key by key, and every other value (numbers, strings, arrays, arrays of tables, inline tables
such as distributions) replaces the base's. A chain of bases may not loop and holds at most
:data:`MAX_BASE_CHAIN` files. Bundled scenarios live in ``sim/scenarios/*.toml``; their names
are the file stems. Files are UTF-8 TOML.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from sim.scenario.convert import build
from sim.scenario.errors import ScenarioError
from sim.scenario.formatting import show
from sim.scenario.limits import check_limits
from sim.scenario.overrides import apply_override, parse_assignment
from sim.scenario.schema import Scenario, check_scenario
from sim.scenario.tables import merge_tables

__all__ = [
    "Override",
    "bundled_scenarios",
    "load_raw",
    "load_scenario",
    "resolve_source",
    "with_overrides",
]

Override = str | tuple[str, Any]
"""``"section.key=value"`` as typed on the command line, or ``(path, value)`` from code."""

DEFAULT_SCENARIO = "default"

MAX_BASE_CHAIN = 32
"""The most files a ``base`` chain may hold, the scenario itself included: far more than any
real inheritance needs, and well inside Python's recursion limit."""


def _bundled_dir() -> Path:
    return Path(str(resources.files("sim") / "scenarios"))


def bundled_scenarios() -> dict[str, Path]:
    """Bundled scenario names -> files, sorted by name."""
    return {path.stem: path for path in sorted(_bundled_dir().glob("*.toml"))}


def resolve_source(source: str | Path, relative_to: Path | None = None) -> Path:
    """The file named by ``source``: an existing path, else a bundled scenario name.

    Raises ScenarioError if it is neither.
    """
    candidate = Path(source)
    if relative_to is not None and not candidate.is_absolute():
        candidate = relative_to / candidate
    if candidate.is_file():
        return candidate
    bundled = bundled_scenarios()
    if str(source) in bundled:
        return bundled[str(source)]
    names = ", ".join(bundled) or "none"
    raise ScenarioError(
        str(source), f"no such scenario file or bundled scenario (bundled: {names})"
    )


def load_raw(path: Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The TOML table of ``path`` with its ``base`` chain merged in (``base`` removed).

    Raises ScenarioError for a file that cannot be read, is not UTF-8 or not TOML (nested
    too deeply included), and for a chain of bases that loops or holds more than
    :data:`MAX_BASE_CHAIN` files.
    """
    resolved = path.resolve()
    if resolved in _seen:
        chain = " -> ".join(p.name for p in (*_seen, resolved))
        raise ScenarioError("base", f"scenarios inherit from each other in a cycle: {chain}")
    if len(_seen) >= MAX_BASE_CHAIN:
        names = [p.name for p in (*_seen, resolved)]
        chain = " -> ".join([*names[:3], "...", *names[-2:]])
        raise ScenarioError(
            "base",
            f"the chain of base files is deeper than {MAX_BASE_CHAIN} ({chain}; "
            "a loop or a mistake?)",
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(str(path), f"invalid TOML: {error}") from None
    except RecursionError:
        raise ScenarioError(str(path), "invalid TOML: nested too deeply") from None
    except UnicodeDecodeError as error:
        byte = error.object[error.start]
        raise ScenarioError(
            str(path),
            f"not UTF-8 text (byte 0x{byte:02x} at offset {error.start}; "
            "scenario files are UTF-8 TOML)",
        ) from None
    except OSError as error:
        raise ScenarioError(str(path), f"cannot read: {error.strerror}") from None
    base = data.pop("base", None)
    if base is None:
        return data
    if not isinstance(base, str):
        raise ScenarioError("base", f"expected a scenario name or path, got {show(base)}")
    parent = load_raw(resolve_source(base, relative_to=path.parent), (*_seen, resolved))
    return merge_tables(Scenario, parent, data)


def with_overrides(scenario: Scenario, overrides: Iterable[Override]) -> Scenario:
    """``scenario`` with ``overrides`` applied in order, then checked as a whole: the checks
    across sections (:func:`~sim.scenario.schema.check_scenario`), then the size limits
    (:func:`~sim.scenario.limits.check_limits`).

    Raises ScenarioError naming the field of the first bad override, or the first field
    over a limit.
    """
    for override in overrides:
        path, value = parse_assignment(override) if isinstance(override, str) else override
        scenario = apply_override(scenario, path, value)
    return check_limits(check_scenario(scenario))


def load_scenario(source: str | Path | None = None, overrides: Iterable[Override] = ()) -> Scenario:
    """Load a scenario file (a path or bundled name; default: the bundled ``default``).

    Applies ``overrides`` (see :func:`with_overrides`) and checks the result. Raises
    ScenarioError, whose message is one line naming the field, for any problem.
    """
    path = resolve_source(DEFAULT_SCENARIO if source is None else source)
    scenario = build(Scenario, load_raw(path))
    return with_overrides(scenario, overrides)

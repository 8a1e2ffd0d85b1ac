"""Provenance: what a run directory or a sweep came from, so it can be re-run and compared.

Two files sit beside the outputs:

``scenario.toml``
    the fully resolved scenario (every knob, ``--set`` overrides and the seed applied; see
    :mod:`sim.scenario.writing`): ``python -m sim run DIR/scenario.toml`` re-runs it.
``provenance.json``
    how it was asked for (the scenario named on the command line, the ``--set`` overrides in
    order, the seed) and what ran it (:func:`environment`): the project's version and git
    revision, the Python version, and the versions of the libraries the output bytes depend
    on (:data:`LIBRARIES`). The project pins those in ``requirements.lock``.

Neither file holds a time stamp, a host name or a path, so the same inputs on the same
installation write the same bytes; the environment part differs between installations, by
design: that is what it is there to show.
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "LIBRARIES",
    "PROJECT",
    "PROVENANCE_NAME",
    "SCENARIO_NAME",
    "UNKNOWN",
    "environment",
    "git_revision",
    "write_provenance",
]

PROJECT = "kafka-purgatory"
SCENARIO_NAME = "scenario.toml"
PROVENANCE_NAME = "provenance.json"
UNKNOWN = "unknown"

LIBRARIES: tuple[str, ...] = ("attrs", "sortedcontainers", "numpy", "pyarrow", "matplotlib")
"""Distributions whose versions can change output bytes: the simulation's data structures
(attrs, sortedcontainers), the summary's arithmetic (numpy), the Parquet writer (pyarrow) and
the plots (matplotlib)."""

_CHECKOUT = Path(__file__).resolve().parent.parent.parent
"""The directory holding the ``sim`` package: a git checkout when running from source."""


def git_revision(checkout: Path = _CHECKOUT) -> str:
    """The commit ``checkout`` has checked out, with ``-dirty`` if tracked files are modified.

    :data:`UNKNOWN` when git is not installed, ``checkout`` is not the top of a git work tree
    (an installed wheel inside some other repository does not count) or git fails.
    """

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(checkout), *args],
            capture_output=True, text=True, check=True, timeout=30,
        )  # fmt: skip
        return done.stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != checkout.resolve():
            return UNKNOWN
        revision = git("rev-parse", "HEAD")
        modified = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return f"{revision}-dirty" if modified else revision


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, Any]:
    """The installation a run happens on: project version and git revision, Python version,
    and the version of each of :data:`LIBRARIES` (``"not installed"`` if absent)."""
    project_version = _version(PROJECT)
    return {
        "project": {
            "name": PROJECT,
            "version": UNKNOWN if project_version == "not installed" else project_version,
            "git_revision": git_revision(),
        },
        "python": platform.python_version(),
        "libraries": {name: _version(name) for name in LIBRARIES},
    }


def write_provenance(
    directory: Path,
    *,
    scenario_toml: str,
    scenario: str,
    overrides: Sequence[str],
    seed: int,
    extra: Mapping[str, Any] | None = None,
    env: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write ``scenario.toml`` and ``provenance.json`` into ``directory``; return their paths.

    ``scenario`` is the scenario as it was named (a bundled name or a file),
    ``overrides`` the ``--set`` assignments in the order applied, ``seed`` the run's seed,
    ``extra`` more keys for the JSON document (e.g. a multi-seed run's seed list) and ``env``
    the :func:`environment` (computed if not given: pass it to describe many runs at once).
    """
    toml_path = directory / SCENARIO_NAME
    toml_path.write_text(scenario_toml, encoding="utf-8")
    document: dict[str, Any] = {
        "scenario": scenario,
        "overrides": list(overrides),
        "seed": seed,
        **(extra or {}),
        **(environment() if env is None else env),
    }
    json_path = directory / PROVENANCE_NAME
    json_path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return [toml_path, json_path]

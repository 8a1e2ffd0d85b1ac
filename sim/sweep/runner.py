"""The run function a sweep calls inside each Spark task, and how to name one.

A run function has the signature of :class:`RunPoint`: it gets the base scenario's TOML
table (``base`` chain already merged, see :func:`sim.sweep.simulate.scenario_table`), the
point's overrides (``section.key`` -> value, in order), a seed and an optional simulated
duration, and returns the run's tables by name. ``messages`` (with the columns of
:data:`sim.output.MESSAGES_SCHEMA`), ``requests`` (``REQUESTS_SCHEMA``) and ``run_summary``
(one row: the run's summary flattened, with at least ``run_duration_us`` and
``run_warmup_us``) are required; any other table (``timeseries``) is written too. It must be
deterministic (same arguments -> equal tables) and picklable (a module-level function or a
``functools.partial`` of one), so Spark ships it to the workers by reference.

The sweep names a run function as ``module:function``; :data:`DEFAULT_RUNNER` is the real
simulator (:func:`sim.sweep.simulate.run_point`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Protocol, cast

import pyarrow as pa

from sim.sweep.errors import RunnerError

DEFAULT_RUNNER = "sim.sweep.simulate:run_point"
REQUIRED_TABLES = ("messages", "requests", "run_summary")


class RunPoint(Protocol):
    """Run one simulation and return its tables by name (see the module docstring)."""

    def __call__(
        self,
        scenario: Mapping[str, Any],
        overrides: Mapping[str, Any],
        seed: int,
        duration_s: float | None,
        /,
    ) -> Mapping[str, pa.Table]: ...


def load_runner(spec: str) -> RunPoint:
    """The function named by ``spec`` (``package.module:function``).

    Raises :class:`RunnerError` if the spec is malformed, the module cannot be imported or
    it has no such callable.
    """
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise RunnerError(f"runner {spec!r}: expected MODULE:FUNCTION, e.g. {DEFAULT_RUNNER}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RunnerError(f"runner {spec!r}: cannot import {module_name}: {exc}") from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise RunnerError(f"runner {spec!r}: {module_name} has no function {attribute!r}")
    return cast(RunPoint, function)


def check_tables(tables: object, where: str) -> dict[str, pa.Table]:
    """The tables a run function returned, checked: a mapping of identifier -> pa.Table that
    holds every table in :data:`REQUIRED_TABLES`. Raises :class:`RunnerError` otherwise."""
    if not isinstance(tables, Mapping):
        raise RunnerError(f"{where}: the run function returned {type(tables).__name__}, not a dict")
    checked: dict[str, pa.Table] = {}
    for name, table in tables.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise RunnerError(f"{where}: table name {name!r} is not an identifier")
        if not isinstance(table, pa.Table):
            raise RunnerError(f"{where}: table {name!r} is {type(table).__name__}, not a pa.Table")
        checked[name] = table
    missing = [name for name in REQUIRED_TABLES if name not in checked]
    if missing:
        raise RunnerError(f"{where}: the run function returned no {missing[0]!r} table")
    return checked

"""Tables of a scenario: their keys made canonical, and one table laid over another.

A TOML table is a dict; before anything reads its values, :func:`canonical` keys it by field
name. A key may be written as the field's name (``replica_fetch_wait_max_ms``), in Kafka's
dotted spelling, either quoted (``"replica.fetch.wait.max.ms" = 500``) or as a TOML dotted key,
which TOML parses as nested tables (``replica.fetch.wait.max.ms = 500`` is
``{"replica": {"fetch": ...}}``), or with ``-`` for ``_``. A key of a flattened field's object
is a key of the table itself (see :func:`sim.scenario.specs.routes`). Two spellings of one
field in one table are an error, as is a key naming no field (with a suggestion).

:func:`merge_tables` implements a scenario file's ``base``: the child's table is laid over the
base's, key by key once both are canonical; sections (fields whose type is an attrs class)
merge recursively, every other value replaces the base's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from sim.scenario.errors import ScenarioError
from sim.scenario.formatting import join_path, show, suggest
from sim.scenario.specs import normalise, optional_inner, routes, spec_named

__all__ = ["canonical", "merge_tables"]


def canonical(cls: Any, data: object, path: str) -> dict[str, Any]:
    """Table ``data`` of ``cls`` keyed by canonical field names (flattened ones included).

    Raises ScenarioError, naming the key under ``path``, for a value that is not a table, an
    unknown key or a field given twice.
    """
    if not isinstance(data, dict):
        raise ScenarioError(path, f"expected a table, got {show(data)}")
    known = routes(cls)
    values: dict[str, Any] = {}
    written_as: dict[str, str] = {}
    for key, value in data.items():
        for name, written, item in _resolve_key(known, str(key), value, path):
            if name in values:
                raise ScenarioError(
                    join_path(path, written), f"given twice (also as {written_as[name]!r})"
                )
            values[name] = item
            written_as[name] = written
    return values


def merge_tables(
    cls: Any, base: Mapping[str, Any], top: Mapping[str, Any], path: str = ""
) -> dict[str, Any]:
    """Lay table ``top`` over table ``base``, both tables of attrs class ``cls``.

    A key naming a section (a field whose type is an attrs class) merges recursively when
    both sides give a table; any other value -- number, string, array, array of tables, a
    tagged table such as a distribution -- replaces the base's. Keys come out canonical
    (``replica.fetch.wait.max.ms`` and ``replica_fetch_wait_max_ms`` are one key). Raises
    ScenarioError for an unknown or duplicate key.
    """
    merged = canonical(cls, base, path)
    for name, value in canonical(cls, top, path).items():
        section = _section_type(cls, name)
        old = merged.get(name)
        if section is not None and isinstance(value, dict) and isinstance(old, dict):
            merged[name] = merge_tables(section, old, value, join_path(path, name))
        else:
            merged[name] = value
    return merged


def _section_type(cls: Any, name: str) -> Any:
    """The attrs class of field ``name`` of ``cls`` (through flattened fields), else None."""
    owner = cls
    for hop in routes(cls)[name]:
        owner = spec_named(owner, hop).tp
    inner = optional_inner(spec_named(owner, name).tp)
    return inner if attrs.has(inner) else None


def _resolve_key(
    known: Mapping[str, tuple[str, ...]], key: str, value: Any, path: str
) -> Iterable[tuple[str, str, Any]]:
    """Map one key of a table to canonical field names (several for a dotted-key subtable)."""
    if key in known:
        yield key, key, value
        return
    name = normalise(key)
    if name in known:
        yield name, key, value
        return
    if isinstance(value, dict) and any(other.startswith(name + "_") for other in known):
        for inner_key, inner_value in value.items():
            yield from _resolve_key(known, f"{key}.{inner_key}", inner_value, path)
        return
    raise ScenarioError(join_path(path, key), f"unknown field{suggest(name, known)}")

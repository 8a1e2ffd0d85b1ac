"""A scenario written back as a TOML file: :func:`scenario_toml`.

The file states every knob, defaults included, so it does not depend on the bundled files or
on defaults that may change: loading it (:func:`sim.scenario.load_scenario`) gives back an
equal :class:`~sim.scenario.Scenario`. That is what run directories record as
``scenario.toml``, so ``python -m sim run <dir>/scenario.toml`` runs the same simulation.

Layout, in schema order: a section (a field holding one attrs class) is a ``[header]``
table and a list of sections an array of tables (``[[producers]]``), so the file reads like
the bundled ones; flattened fields' keys are written in their section's table (as the loader
reads them); a tagged union (a distribution, a fault) is an inline table carrying its tag.
Durations and sizes are spelled exactly with their unit (``"5s"``, ``"16KiB"``); an absent
optional value (None) is left out, which the loader reads back as absent.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from sim.scenario.formatting import format_value, join_path
from sim.scenario.schema import Scenario
from sim.scenario.specs import field_specs, optional_inner, unit_inside

__all__ = ["scenario_toml"]


def scenario_toml(scenario: Scenario) -> str:
    """``scenario`` as a complete TOML document that loads back to an equal scenario."""
    lines: list[str] = []
    _table(scenario, "", None, lines)
    return "\n".join(lines).strip("\n") + "\n"


def _table(value: Any, path: str, unit: str | None, lines: list[str]) -> None:
    """Append the keys of attrs object ``value`` (the table at ``path``), then its sections."""
    sections: list[tuple[str, Any, bool]] = []
    for key, item, item_unit, section in _items(value, unit):
        where = join_path(path, key)
        if section:
            sections.append((where, item, isinstance(item, list)))
        elif item is not None:
            lines.append(f"{key} = {_value(item, item_unit)}")
    for where, item, is_array in sections:
        for entry in item if is_array else [item]:
            lines.extend(["", f"[[{where}]]" if is_array else f"[{where}]"])
            _table(entry, where, None, lines)


def _items(value: Any, unit: str | None) -> list[tuple[str, Any, str | None, bool]]:
    """(key, value, unit, is a section) of each field of ``value``, flattened ones inlined."""
    items = []
    for spec in field_specs(type(value)):
        item = getattr(value, spec.name)
        inner_unit = unit_inside(spec, unit)
        if spec.flatten:
            items.extend(_items(item, inner_unit))
            continue
        if item is None and not (spec.has_default and spec.default is None):
            raise ValueError(f"{spec.name}: None cannot be written (the field's default is not)")
        items.append((spec.name, item, inner_unit, _is_section(spec.tp, item)))
    return items


def _is_section(tp: Any, item: Any) -> bool:
    """Whether a field is written as its own table: one attrs class, or a list of them."""
    if isinstance(item, list):
        return bool(item) and all(attrs.has(type(entry)) for entry in item)
    return item is not None and attrs.has(optional_inner(tp))


def _value(value: Any, unit: str | None) -> str:
    """One TOML value: an inline table for attrs objects (tagged unions), exact units."""
    if attrs.has(type(value)):
        parts = []
        for key, item, item_unit, _ in _items(value, unit):
            if item is not None:
                parts.append(f"{key} = {_value(item, item_unit)}")
        return "{ " + ", ".join(parts) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item, unit) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (
            f"{json.dumps(str(k), ensure_ascii=False)} = {_value(v, unit)}"
            for k, v in value.items()
        )
        return "{ " + ", ".join(pairs) + " }"
    if isinstance(value, float) and unit is None:
        return repr(value)  # shortest repr that reads back as the same float
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        return str(int(value) if unit is not None else value)  # units are spelled >= 0 only
    return format_value(value, unit)

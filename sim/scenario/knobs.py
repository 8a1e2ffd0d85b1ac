"""The list of every knob of a scenario, for ``python -m sim knobs``.

A knob's help text ends with the size limits it is bound by (:mod:`sim.scenario.limits`).
"""

from __future__ import annotations

import re
from typing import Any, get_args

import attrs

from sim.scenario.formatting import describe_type, format_value, join_path
from sim.scenario.limits import limit_help
from sim.scenario.schema import Scenario
from sim.scenario.specs import FieldSpec, field_specs, optional_inner

__all__ = ["KnobRow", "knob_rows"]

_ENTRY = re.compile(r"\[\d+\]")


@attrs.frozen
class KnobRow:
    """One knob: its ``--set`` path, kind, value in the scenario (or default) and help."""

    path: str
    kind: str
    value: str
    help: str


def knob_rows(scenario: Scenario) -> list[KnobRow]:
    """Every knob of ``scenario`` with its current value, in schema order.

    List sections show their entries (``producers[0].acks``); an empty list or an absent
    optional section shows its fields with ``[]`` or as absent, with their defaults.
    """
    rows: list[KnobRow] = []
    _walk(Scenario, scenario, "", rows)
    return rows


def _walk(cls: Any, value: Any, path: str, rows: list[KnobRow]) -> None:
    for spec in field_specs(cls):
        if spec.flatten:
            _walk(spec.tp, None if value is None else getattr(value, spec.name), path, rows)
            continue
        where = join_path(path, spec.name)
        current = _current(spec, value)
        inner = optional_inner(spec.tp)
        if attrs.has(inner):
            _walk(inner, current, where, rows)
        elif _is_list_of_sections(spec.tp):
            item_type = get_args(spec.tp)[0]
            if current:
                for index, item in enumerate(current):
                    _walk(type(item), item, join_path(where, index), rows)
            elif attrs.has(item_type):
                _walk(item_type, None, f"{where}[]", rows)
            else:  # a list of a union of sections (faults): nothing to show per field
                rows.append(KnobRow(where, "an array of tables", "[]", spec.help))
        else:
            shown = "(required)" if current is attrs.NOTHING else format_value(current, spec.unit)
            help_text = spec.help + limit_help(_ENTRY.sub("[]", where))
            rows.append(KnobRow(where, describe_type(spec.tp, spec.unit), shown, help_text))


def _current(spec: FieldSpec, value: Any) -> Any:
    if value is not None:
        return getattr(value, spec.name)
    return spec.default if spec.has_default else attrs.NOTHING


def _is_list_of_sections(tp: Any) -> bool:
    args = get_args(tp)
    if not args or not isinstance(tp, type(list[int])):
        return False
    item = args[0]
    members = get_args(item)
    return attrs.has(item) or (bool(members) and all(attrs.has(m) for m in members))

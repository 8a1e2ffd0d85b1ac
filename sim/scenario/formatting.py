"""How the scenario loader writes for people: field paths, values, types, and suggestions.

Two audiences, one spelling (TOML's):

* error messages (:class:`~sim.scenario.errors.ScenarioError`) name a field by its path,
  :func:`join_path` (``producers[0].linger_ms``), quote the offending value with :func:`show`
  (``"fast"``, ``true``, ``a table``), say what was expected with :func:`describe_type`
  (``a duration (ms)``, ``one of "hash", "round_robin"``) and, for an unknown key, propose
  the closest known one with :func:`suggest`;
* ``python -m sim knobs`` lists values with :func:`format_value`, as they would be written in
  a scenario file: durations and sizes spelled with their unit (``"5s"``, ``"16KiB"``),
  settings objects as inline tables.

Nothing here raises for a value: every function turns anything into text.
"""

from __future__ import annotations

import difflib
import enum
import json
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from replica.config_def import SIZE_UNIT
from sim.core.units import format_duration, format_size
from sim.scenario.specs import NONE_TYPE, discriminator, field_specs, unit_inside

__all__ = ["describe_type", "format_value", "join_path", "show", "suggest"]


def join_path(path: str, name: str | int) -> str:
    """``join_path("producers", 0) == "producers[0]"``; ``join_path("a", "b") == "a.b"``."""
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


def show(value: object) -> str:
    """How a value from a scenario is quoted in an error message (TOML-like)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    if value is None:
        return "nothing"
    return repr(value)


def describe_type(tp: Any, unit: str | None = None) -> str:
    """A short human description of a field type (``"a duration (ms)"``, ``"an integer"``)."""
    origin = get_origin(tp)
    if unit == SIZE_UNIT:
        return "a size"
    if unit is not None:
        return f"a duration ({unit})"
    if tp is bool:
        return "a boolean"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if origin is Literal:
        return "one of " + ", ".join(show(choice) for choice in get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(show(member.value) for member in tp)
    if origin in (list, tuple, Sequence):
        return "an array"
    if origin in (dict, Mapping):
        return "a table"
    if origin in (Union, types.UnionType):
        members = [member for member in get_args(tp) if member is not NONE_TYPE]
        if len(members) > 1 and all(attrs.has(member) for member in members):
            tag, choices = discriminator(tuple(members))
            return f"a table with {tag} = " + " | ".join(show(choice) for choice in choices)
        return " or ".join(describe_type(member, unit) for member in members)
    if attrs.has(tp):
        return "a table"
    return getattr(tp, "__name__", repr(tp))


def suggest(name: str, known: Iterable[str]) -> str:
    """``" (did you mean x?)"``, or the list of known fields when it is short, else ``""``."""
    names = list(known)
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    if len(names) <= 12:
        return f" (known: {', '.join(names)})"
    return ""


def format_value(value: Any, unit: str | None = None) -> str:
    """A value as it would be written in a scenario file (durations and sizes spelled out)."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and unit == SIZE_UNIT:
        return json.dumps(format_size(value))
    if isinstance(value, int | float) and unit is not None and float(value).is_integer():
        return json.dumps(format_duration(int(value), unit))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, enum.Enum):
        return format_value(value.value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(item, unit) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {format_value(v, unit)}" for k, v in value.items()) + " }"
    if attrs.has(type(value)):
        parts = [
            f"{s.name} = {format_value(getattr(value, s.name), unit_inside(s, unit))}"
            for s in field_specs(type(value))
        ]
        return "{ " + ", ".join(parts) + " }"
    return repr(value)

"""``--set path=value`` overrides: parsing them, and setting a field deep inside a scenario.

An override names a knob by its path, as ``python -m sim knobs`` lists it:
``producers[0].linger_ms=5ms``. :func:`parse_assignment` splits the text and reads the value
as a TOML value, falling back to a bare string (``tracking=per_partition``).

:func:`apply_override` sets the field in an already built, frozen scenario. The path is split
into tokens (names and list indices, ``[i]`` or ``.i``); leading name tokens are joined with
``_`` until they spell a key of the current table, so Kafka's dotted names work
(``cluster.replica.fetch.wait.max.ms``), flattened fields included. The walk goes down the
objects, lists and dicts on the way; a path that reaches a list with the glob index ``[*]``
or without an index sets the field in every entry (``producers[*].acks=1``,
``producers.acks=1``; an error when there is no entry: it would set nothing), the index
``[+]`` appends an entry (``faults[+]={type="follower_stall", broker=1, at="2s"}``), and an
absent optional section is built from an empty table first. The new value
is converted like a value from a file (:func:`sim.scenario.convert.convert`). Then each object
on the way is rebuilt bottom-up with the new value in place, so every changed object's
validators run, exactly as if it had been loaded with that value. The original objects are
untouched.

``--fault`` is such an append spelled like a ``[[faults]]`` table's keys:
:func:`fault_override` turns ``broker_failure broker=1 at=2s`` (or
``type=broker_failure,broker=1,at=2s``) into ``faults[+]={type = "broker_failure", ...}``, so
a fault from the command line is converted, validated and recorded exactly like one from a
file.

Every problem raises :class:`~sim.scenario.errors.ScenarioError` naming the path so far.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from typing import Any, TypeVar, get_args

import attrs

from sim.scenario.convert import build, convert, instantiate
from sim.scenario.errors import ScenarioError
from sim.scenario.formatting import describe_type, join_path, show, suggest
from sim.scenario.specs import (
    FieldSpec,
    field_specs,
    normalise,
    optional_inner,
    routes,
    spec_named,
    unit_inside,
)

__all__ = ["apply_override", "fault_override", "parse_assignment"]

T = TypeVar("T")
_INDEX = re.compile(r"\[(\d+|\*|\+)\]")
_EVERY = "*"
"""The index token of every entry of a list: ``producers[*].acks``."""
_APPEND = "+"
"""The index token of a new entry at the end of a list: ``faults[+]={...}``."""
_FAULT_ITEM = re.compile(r"[,\s]+")


def parse_assignment(text: str) -> tuple[str, Any]:
    """Split ``"section.key=value"``; the value is read as a TOML value, else a bare string.

    So ``acks=1`` gives 1, ``linger_ms=5ms`` gives ``"5ms"``, ``enabled=true`` gives True,
    ``client_broker={distribution="constant", value="1ms"}`` gives a table.
    Raises ScenarioError if there is no ``=`` or no key, or the value is nested too deeply.
    """
    key, equals, raw = text.partition("=")
    key = key.strip()
    if not equals or not key:
        raise ScenarioError(key or text, f"expected KEY=VALUE, got {show(text)}")
    raw = raw.strip()
    try:
        return key, tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return key, raw
    except RecursionError:
        raise ScenarioError(key, "invalid TOML value: nested too deeply") from None


def fault_override(text: str) -> str:
    """The ``--set`` override that appends the fault ``text`` describes to ``faults``.

    ``text`` holds a ``[[faults]]`` table's ``key=value`` pairs separated by commas or spaces,
    the first of which may be the bare fault type: ``"broker_failure broker=1 at=2s"`` is
    ``faults[+]={type = "broker_failure", broker = 1, at = "2s"}``. Values are read like
    ``--set`` values (so they cannot hold commas or spaces: write such a fault with
    ``--set 'faults[+]={...}'``). Raises ScenarioError naming ``--fault`` for text that is not
    such a list, e.g. a key given twice; the fault itself is checked when the override is
    applied.
    """
    items = [item for item in _FAULT_ITEM.split(text.strip()) if item]
    if items and "=" not in items[0]:
        items[0] = f"type={items[0]}"
    table: dict[str, Any] = {}
    for item in items:
        key, value = parse_assignment(item) if "=" in item else (item, None)
        if value is None:
            raise ScenarioError(
                "--fault", f"expected KEY=VALUE pairs after the fault type, got {show(item)}"
            )
        if normalise(key) in table:
            raise ScenarioError("--fault", f"{key} is given twice in {show(text)}")
        table[normalise(key)] = value
    if "type" not in table:
        raise ScenarioError(
            "--fault", f'no fault type in {show(text)} (e.g. "broker_failure broker=1 at=2s")'
        )
    pairs = ", ".join(f"{key} = {_toml_value(key, value)}" for key, value in table.items())
    return f"faults[{_APPEND}]={{{pairs}}}"


def _toml_value(key: str, value: Any) -> str:
    """A scalar :func:`parse_assignment` read, back as TOML text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return json.dumps(value) if isinstance(value, str) else repr(value)
    raise ScenarioError(
        f"--fault {key}", f"expected a number, a string or a boolean, got {show(value)}"
    )


def apply_override(obj: T, path: str, value: Any) -> T:
    """A copy of attrs instance ``obj`` with the field at ``path`` set to ``value``.

    ``path`` names fields with dots (Kafka's dotted names work too) and list entries with
    ``[i]`` or ``.i``; a path that goes through a list with ``[*]`` or without an index sets
    the field in every entry (``producers[*].acks=1``), and is an error if the list is empty;
    ``faults[+]`` appends ``value`` as a new entry. ``value`` is converted like a TOML value;
    the changed table's validators run. Raises ScenarioError naming the field.
    """
    updated: T = _set(obj, _tokens(path), value, "", None)
    return updated


def _tokens(path: str) -> list[str | int]:
    """``"producers[0].linger.ms"`` -> ``["producers", 0, "linger", "ms"]``; ``[*]`` -> ``"*"``."""
    tokens: list[str | int] = []
    for part in _INDEX.sub(r".\1", path).split("."):
        if not part:
            raise ScenarioError(path, "malformed field path")
        tokens.append(int(part) if part.isdigit() else part)
    return tokens


def _set(obj: Any, tokens: list[str | int], value: Any, path: str, unit: str | None) -> Any:
    """``obj`` with the field ``tokens`` lead to set to ``value`` (``path`` names ``obj``)."""
    known = routes(type(obj))
    head = tokens[0]
    if isinstance(head, int):
        raise ScenarioError(join_path(path, head), "is not a list entry")
    name, used = _match_key(known, tokens, path)
    rest = tokens[used:]
    hops = known[name]
    # Walk down the flattened fields to the object that owns `name`.
    owners = [obj]
    for hop in hops:
        owners.append(getattr(owners[-1], hop))
    owner = owners[-1]
    spec = spec_named(type(owner), name)
    spec_unit = unit_inside(spec, unit)
    where = join_path(path, name)
    if rest:
        new = _set_inside(spec, spec_unit, getattr(owner, spec.name), rest, value, where)
    else:
        new = convert(spec.tp, spec.respelled(value), where, spec_unit)
    # Rebuild the owners bottom-up: owners[i + 1] is field hops[i] of owners[i].
    rebuilt = _evolve(owner, spec, new, path)
    for depth in range(len(hops) - 1, -1, -1):
        parent = owners[depth]
        rebuilt = _evolve(parent, spec_named(type(parent), hops[depth]), rebuilt, path)
    return rebuilt


def _match_key(
    known: Mapping[str, tuple[str, ...]], tokens: list[str | int], path: str
) -> tuple[str, int]:
    """The shortest run of leading name tokens that spells a key; (key, tokens used)."""
    words: list[str] = []
    for token in tokens:
        if isinstance(token, int):
            break
        words.append(normalise(token))
        candidate = "_".join(words)
        if candidate in known:
            return candidate, len(words)
    first = str(tokens[0])
    raise ScenarioError(join_path(path, first), f"unknown field{suggest(normalise(first), known)}")


def _set_inside(
    spec: FieldSpec, unit: str | None, current: Any, rest: list[str | int], value: Any, where: str
) -> Any:
    """The new value of field ``spec`` after setting ``rest`` inside its current value."""
    if current is None and attrs.has(optional_inner(spec.tp)):
        current = build(optional_inner(spec.tp), {}, where, unit)
    if attrs.has(type(current)):
        return _set(current, rest, value, where, unit)
    if isinstance(current, list | tuple):
        item_type = get_args(spec.tp)[0] if get_args(spec.tp) else Any
        items = list(current)
        head = rest[0]
        if head == _APPEND:
            if len(rest) > 1:
                raise ScenarioError(
                    f"{where}[{_APPEND}]", "appends a whole entry: give it as an inline table"
                )
            items.append(convert(item_type, value, join_path(where, len(items)), unit))
            return tuple(items) if isinstance(current, tuple) else items
        if isinstance(head, int):
            if head >= len(items):
                raise ScenarioError(
                    join_path(where, head), f"no such entry (there are {len(items)})"
                )
            targets = [head]
            rest = rest[1:]
        else:
            if not items:
                shown = "".join(f"[{t}]" if t == _EVERY else f".{t}" for t in rest)
                raise ScenarioError(
                    where,
                    f"has no entries, so {where}{shown} would set nothing (add an entry first)",
                )
            targets = list(range(len(items)))
            rest = rest[1:] if head == _EVERY else rest
        for index in targets:
            entry_path = join_path(where, index)
            if rest:
                if not attrs.has(type(items[index])):
                    raise ScenarioError(entry_path, "is not a table")
                items[index] = _set(items[index], rest, value, entry_path, unit)
            else:
                items[index] = convert(item_type, value, entry_path, unit)
        return tuple(items) if isinstance(current, tuple) else items
    if isinstance(current, dict):
        key = str(rest[0])
        value_type = get_args(spec.tp)[1] if get_args(spec.tp) else Any
        mapping = dict(current)
        if len(rest) == 1:
            mapping[key] = convert(value_type, value, join_path(where, key), unit)
        elif key in mapping and attrs.has(type(mapping[key])):
            mapping[key] = _set(mapping[key], rest[1:], value, join_path(where, key), unit)
        else:
            raise ScenarioError(join_path(where, key), "no such table")
        return mapping
    raise ScenarioError(where, f"is {describe_type(spec.tp, unit)}, not a table")


def _evolve(obj: T, spec: FieldSpec, new: Any, path: str) -> T:
    """``obj`` with field ``spec`` replaced, validated like a freshly loaded table."""
    kwargs = {s.alias: getattr(obj, s.name) for s in field_specs(type(obj))}
    kwargs[spec.alias] = new
    evolved: T = instantiate(type(obj), kwargs, path)
    return evolved

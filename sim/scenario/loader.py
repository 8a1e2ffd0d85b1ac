"""A generic loader from TOML-shaped data to attrs classes, and ``section.key=value`` overrides.

:func:`build` turns a table (a dict from :mod:`tomllib`) into an instance of any attrs class,
reading the fields' type annotations: ``int``, ``float``, ``bool``, ``str``, ``Literal[...]``,
enums, ``list[X]``, ``tuple[X, ...]``, ``dict[str, X]``, ``X | None``, nested attrs classes and
unions of attrs classes told apart by a ``Literal`` tag field (the first field they all have
whose type is a Literal, e.g. ``distribution``). Int fields with a unit (see
:mod:`replica.config_def`) accept durations and sizes as strings. Missing fields take the
class's defaults; attrs validators run as usual.

Kafka's dotted spelling is accepted for any field: ``replica.fetch.wait.max.ms = 500`` (a
TOML dotted key, i.e. nested tables) and ``"replica.fetch.wait.max.ms" = 500`` (a quoted key)
both mean ``replica_fetch_wait_max_ms``. ``-`` is accepted for ``_`` likewise.

Every problem raises :class:`~sim.scenario.errors.ScenarioError` naming the field's path, e.g.
``producers[0].linger_ms``; nothing else escapes (a TypeError here means a schema class uses a
type the loader does not support: a programming error, raised when the class is first used).
"""

from __future__ import annotations

import difflib
import enum
import json
import re
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import attrs

from replica.config_def import SIZE_UNIT, field_unit
from sim.core.units import UnitError, format_duration, format_size, parse_duration, parse_size
from sim.scenario.errors import ScenarioError

__all__ = [
    "FieldSpec",
    "apply_override",
    "build",
    "convert",
    "describe_type",
    "field_specs",
    "format_value",
    "join_path",
    "merge_tables",
    "optional_inner",
    "parse_assignment",
    "show",
]

T = TypeVar("T")
_NONE = type(None)
_INDEX = re.compile(r"\[(\d+)\]")


# -- schema introspection ---------------------------------------------------------------------


@attrs.frozen
class FieldSpec:
    """One field of a section as the loader sees it (``tp`` is the resolved annotation)."""

    name: str
    alias: str  # keyword for __init__
    tp: Any
    unit: str | None
    inherit_unit: bool
    flatten: bool
    has_default: bool
    default: Any
    help: str


_SPECS: dict[Any, tuple[FieldSpec, ...]] = {}
_ROUTES: dict[Any, dict[str, tuple[str, ...]]] = {}
_TAGS: dict[Any, tuple[str, dict[Any, type]]] = {}


def field_specs(cls: Any) -> tuple[FieldSpec, ...]:
    """The init fields of attrs class ``cls`` with resolved types. Cached per class."""
    cached = _SPECS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    specs = []
    for attribute in attrs.fields(cls):
        if not attribute.init:
            continue
        default = attribute.default
        has_default = default is not attrs.NOTHING
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory() if not default.takes_self else attrs.NOTHING
        flatten = bool(attribute.metadata.get("flatten", False))
        if flatten and not attrs.has(hints[attribute.name]):
            raise TypeError(f"{cls.__name__}.{attribute.name}: flatten needs an attrs class")
        specs.append(
            FieldSpec(
                name=attribute.name,
                alias=attribute.alias or attribute.name,
                tp=hints[attribute.name],
                unit=field_unit(attribute),
                inherit_unit=bool(attribute.metadata.get("inherit_unit", False)),
                flatten=flatten,
                has_default=has_default,
                default=default,
                # A field without help (plain attrs classes) is named the Kafka way.
                help=str(attribute.metadata.get("help", attribute.name.replace("_", "."))),
            )
        )
    _SPECS[cls] = result = tuple(specs)
    return result


def _routes(cls: Any) -> dict[str, tuple[str, ...]]:
    """Every key a table of ``cls`` accepts -> the flattened fields leading to it. Cached."""
    cached = _ROUTES.get(cls)
    if cached is not None:
        return cached
    routes: dict[str, tuple[str, ...]] = {}
    for spec in field_specs(cls):
        if spec.flatten:
            inner = {name: (spec.name, *hops) for name, hops in _routes(spec.tp).items()}
        else:
            inner = {spec.name: ()}
        for name, hops in inner.items():
            if name in routes:
                raise TypeError(f"{cls.__name__}: key {name!r} is defined twice")
            routes[name] = hops
    _ROUTES[cls] = routes
    return routes


def _unit(spec: FieldSpec, holder_unit: str | None) -> str | None:
    """The unit of ``spec`` inside an object held by a field of unit ``holder_unit``."""
    return holder_unit if spec.inherit_unit and holder_unit is not None else spec.unit


def _spec(cls: Any, name: str) -> FieldSpec:
    for spec in field_specs(cls):
        if spec.name == name:
            return spec
    raise KeyError(name)  # pragma: no cover - callers only ask for known names


def _normalise(key: str) -> str:
    return key.replace(".", "_").replace("-", "_")


# -- messages ---------------------------------------------------------------------------------


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
        members = [member for member in get_args(tp) if member is not _NONE]
        if len(members) > 1 and all(attrs.has(member) for member in members):
            tag, choices = _discriminator(tuple(members))
            return f"a table with {tag} = " + " | ".join(show(choice) for choice in choices)
        return " or ".join(describe_type(member, unit) for member in members)
    if attrs.has(tp):
        return "a table"
    return getattr(tp, "__name__", repr(tp))


def _validator_message(name: str, error: Exception) -> str:
    """The validator's complaint without a leading field name (the path names the field)."""
    message = str(error)
    # attrs' built-in validators start with the quoted name, others often with the bare name.
    for prefix in (f"'{name}' ", f"{name} "):
        if name and message.startswith(prefix):
            return message[len(prefix) :]
    return message


# -- building ---------------------------------------------------------------------------------


def build(cls: type[T], data: object, path: str = "", unit: str | None = None) -> T:
    """An instance of attrs class ``cls`` from table ``data``; ``path`` prefixes error fields.

    ``unit`` is the unit of the field holding the object (for ``inherit_unit`` fields).
    Raises ScenarioError for an unknown, duplicate, missing or invalid field.
    """
    built: T = _construct(cls, _canonical(cls, data, path), path, unit)
    return built


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
    merged = _canonical(cls, base, path)
    for name, value in _canonical(cls, top, path).items():
        section = _section_type(cls, name)
        old = merged.get(name)
        if section is not None and isinstance(value, dict) and isinstance(old, dict):
            merged[name] = merge_tables(section, old, value, join_path(path, name))
        else:
            merged[name] = value
    return merged


def _canonical(cls: Any, data: object, path: str) -> dict[str, Any]:
    """Table ``data`` of ``cls`` keyed by canonical field names (flattened ones included)."""
    if not isinstance(data, dict):
        raise ScenarioError(path, f"expected a table, got {show(data)}")
    routes = _routes(cls)
    values: dict[str, Any] = {}
    written_as: dict[str, str] = {}
    for key, value in data.items():
        for name, written, item in _resolve_key(routes, str(key), value, path):
            if name in values:
                raise ScenarioError(
                    join_path(path, written), f"given twice (also as {written_as[name]!r})"
                )
            values[name] = item
            written_as[name] = written
    return values


def _section_type(cls: Any, name: str) -> Any:
    """The attrs class of field ``name`` of ``cls`` (through flattened fields), else None."""
    owner = cls
    for hop in _routes(cls)[name]:
        owner = _spec(owner, hop).tp
    inner = optional_inner(_spec(owner, name).tp)
    return inner if attrs.has(inner) else None


def _resolve_key(
    routes: Mapping[str, tuple[str, ...]], key: str, value: Any, path: str
) -> Iterable[tuple[str, str, Any]]:
    """Map one key of a table to canonical field names (several for a dotted-key subtable)."""
    if key in routes:
        yield key, key, value
        return
    name = _normalise(key)
    if name in routes:
        yield name, key, value
        return
    if isinstance(value, dict) and any(other.startswith(name + "_") for other in routes):
        for inner_key, inner_value in value.items():
            yield from _resolve_key(routes, f"{key}.{inner_key}", inner_value, path)
        return
    raise ScenarioError(join_path(path, key), f"unknown field{_suggest(name, routes)}")


def _suggest(name: str, known: Iterable[str]) -> str:
    """``" (did you mean x?)"``, or the list of known fields when it is short."""
    names = list(known)
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    if len(names) <= 12:
        return f" (known: {', '.join(names)})"
    return ""


def _construct(cls: Any, values: Mapping[str, Any], path: str, unit: str | None) -> Any:
    """Convert ``values`` (canonical names of ``cls`` and its flattened fields) and build."""
    kwargs: dict[str, Any] = {}
    for spec in field_specs(cls):
        if spec.flatten:
            inner = _routes(spec.tp)
            kwargs[spec.alias] = _construct(
                spec.tp, {name: v for name, v in values.items() if name in inner}, path, unit
            )
        elif spec.name in values:
            kwargs[spec.alias] = convert(
                spec.tp, values[spec.name], join_path(path, spec.name), _unit(spec, unit)
            )
        elif not spec.has_default:
            raise ScenarioError(join_path(path, spec.name), "missing (this field is required)")
    return _instantiate(cls, kwargs, path)


def _instantiate(cls: Any, kwargs: Mapping[str, Any], path: str) -> Any:
    """``cls(**kwargs)``, turning a validator's complaint into a ScenarioError on its field."""
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as error:
        failure = error
    # Find the field whose own validator objects, to name it; else blame the whole table.
    with attrs.validators.disabled():
        try:
            unchecked = cls(**kwargs)
        except (ValueError, TypeError):
            unchecked = None
    if unchecked is not None:
        for attribute in attrs.fields(cls):
            if attribute.validator is None or not attribute.init:
                continue
            try:
                attribute.validator(unchecked, attribute, getattr(unchecked, attribute.name))
            except (ValueError, TypeError) as error:
                message = _validator_message(attribute.name, error)
                raise ScenarioError(join_path(path, attribute.name), message) from None
    raise ScenarioError(path, _validator_message("", failure)) from None


def convert(tp: Any, value: Any, path: str, unit: str | None = None) -> Any:
    """Check and convert one TOML value to type ``tp`` (see the module docstring).

    Raises ScenarioError naming ``path`` when the value does not fit.
    """
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        return _convert_literal(get_args(tp), value, path)
    if origin in (Union, types.UnionType):
        return _convert_union(get_args(tp), value, path, unit)
    if attrs.has(tp):
        return build(tp, value, path, unit)
    if origin in (list, tuple, Sequence):
        return _convert_sequence(tp, value, path, unit)
    if origin in (dict, Mapping):
        key_type, value_type = get_args(tp)
        if key_type is not str:
            raise TypeError(f"{path}: only dict[str, ...] fields are supported")
        if not isinstance(value, dict):
            raise ScenarioError(path, f"expected a table, got {show(value)}")
        return {
            key: convert(value_type, item, join_path(path, key), unit)
            for key, item in value.items()
        }
    if tp is bool:
        if not isinstance(value, bool):
            raise ScenarioError(path, f"expected a boolean (true or false), got {show(value)}")
        return value
    if tp is int:
        return _convert_int(value, path, unit)
    if tp is float:
        if unit is not None:
            return float(_convert_int(value, path, unit))
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScenarioError(path, f"expected a number, got {show(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ScenarioError(path, f"expected a string, got {show(value)}")
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if value in (member.value, member.name):
                return member
        raise ScenarioError(path, f"expected {describe_type(tp)}, got {show(value)}")
    raise TypeError(f"{path}: the scenario loader does not support fields of type {tp!r}")


def _convert_int(value: Any, path: str, unit: str | None) -> int:
    try:
        if unit == SIZE_UNIT:
            return parse_size(value)
        if unit is not None:
            return parse_duration(value, unit)
    except UnitError as error:
        raise ScenarioError(path, str(error)) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(path, f"expected an integer, got {show(value)}")
    return value


def _convert_literal(choices: tuple[Any, ...], value: Any, path: str) -> Any:
    for choice in choices:
        if value == choice and type(value) is type(choice):
            return choice
    # Kafka reads every setting as a string: accept acks = 1 for acks = "1".
    if isinstance(value, int) and not isinstance(value, bool) and str(value) in choices:
        return str(value)
    expected = ", ".join(show(choice) for choice in choices)
    raise ScenarioError(path, f"expected one of {expected}, got {show(value)}")


def _convert_sequence(tp: Any, value: Any, path: str, unit: str | None) -> Any:
    if not isinstance(value, list):
        raise ScenarioError(path, f"expected an array, got {show(value)}")
    args = get_args(tp)
    origin = get_origin(tp)
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise ScenarioError(path, f"expected an array of {len(args)}, got {len(value)} items")
        return tuple(
            convert(item_type, item, join_path(path, i), unit)
            for i, (item_type, item) in enumerate(zip(args, value, strict=True))
        )
    item_type = args[0] if args else Any
    items = [convert(item_type, item, join_path(path, i), unit) for i, item in enumerate(value)]
    return tuple(items) if origin is tuple else items


def _discriminator(members: tuple[Any, ...]) -> tuple[str, dict[Any, type]]:
    """The tag field shared by attrs classes ``members`` and its value -> class map. Cached."""
    cached = _TAGS.get(members)
    if cached is not None:
        return cached
    first = field_specs(members[0])
    for spec in first:
        if get_origin(spec.tp) is not Literal:
            continue
        choices: dict[Any, type] = {}
        for member in members:
            tag = next((s for s in field_specs(member) if s.name == spec.name), None)
            if tag is None or get_origin(tag.tp) is not Literal:
                break
            for choice in get_args(tag.tp):
                choices[choice] = member
        else:
            _TAGS[members] = (spec.name, choices)
            return spec.name, choices
    names = ", ".join(member.__name__ for member in members)
    raise TypeError(f"union of {names} has no common Literal tag field")


def _convert_union(args: tuple[Any, ...], value: Any, path: str, unit: str | None) -> Any:
    members = tuple(member for member in args if member is not _NONE)
    if value is None and len(members) < len(args):
        return None
    if len(members) == 1:
        return convert(members[0], value, path, unit)
    if all(attrs.has(member) for member in members):
        tag, choices = _discriminator(members)
        expected = ", ".join(show(choice) for choice in choices)
        if not isinstance(value, dict):
            raise ScenarioError(
                path, f"expected a table with {tag} = {expected}, got {show(value)}"
            )
        if tag not in value:
            raise ScenarioError(join_path(path, tag), f"missing (one of {expected})")
        chosen = choices.get(value[tag])
        if chosen is None:
            raise ScenarioError(
                join_path(path, tag), f"expected one of {expected}, got {show(value[tag])}"
            )
        return build(chosen, value, path, unit)
    for member in members:
        try:
            return convert(member, value, path, unit)
        except ScenarioError:
            continue
    expected = " or ".join(describe_type(member, unit) for member in members)
    raise ScenarioError(path, f"expected {expected}, got {show(value)}")


# -- overrides --------------------------------------------------------------------------------


def parse_assignment(text: str) -> tuple[str, Any]:
    """Split ``"section.key=value"``; the value is read as a TOML value, else a bare string.

    So ``acks=1`` gives 1, ``linger_ms=5ms`` gives ``"5ms"``, ``enabled=true`` gives True,
    ``client_broker={distribution="constant", value="1ms"}`` gives a table.
    Raises ScenarioError if there is no ``=`` or no key.
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


def _tokens(path: str) -> list[str | int]:
    """``"producers[0].linger.ms"`` -> ``["producers", 0, "linger", "ms"]``."""
    tokens: list[str | int] = []
    for part in _INDEX.sub(r".\1", path).split("."):
        if not part:
            raise ScenarioError(path, "malformed field path")
        tokens.append(int(part) if part.isdigit() else part)
    return tokens


def apply_override(obj: T, path: str, value: Any) -> T:
    """A copy of attrs instance ``obj`` with the field at ``path`` set to ``value``.

    ``path`` names fields with dots (Kafka's dotted names work too) and list entries with
    ``[i]`` or ``.i``; a path that goes through a list without an index sets the field in
    every entry (``producers.acks=1``). ``value`` is converted like a TOML value; the changed
    table's validators run. Raises ScenarioError naming the field.
    """
    tokens = _tokens(path)
    updated: T = _set(obj, tokens, value, "", None)
    return updated


def _set(obj: Any, tokens: list[str | int], value: Any, path: str, unit: str | None) -> Any:
    cls = type(obj)
    routes = _routes(cls)
    head = tokens[0]
    if isinstance(head, int):
        raise ScenarioError(join_path(path, head), "is not a list entry")
    name, used = _match_key(routes, tokens, path)
    rest = tokens[used:]
    hops = routes[name]
    # Walk down the flattened fields to the object that owns `name`.
    owners = [obj]
    for hop in hops:
        owners.append(getattr(owners[-1], hop))
    owner = owners[-1]
    spec = _spec(type(owner), name)
    spec_unit = _unit(spec, unit)
    where = join_path(path, name)
    if rest:
        new = _set_inside(spec, spec_unit, getattr(owner, spec.name), rest, value, where)
    else:
        new = convert(spec.tp, value, where, spec_unit)
    # Rebuild the owners bottom-up: owners[i + 1] is field hops[i] of owners[i].
    rebuilt = _evolve(owner, spec, new, path)
    for depth in range(len(hops) - 1, -1, -1):
        parent = owners[depth]
        rebuilt = _evolve(parent, _spec(type(parent), hops[depth]), rebuilt, path)
    return rebuilt


def _match_key(
    routes: Mapping[str, tuple[str, ...]], tokens: list[str | int], path: str
) -> tuple[str, int]:
    """The shortest run of leading name tokens that spells a field; (name, tokens used)."""
    words: list[str] = []
    for token in tokens:
        if isinstance(token, int):
            break
        words.append(_normalise(token))
        candidate = "_".join(words)
        if candidate in routes:
            return candidate, len(words)
    first = str(tokens[0])
    raise ScenarioError(
        join_path(path, first), f"unknown field{_suggest(_normalise(first), routes)}"
    )


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
        if isinstance(head, int):
            if head >= len(items):
                raise ScenarioError(
                    join_path(where, head), f"no such entry (there are {len(items)})"
                )
            targets = [head]
            rest = rest[1:]
        else:
            targets = list(range(len(items)))
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


def optional_inner(tp: Any) -> Any:
    """``X`` for ``X | None``, else ``tp`` itself."""
    if get_origin(tp) in (Union, types.UnionType):
        members = [member for member in get_args(tp) if member is not _NONE]
        if len(members) == 1:
            return members[0]
    return tp


def _evolve(obj: T, spec: FieldSpec, new: Any, path: str) -> T:
    """``obj`` with field ``spec`` replaced, validated like a freshly loaded table."""
    kwargs = {s.alias: getattr(obj, s.name) for s in field_specs(type(obj))}
    kwargs[spec.alias] = new
    evolved: T = _instantiate(type(obj), kwargs, path)
    return evolved


# -- documentation ----------------------------------------------------------------------------


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
            f"{s.name} = {format_value(getattr(value, s.name), _unit(s, unit))}"
            for s in field_specs(type(value))
        ]
        return "{ " + ", ".join(parts) + " }"
    return repr(value)

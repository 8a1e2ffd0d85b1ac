"""From TOML values to typed values and attrs instances: :func:`build` and :func:`convert`.

:func:`build` turns a table (a dict from :mod:`tomllib`) into an instance of any attrs class:
the table's keys are made canonical (:mod:`sim.scenario.tables`), each value is converted to
its field's type by :func:`convert`, missing fields take the class's defaults, and the class
is called, so its attrs validators run as usual.

:func:`convert` reads the field's type annotation: ``int``, ``float``, ``bool``, ``str``,
``Literal[...]``, enums, ``list[X]``, ``tuple[X, ...]``, ``tuple[X, Y]``, ``dict[str, X]``,
``X | None``, nested attrs classes, and unions of attrs classes told apart by their tag field
(:func:`sim.scenario.specs.discriminator`). An int field with a unit accepts a duration or a
size as a string (``"5s"``, ``"16KiB"``); so does a float field with a unit. A float must be
finite (TOML's ``inf`` and ``nan`` are refused). A Literal of strings accepts an int that
spells one (Kafka reads ``acks = 1`` as ``"1"``). Nothing is coerced otherwise: ``1.5`` for
an int or ``"true"`` for a bool is an error.

Every problem raises :class:`~sim.scenario.errors.ScenarioError` naming the field's path (e.g.
``producers[0].linger_ms``); a validator's complaint is put on the field whose validator
refused (:func:`instantiate`). A TypeError means a schema class uses a type the loader does
not support: a programming error, raised when the class is first used.
"""

from __future__ import annotations

import enum
import math
import types
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import attrs

from replica.config_def import SIZE_UNIT
from sim.core.units import UnitError, parse_duration, parse_size
from sim.scenario.errors import ScenarioError
from sim.scenario.formatting import describe_type, join_path, show
from sim.scenario.specs import NONE_TYPE, discriminator, field_specs, routes, unit_inside
from sim.scenario.tables import canonical

__all__ = ["build", "convert", "instantiate"]

T = TypeVar("T")


def build(cls: type[T], data: object, path: str = "", unit: str | None = None) -> T:
    """An instance of attrs class ``cls`` from table ``data``; ``path`` prefixes error fields.

    ``unit`` is the unit of the field holding the object (for ``inherit_unit`` fields).
    Raises ScenarioError for an unknown, duplicate, missing or invalid field.
    """
    built: T = _construct(cls, canonical(cls, data, path), path, unit)
    return built


def _construct(cls: Any, values: Mapping[str, Any], path: str, unit: str | None) -> Any:
    """Convert ``values`` (canonical names of ``cls`` and its flattened fields) and build."""
    kwargs: dict[str, Any] = {}
    for spec in field_specs(cls):
        if spec.flatten:
            inner = routes(spec.tp)
            kwargs[spec.alias] = _construct(
                spec.tp, {name: v for name, v in values.items() if name in inner}, path, unit
            )
        elif spec.name in values:
            kwargs[spec.alias] = convert(
                spec.tp,
                spec.respelled(values[spec.name]),
                join_path(path, spec.name),
                unit_inside(spec, unit),
            )
        elif not spec.has_default:
            raise ScenarioError(join_path(path, spec.name), "missing (this field is required)")
    return instantiate(cls, kwargs, path)


def instantiate(cls: Any, kwargs: Mapping[str, Any], path: str) -> Any:
    """``cls(**kwargs)``, turning a validator's complaint into a ScenarioError on its field.

    The field is found by building the object again with validators off and running each
    field's validator alone; if none objects (the class's own ``__attrs_post_init__`` did),
    the error is on the whole table at ``path``.
    """
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as error:
        failure = error
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


def _validator_message(name: str, error: Exception) -> str:
    """The validator's complaint without a leading field name (the path names the field)."""
    message = str(error)
    # attrs' built-in validators start with the quoted name, others often with the bare name.
    for prefix in (f"'{name}' ", f"{name} "):
        if name and message.startswith(prefix):
            return message[len(prefix) :]
    return message


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
        if not math.isfinite(value):
            raise ScenarioError(path, f"expected a finite number, got {show(value)}")
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


def _convert_union(args: tuple[Any, ...], value: Any, path: str, unit: str | None) -> Any:
    members = tuple(member for member in args if member is not NONE_TYPE)
    if value is None and len(members) < len(args):
        return None
    if len(members) == 1:
        return convert(members[0], value, path, unit)
    if all(attrs.has(member) for member in members):
        tag, choices = discriminator(members)
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

"""What the scenario loader knows of a settings class: its fields, keys, units and union tags.

The loader is generic: any attrs class can be a scenario section. It reads each class once
(results are cached per class) and from then on works only from what this module derives:

* :func:`field_specs`: the class's init fields as :class:`FieldSpec` records, with resolved
  type annotations and the :mod:`replica.config_def` metadata (help, unit, flatten,
  inherit_unit) and the default (a factory is called once, for listing it).
* :func:`routes`: every key a table of the class accepts, including the fields of flattened
  fields (``[cluster]`` accepts ``replica_fetch_wait_max_ms``, a field of its ``broker``), each
  with the flattened fields leading to it. :func:`normalise` turns Kafka's dotted spelling
  (``replica.fetch.wait.max.ms``) and dashes into those keys.
* :func:`discriminator`: how a union of attrs classes is told apart, by the first field they
  all have whose type is a ``Literal`` (a distribution's ``distribution``, a fault's ``type``).
* :func:`unit_inside`: a field's unit inside an object held by a field with a unit, for
  ``inherit_unit`` fields (a distribution's values are bytes when it is a size's).

A class the loader cannot read (a flattened field that is not an attrs class, a key defined
twice through flattening, a union without a common tag) raises TypeError when first used: a
programming error in a schema, not a scenario error.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from replica.config_def import field_unit

__all__ = [
    "NONE_TYPE",
    "FieldSpec",
    "discriminator",
    "field_specs",
    "normalise",
    "optional_inner",
    "routes",
    "spec_named",
    "unit_inside",
]

NONE_TYPE = type(None)
"""The type of None, as it appears among the members of an ``X | None`` annotation."""

_SPECS: dict[Any, tuple[FieldSpec, ...]] = {}
_ROUTES: dict[Any, dict[str, tuple[str, ...]]] = {}
_TAGS: dict[Any, tuple[str, dict[Any, type]]] = {}


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
    spellings: Mapping[str, Any]  # other names for some values (Kafka's acks = "all")

    def respelled(self, value: Any) -> Any:
        """``value``, or the value it is another name for."""
        return self.spellings.get(value, value) if isinstance(value, str) else value


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
                spellings=attribute.metadata.get("spellings", {}),
            )
        )
    _SPECS[cls] = result = tuple(specs)
    return result


def routes(cls: Any) -> dict[str, tuple[str, ...]]:
    """Every key a table of ``cls`` accepts -> the flattened fields leading to it. Cached.

    The result is shared: callers must not change it.
    """
    cached = _ROUTES.get(cls)
    if cached is not None:
        return cached
    found: dict[str, tuple[str, ...]] = {}
    for spec in field_specs(cls):
        if spec.flatten:
            inner = {name: (spec.name, *hops) for name, hops in routes(spec.tp).items()}
        else:
            inner = {spec.name: ()}
        for name, hops in inner.items():
            if name in found:
                raise TypeError(f"{cls.__name__}: key {name!r} is defined twice")
            found[name] = hops
    _ROUTES[cls] = found
    return found


def spec_named(cls: Any, name: str) -> FieldSpec:
    """The spec of field ``name`` of ``cls`` (a field of ``cls`` itself, not a flattened one)."""
    for spec in field_specs(cls):
        if spec.name == name:
            return spec
    raise KeyError(name)  # pragma: no cover - callers only ask for known names


def unit_inside(spec: FieldSpec, holder_unit: str | None) -> str | None:
    """The unit of ``spec`` inside an object held by a field of unit ``holder_unit``."""
    return holder_unit if spec.inherit_unit and holder_unit is not None else spec.unit


def normalise(key: str) -> str:
    """A key as a field name: ``replica.fetch.wait.max.ms`` -> ``replica_fetch_wait_max_ms``."""
    return key.replace(".", "_").replace("-", "_")


def optional_inner(tp: Any) -> Any:
    """``X`` for ``X | None``, else ``tp`` itself."""
    if get_origin(tp) in (Union, types.UnionType):
        members = [member for member in get_args(tp) if member is not NONE_TYPE]
        if len(members) == 1:
            return members[0]
    return tp


def discriminator(members: tuple[Any, ...]) -> tuple[str, dict[Any, type]]:
    """The tag field shared by attrs classes ``members`` and its value -> class map. Cached.

    The map is shared: callers must not change it.
    """
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

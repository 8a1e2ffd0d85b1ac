"""Declaring scenario knobs: field metadata (``doc()``), units and range validators.

Any attrs class can be a scenario section; the loader reads its fields' types. Field metadata
(``attrs.field(..., metadata=doc("help", unit=...))``) refines that:

* ``"unit"``: ``"us"``, ``"ms"`` or ``"s"`` marks an int field as a duration in that unit
  (it then accepts ``"5s"``-style strings); ``"bytes"`` marks a size (accepts ``"16KiB"``).
  Without metadata the unit comes from the name: ``*_ms`` and ``*_us`` are durations,
  ``*_bytes`` sizes (Kafka's own naming convention), so plain attrs classes work unchanged.
* ``"help"``: one line shown by ``python -m sim knobs``.
* ``"flatten"``: an attrs-class field whose fields appear directly in the parent's table
  (e.g. ``[cluster]`` holds :class:`replica.config.BrokerConfig`'s knobs).
* ``"inherit_unit"``: the field's unit is that of the field holding its object, if any (the
  values of a latency distribution are us, those of a message-size distribution bytes).

Validators here raise ValueError with a message that does not repeat the field name; the
loader puts the field's path in front.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["FlattenedAccess", "at_least", "between", "doc", "field_unit"]

DURATION_UNIT_NAMES = ("us", "ms", "s")
SIZE_UNIT = "bytes"

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def doc(
    help: str, *, unit: str | None = None, flatten: bool = False, inherit_unit: bool = False
) -> dict[str, Any]:
    """Field metadata for the loader and ``python -m sim knobs``: use as
    ``attrs.field(default=5, metadata=doc("linger.ms"))``.

    ``inherit_unit``: the field takes the unit of the field holding its object when that one
    has a unit (``unit`` otherwise); so a distribution held by a size field is in bytes.
    Raises ValueError for a unit other than us, ms, s or bytes.
    """
    metadata: dict[str, Any] = {"help": help}
    if inherit_unit:
        metadata["inherit_unit"] = True
    if unit is not None:
        if unit not in (*DURATION_UNIT_NAMES, SIZE_UNIT):
            raise ValueError(f"unit must be one of us, ms, s, bytes; got {unit!r}")
        metadata["unit"] = unit
    if flatten:
        metadata["flatten"] = True
    return metadata


def field_unit(attribute: attrs.Attribute[Any]) -> str | None:
    """The unit of a field: its ``"unit"`` metadata, else inferred from its name, else None."""
    unit = attribute.metadata.get("unit")
    if unit is not None:
        return str(unit)
    name = attribute.name
    if name.endswith("_ms"):
        return "ms"
    if name.endswith("_us"):
        return "us"
    if name.endswith("_bytes"):
        return SIZE_UNIT
    return None


def at_least(minimum: float) -> Validator:
    """Validator: the value must be >= ``minimum``."""

    def check(_instance: Any, _attribute: attrs.Attribute[Any], value: Any) -> None:
        if value < minimum:
            raise ValueError(f"must be >= {minimum}, got {value}")

    return check


def between(minimum: float, maximum: float) -> Validator:
    """Validator: the value must be in ``[minimum, maximum]``."""

    def check(_instance: Any, _attribute: attrs.Attribute[Any], value: Any) -> None:
        if not minimum <= value <= maximum:
            raise ValueError(f"must be between {minimum} and {maximum}, got {value}")

    return check


class FlattenedAccess:
    """Mixin for sections with flattened fields: their knobs read as the section's own.

    ``section.acks`` is ``section.config.acks`` when ``config`` is flattened, so attribute
    paths in code match the knob paths of scenario files and ``--set``. Only reading; the
    flattened objects stay the source of truth.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails; never for private or dunder names, so copy,
        # pickle and attrs' own machinery are unaffected.
        if not name.startswith("_"):
            for field in attrs.fields(type(self)):  # type: ignore[arg-type]
                if field.metadata.get("flatten"):
                    inner = object.__getattribute__(self, field.name)
                    if hasattr(inner, name):
                        return getattr(inner, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

"""Declaring a config field: one convention for every settings class, from the broker up.

Named after Kafka's ``ConfigDef``, which gives each setting a name, a default, a validator and
a line of documentation. Here a setting is an attrs field of a frozen settings class::

    replica_lag_time_max_ms: int = attrs.field(
        default=30_000,
        validator=int_at_least(1),
        metadata=doc("replica.lag.time.max.ms: a follower not caught up for this long leaves..."),
    )

**Metadata** (:func:`doc`) is what ``python -m sim knobs`` shows and the scenario loader reads:

* ``"help"``: one line; a field that is a Kafka (or Sarama, Burrow) setting starts it with the
  setting's own name (``"linger.ms: ..."``).
* ``"unit"``: ``"us"``, ``"ms"`` or ``"s"`` marks an int field as a duration in that unit (the
  loader then accepts ``"5s"``-style strings); ``"bytes"`` marks a size (``"16KiB"``). Without
  it :func:`field_unit` infers the unit from the name, as Kafka's naming does: ``*_ms`` and
  ``*_us`` are durations, ``*_bytes`` sizes.
* ``"flatten"``: a field holding a settings object whose fields appear directly in the
  parent's table (``[cluster]`` holds :class:`replica.config.BrokerConfig`'s knobs).
* ``"inherit_unit"``: the field's unit is that of the field holding its object, if any (the
  values of a latency distribution are us, those of a message-size distribution bytes).
* ``"spellings"``: names a scenario may write for some values, as Kafka spells them
  (``acks = "all"`` for -1); the loader replaces them before converting.

**Validators** (:func:`int_at_least`, :func:`at_least`, :func:`greater_than`,
:func:`between`, :func:`one_of`, :func:`positive_int`, :func:`optional`, and :func:`require`
for a one-off rule) check one field when the object is built. A refused value raises the
exception its class declares, so each layer keeps its own: the class names a
:class:`FieldErrors` in a ``field_errors`` class attribute (the exception class, and whether
messages name fields the Kafka way, ``replica.fetch.wait.max.ms``, or by attribute name,
``replica_fetch_wait_max_ms``); a class that declares none raises ValueError naming the
attribute. Every message reads ``<field> must be <requirement>, got <value>``: the scenario
loader strips a leading attribute name and puts the field's path in front instead.

This module imports nothing but attrs: it is the bottom of the config stack, so ``replica``,
``coordinator``, ``apis`` and ``sim`` all import it downward.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

import attrs

__all__ = [
    "DURATION_UNITS",
    "SIZE_UNIT",
    "FieldErrors",
    "Validator",
    "at_least",
    "between",
    "doc",
    "field_unit",
    "greater_than",
    "int_at_least",
    "one_of",
    "optional",
    "positive_int",
    "require",
]

DURATION_UNITS = ("us", "ms", "s")
SIZE_UNIT = "bytes"

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]
"""An attrs validator: ``check(instance, attribute, value)`` returns None or raises."""


# -- metadata ---------------------------------------------------------------------------------


def doc(
    help: str,
    *,
    unit: str | None = None,
    flatten: bool = False,
    inherit_unit: bool = False,
    spellings: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """Field metadata (see the module docstring): use as
    ``attrs.field(default=5, metadata=doc("linger.ms: ...", unit="ms"))``.

    ``inherit_unit``: the field takes the unit of the field holding its object when that one
    has a unit (``unit`` otherwise); so a distribution held by a size field is in bytes.
    ``spellings``: other names for some values (``{"all": -1}``).
    Raises ValueError for a unit other than us, ms, s or bytes.
    """
    metadata: dict[str, Any] = {"help": help}
    if inherit_unit:
        metadata["inherit_unit"] = True
    if unit is not None:
        if unit not in (*DURATION_UNITS, SIZE_UNIT):
            raise ValueError(f"unit must be one of us, ms, s, bytes; got {unit!r}")
        metadata["unit"] = unit
    if flatten:
        metadata["flatten"] = True
    if spellings:
        metadata["spellings"] = dict(spellings)
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


# -- validators -------------------------------------------------------------------------------


@attrs.frozen
class FieldErrors:
    """How a settings class reports a refused value: declare it as a class attribute,
    ``field_errors: ClassVar[FieldErrors] = FieldErrors(InvalidConfigError, kafka_names=True)``.

    ``error`` builds the exception from the message; ``kafka_names`` names the field with dots
    (``min.insync.replicas``) rather than by its attribute name (``min_insync_replicas``).
    """

    error: Callable[[str], Exception] = ValueError
    kafka_names: bool = False

    def refusal(
        self, attribute: attrs.Attribute[Any], requirement: str, value: object
    ) -> Exception:
        """The exception saying ``<field> must be <requirement>, got <value!r>``."""
        name = attribute.name.replace("_", ".") if self.kafka_names else attribute.name
        return self.error(f"{name} must be {requirement}, got {value!r}")


_UNDECLARED = FieldErrors()


def _refusal(
    instance: object, attribute: attrs.Attribute[Any], requirement: str, value: object
) -> Exception:
    # The class, not the instance: a section's __getattr__ must not answer for it.
    errors: FieldErrors = getattr(type(instance), "field_errors", _UNDECLARED)
    return errors.refusal(attribute, requirement, value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def require(requirement: str, accepts: Callable[[Any], bool]) -> Validator:
    """Validator: ``accepts(value)`` must be true, else ``<field> must be <requirement>, ...``.

    For a rule of one field that none of the named validators states.
    """

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not accepts(value):
            raise _refusal(instance, attribute, requirement, value)

    return check


def _bounded_below(minimum: float, kind: str, is_kind: Callable[[object], bool]) -> Validator:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not is_kind(value):
            raise _refusal(instance, attribute, f"{kind} >= {minimum}", value)
        if value < minimum:
            raise _refusal(instance, attribute, f">= {minimum}", value)

    return check


def int_at_least(minimum: int) -> Validator:
    """Validator: an int (not a bool) >= ``minimum``.

    Refuses another type as ``must be an integer >= <minimum>`` and a smaller int as
    ``must be >= <minimum>``.
    """
    return _bounded_below(minimum, "an integer", _is_int)


def at_least(minimum: float) -> Validator:
    """Validator: an int or float (not a bool) >= ``minimum``.

    Refuses another type as ``must be a number >= <minimum>`` and a smaller number as
    ``must be >= <minimum>``.
    """
    return _bounded_below(minimum, "a number", _is_number)


def positive_int() -> Validator:
    """Validator: an int (not a bool) >= 1; refuses anything else as ``a positive int``."""
    return require("a positive int", lambda value: _is_int(value) and value >= 1)


def greater_than(bound: float) -> Validator:
    """Validator: an int or float (not a bool) > ``bound``, else ``a number > <bound>``."""
    return require(f"a number > {bound}", lambda value: _is_number(value) and value > bound)


def between(low: float, high: float) -> Validator:
    """Validator: a finite int or float (not a bool) in ``[low, high]``, else
    ``a number between <low> and <high>``."""
    return require(
        f"a number between {low} and {high}",
        lambda value: _is_number(value) and math.isfinite(value) and low <= value <= high,
    )


def one_of(choices: Collection[object]) -> Validator:
    """Validator: one of ``choices``, else ``one of <choices, repr'd>``."""
    allowed = ", ".join(repr(choice) for choice in choices)
    return require(f"one of {allowed}", lambda value: value in choices)


def optional(validator: Validator) -> Validator:
    """Validator: None, or a value ``validator`` accepts."""
    return attrs.validators.optional(validator)

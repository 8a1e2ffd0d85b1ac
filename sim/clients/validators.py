"""attrs validators for the clients' configs: errors name the field and the allowed values."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any

import attrs

from sim.clients.errors import ClientConfigError

__all__ = ["float_between", "int_at_least", "one_of"]

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def int_at_least(minimum: int) -> Validator:
    """The value must be an int (not a bool) >= ``minimum``."""

    def check(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ClientConfigError(
                f"{attribute.name} must be an integer >= {minimum}, got {value!r}"
            )

    return check


def float_between(low: float, high: float) -> Validator:
    """The value must be a finite number in ``[low, high]``."""

    def check(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not low <= value <= high
        ):
            raise ClientConfigError(
                f"{attribute.name} must be a number between {low} and {high}, got {value!r}"
            )

    return check


def one_of(choices: Collection[object]) -> Validator:
    """The value must be one of ``choices``."""

    def check(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in choices:
            allowed = ", ".join(repr(c) for c in choices)
            raise ClientConfigError(f"{attribute.name} must be one of {allowed}, got {value!r}")

    return check

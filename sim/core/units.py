"""Durations ("5s", "500ms", "250us") and sizes ("16KiB", "1MB") as written in scenarios.

Conversions are exact (decimal arithmetic): a value that is not a whole number of the target
unit is refused rather than rounded.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Final

__all__ = [
    "DURATION_UNITS",
    "SIZE_UNITS",
    "UnitError",
    "format_duration",
    "format_size",
    "parse_duration",
    "parse_size",
]

DURATION_UNITS: Final[dict[str, int]] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "min": 60_000_000_000,
    "h": 3_600_000_000_000,
}
"""Nanoseconds per duration unit."""

SIZE_UNITS: Final[dict[str, int]] = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
"""Bytes per size unit (keys lower-case; parsing is case-insensitive)."""

_QUANTITY: Final = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-zµ]+)\s*")


class UnitError(ValueError):
    """A duration or size could not be parsed or converted; the message says why."""


def _show(value: object) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def parse_duration(value: object, unit: str) -> int:
    """Convert ``value`` to a whole number of ``unit`` (a key of DURATION_UNITS).

    An int is taken to be in ``unit`` already. A string is a number and a unit, e.g. ``"5s"``,
    ``"1.5ms"``, ``"250us"``. Raises UnitError (its message names the value and what is
    allowed) if the value is malformed or not a whole number of ``unit``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    hint = f'(e.g. "5s", "500ms", "250us", or an integer number of {unit})'
    match = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise UnitError(f"expected a duration, got {_show(value)} {hint}")
    scale = DURATION_UNITS.get(match.group(2))
    if scale is None:
        raise UnitError(
            f"unknown duration unit {_show(match.group(2))} in {_show(value)} "
            f"(use one of {', '.join(name for name in DURATION_UNITS if name != 'µs')})"
        )
    amount = Decimal(match.group(1)) * scale / DURATION_UNITS[unit]
    if amount != amount.to_integral_value():
        raise UnitError(f"{_show(value)} is not a whole number of {unit}")
    return int(amount)


def parse_size(value: object) -> int:
    """Convert ``value`` to bytes: an int is bytes; a string is e.g. ``"16KiB"``, ``"1MB"``.

    Raises UnitError (naming the value and what is allowed) if malformed or not a whole
    number of bytes.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise UnitError(
            f'expected a size, got {_show(value)} (e.g. "16KiB", "1MiB", "100B", '
            "or an integer number of bytes)"
        )
    scale = SIZE_UNITS.get(match.group(2).lower())
    if scale is None:
        raise UnitError(
            f"unknown size unit {_show(match.group(2))} in {_show(value)} "
            "(use one of B, KB, MB, GB, KiB, MiB, GiB)"
        )
    amount = Decimal(match.group(1)) * scale
    if amount != amount.to_integral_value():
        raise UnitError(f"{_show(value)} is not a whole number of bytes")
    return int(amount)


def format_duration(value: int, unit: str) -> str:
    """The shortest exact spelling of ``value`` ``unit`` (e.g. 5000 ms -> ``"5s"``)."""
    if value == 0:
        return f"0{unit}"
    nanos = value * DURATION_UNITS[unit]
    for name in ("h", "m", "s", "ms", "us", "ns"):
        scale = DURATION_UNITS[name]
        if nanos % scale == 0:
            return f"{nanos // scale}{name}"
    raise AssertionError("unreachable: every duration is a whole number of ns")  # pragma: no cover


def format_size(value: int) -> str:
    """The shortest exact binary spelling of ``value`` bytes (e.g. 16384 -> ``"16KiB"``)."""
    for name, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value and value % scale == 0:
            return f"{value // scale}{name}"
    return f"{value}B"

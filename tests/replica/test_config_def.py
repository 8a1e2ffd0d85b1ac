"""replica.config_def: field metadata, and validators raising the error their class declares."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import pytest

from replica.config_def import (
    FieldErrors,
    Validator,
    at_least,
    between,
    doc,
    field_unit,
    greater_than,
    int_at_least,
    one_of,
    optional,
    positive_int,
    require,
)


class SettingError(ValueError):
    """The error the test settings classes declare."""


def _settings_class(validator: Validator, errors: FieldErrors | None) -> type[Any]:
    """A settings class with one field, ``fetch_wait_ms``, checked by ``validator``."""
    namespace: dict[str, Any] = {
        "__annotations__": {"fetch_wait_ms": "object"},
        "fetch_wait_ms": attrs.field(validator=validator),
    }
    if errors is not None:
        namespace["__annotations__"]["field_errors"] = ClassVar[FieldErrors]
        namespace["field_errors"] = errors
    return attrs.frozen(type("Settings", (), namespace))


CASES: list[tuple[Validator, list[object], list[tuple[object, str]]]] = [
    (
        int_at_least(2),
        [2, 10**12],
        [(1, "must be >= 2, got 1"), (2.0, "must be an integer >= 2, got 2.0"),
         (True, "must be an integer >= 2, got True"), ("3", "must be an integer >= 2, got '3'")],
    ),
    (
        at_least(0.5),
        [0.5, 1, 7.25],
        [(0.25, "must be >= 0.5, got 0.25"), (False, "must be a number >= 0.5, got False"),
         ("1", "must be a number >= 0.5, got '1'")],
    ),
    (
        positive_int(),
        [1, 500],
        [(0, "must be a positive int, got 0"), (-5, "must be a positive int, got -5"),
         (2.5, "must be a positive int, got 2.5"), (True, "must be a positive int, got True")],
    ),
    (
        greater_than(0),
        [1e-9, 3],
        [(0, "must be a number > 0, got 0"), (-1.5, "must be a number > 0, got -1.5"),
         (True, "must be a number > 0, got True")],
    ),
    (
        between(0.0, 1.0),
        [0, 0.5, 1.0],
        [(1.5, "must be a number between 0.0 and 1.0, got 1.5"),
         (math.nan, "must be a number between 0.0 and 1.0, got nan"),
         (True, "must be a number between 0.0 and 1.0, got True")],
    ),
    (
        one_of(("hash", "round_robin")),
        ["hash", "round_robin"],
        [("random", "must be one of 'hash', 'round_robin', got 'random'")],
    ),
    (
        optional(int_at_least(1)),
        [None, 1],
        [(0, "must be >= 1, got 0")],
    ),
    (
        require("an even number", lambda value: value % 2 == 0),
        [0, 4],
        [(3, "must be an even number, got 3")],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("validator", "good", "bad"), CASES)
def test_validators_accept_good_values(
    validator: Validator, good: list[object], bad: list[tuple[object, str]]
) -> None:
    settings = _settings_class(validator, FieldErrors(SettingError))
    for value in good:
        assert settings(fetch_wait_ms=value).fetch_wait_ms == value


@pytest.mark.parametrize(("validator", "good", "bad"), CASES)
@pytest.mark.parametrize(
    ("errors", "error_class", "name"),
    [
        (FieldErrors(SettingError), SettingError, "fetch_wait_ms"),
        (FieldErrors(SettingError, kafka_names=True), SettingError, "fetch.wait.ms"),
        (None, ValueError, "fetch_wait_ms"),  # no declaration: ValueError, attribute name
    ],
)
def test_validators_refuse_with_the_declared_error_naming_the_field(
    validator: Validator,
    good: list[object],
    bad: list[tuple[object, str]],
    errors: FieldErrors | None,
    error_class: type[Exception],
    name: str,
) -> None:
    settings = _settings_class(validator, errors)
    for value, problem in bad:
        with pytest.raises(error_class) as caught:
            settings(fetch_wait_ms=value)
        assert type(caught.value) is error_class
        assert str(caught.value) == f"{name} {problem}"


def test_the_class_not_the_instance_declares_the_errors() -> None:
    # A section that forwards unknown attributes must not lend its inner object's errors.
    class Forwarding:
        def __getattr__(self, name: str) -> object:
            return FieldErrors(SettingError)

    field = attrs.fields(_settings_class(int_at_least(0), None)).fetch_wait_ms
    with pytest.raises(ValueError) as caught:
        int_at_least(0)(Forwarding(), field, -1)
    assert type(caught.value) is ValueError


def test_doc_builds_the_metadata_the_loader_reads() -> None:
    assert doc("linger.ms: wait") == {"help": "linger.ms: wait"}
    assert doc("size", unit="bytes", inherit_unit=True) == {
        "help": "size",
        "unit": "bytes",
        "inherit_unit": True,
    }
    assert doc("section", flatten=True) == {"help": "section", "flatten": True}
    with pytest.raises(ValueError, match="unit must be one of us, ms, s, bytes; got 'min'"):
        doc("bad", unit="min")


def test_units_come_from_metadata_else_from_kafkas_naming() -> None:
    @attrs.frozen
    class Units:
        linger_ms: int = 0
        handling_us: int = 0
        batch_bytes: int = 0
        timeout: int = attrs.field(default=0, metadata=doc("t", unit="s"))
        retries: int = 0

    units = {field.name: field_unit(field) for field in attrs.fields(Units)}
    assert units == {
        "linger_ms": "ms",
        "handling_us": "us",
        "batch_bytes": "bytes",
        "timeout": "s",
        "retries": None,
    }

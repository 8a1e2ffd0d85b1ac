"""The fields of a request body, each one's name and declared type, and a body rebuilt with
some fields replaced: what :class:`~apis.kafka_apis.KafkaApis` needs to check that a body's
fields have their declared types and to answer a malformed one.

Most bodies are frozen attrs classes: their fields are the class's attrs fields, typed by its
annotations. The bodies of most requests (:class:`~apis.fetch.FetchRequest`,
:class:`~apis.produce.ProduceRequest`) are plain classes, native in the compiled build, which
keeps no annotations at run time: such a class lists its constructor's parameters in a
``FIELDS`` class constant, ``(name, type)`` pairs in the constructor's order, each type as
the constructor's annotation says but shallowly (``Mapping`` for ``Mapping[TopicPartition,
PartitionFetchInfo]``, ``int | None`` as it is). tests/apis checks these lists against the
constructors.
"""

from __future__ import annotations

from typing import Any, TypeVar, get_type_hints

import attrs

__all__ = ["body_fields", "replace"]

_Body = TypeVar("_Body")


def body_fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """The fields of body class ``cls`` as ``(name, declared type)`` pairs, in the order of
    its constructor's parameters."""
    declared: tuple[tuple[str, Any], ...] | None = getattr(cls, "FIELDS", None)
    if declared is not None:
        return declared
    hints = get_type_hints(cls)
    return tuple((field.name, hints[field.name]) for field in attrs.fields(cls))


def replace(body: _Body, changes: dict[str, object]) -> _Body:
    """A body of ``body``'s class with its fields, but those named in ``changes`` set to
    their values there (unchecked: a field may get a value not of its declared type)."""
    fields: dict[str, object] = {name: getattr(body, name) for name, _ in body_fields(type(body))}
    fields.update(changes)
    made: _Body = type(body)(**fields)
    return made

"""Frames and headers: a request frame's bytes to a decoded request, a response to bytes.

Every Kafka request is a 4-byte big-endian size and a body: the request header (v1, or v2
with tagged fields for a flexible request version) and the request payload; a response is a
size, a response header (v0, or v1 for flexible versions; ApiVersions always v0) and the
payload. ``kio`` reads and writes headers and payloads; this module picks the schemas.

:func:`decode_request` never raises on bad bytes: it returns a :class:`DecodedRequest`, or a
:class:`Rejected` saying whether the connection gets an answer first. Kafka's rules:

* an ApiVersions request of a version the broker does not serve is answered with an
  ApiVersions v0 response carrying UNSUPPORTED_VERSION and the served versions (so the client
  can retry with one of them), in response header v0;
* any other unknown API key or version, and any body that does not parse, closes the
  connection (Kafka's ``InvalidRequestException`` in the network processor). A null (a -1
  length) in a field the request's version does not declare nullable does not parse either:
  ``kio`` reads it as None whatever the version says (a Metadata v0 request's topics), where
  Kafka's generated parser refuses it.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import types
import typing
from typing import Any

import attrs
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from kafka_server.translations import TRANSLATIONS, Translation, api_versions_response

__all__ = [
    "API_VERSIONS_KEY",
    "MAX_REQUEST_BYTES",
    "DecodedRequest",
    "Rejected",
    "decode_request",
    "encode_response",
]

#: Kafka's ``socket.request.max.bytes`` default: larger frames close the connection.
MAX_REQUEST_BYTES = 104_857_600
API_VERSIONS_KEY = 18
_FIXED_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id


@attrs.frozen
class DecodedRequest:
    """A request that parsed: its row of the table, version, correlation id, client id and
    ``kio`` payload."""

    translation: Translation
    version: int
    correlation_id: int
    client_id: str | None
    payload: Any


@attrs.frozen
class Rejected:
    """A frame that is not a served request: ``reason`` for the log, and ``answer`` (the
    encoded frame to write before closing, or None to close at once)."""

    reason: str
    answer: bytes | None = None


_READERS: dict[type, Any] = {}
_WRITERS: dict[type, Any] = {}


def _reader(cls: type) -> Any:
    reader = _READERS.get(cls)
    if reader is None:
        reader = _READERS[cls] = entity_reader(cls)
    return reader


def _writer(cls: type) -> Any:
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _WRITERS[cls] = entity_writer(cls)
    return writer


_NULLABLE: dict[type, tuple[tuple[str, bool], ...]] = {}


def _nullable_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """(name, nullable) of each field of kio entity ``cls``, by its annotations."""
    found = _NULLABLE.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _NULLABLE[cls] = tuple(
            (field.name, types.NoneType in typing.get_args(hints[field.name]))
            for field in dataclasses.fields(cls)
        )
    return found


def _misplaced_null(entity: Any, path: str = "") -> str | None:
    """The dotted name of the first field in ``entity`` (a kio entity, nested entities
    included) that holds None where its schema's version does not allow null, or None."""
    for name, nullable in _nullable_fields(type(entity)):
        value = getattr(entity, name)
        if value is None:
            if not nullable:
                return path + name
            continue
        for item in value if isinstance(value, tuple) else (value,):
            if not dataclasses.is_dataclass(item):
                break  # a tuple of primitives
            found = _misplaced_null(item, f"{path}{name}.")
            if found is not None:
                return found
    return None


def decode_request(frame: bytes) -> DecodedRequest | Rejected:
    """Decode one request frame (without its size prefix); see the module docstring."""
    if len(frame) < _FIXED_HEADER.size:
        return Rejected(f"a {len(frame)}-byte frame is too short for a request header")
    api_key, version, correlation_id = _FIXED_HEADER.unpack_from(frame)
    translation = TRANSLATIONS.get(api_key)
    if translation is None or not translation.serves(version):
        if api_key == API_VERSIONS_KEY:
            unsupported = api_versions_response(0, ErrorCode.unsupported_version)
            return Rejected(
                f"ApiVersions v{version} is not served: answered v0 UNSUPPORTED_VERSION",
                encode_response(unsupported, correlation_id),
            )
        name = translation.name if translation else f"API key {api_key}"
        return Rejected(f"{name} v{version} is not served")
    schema = load_request_schema(api_key, version)
    try:
        header, offset = _reader(schema.__header_schema__)(frame, 0)
        payload, size = _reader(schema)(frame, offset)
    except Exception as exc:  # kio raises several kinds on malformed input
        return Rejected(f"{translation.name} v{version} does not parse: {exc!r}")
    if offset + size != len(frame):
        return Rejected(
            f"{translation.name} v{version} has {len(frame) - offset - size} extra bytes"
        )
    null = _misplaced_null(payload)
    if null is not None:
        return Rejected(f"{translation.name} v{version} does not parse: {null} is not nullable")
    return DecodedRequest(translation, version, correlation_id, header.client_id, payload)


def encode_response(payload: Any, correlation_id: int) -> bytes:
    """The frame (size prefix included) of response ``payload`` to request
    ``correlation_id``, with the response header its schema declares."""
    header_cls = payload.__header_schema__
    body = io.BytesIO()
    _writer(header_cls)(body, header_cls(correlation_id=correlation_id))
    _writer(type(payload))(body, payload)
    data = body.getvalue()
    return struct.pack(">i", len(data)) + data

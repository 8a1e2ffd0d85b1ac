"""The HTTP/JSON front end of the consume proxy: the seed's requests mapped onto a
:class:`~consume_proxy.ConsumeProxy`.

:class:`Frontend` turns one HTTP request into one :class:`trio_http.Response` and does no I/O
of its own (:mod:`trio_http` carries requests over sockets). Before each request it moves the
proxy to the clock's time, so leases start and expire on the same time scale as the reaper
that drives the proxy between requests.

Routes (request and response bodies are JSON objects)::

    POST /read         {"timeout_ms"}                       200 a record, 204 none in time
    POST /acknowledge  {"topic", "partition", "offset", "delivery"?}   200 {}, 202 forwarded
    POST /cancel       same                                             200 {}, 202 forwarded
    POST /reject       same                                             200 {}, 202 forwarded
    POST /renew        same                                 200 {"lease_deadline_ms"}
    GET  /status                                            200 partitions, pending, lag

A read is a long poll: it waits up to ``timeout_ms`` (0 to :data:`MAX_READ_TIMEOUT_MS`) for a
record and answers 204 if none came. A record reads as ``{"topic", "partition", "offset",
"key", "value", "delivery", "lease_deadline_ms"}``, key and value in base64 (null for none);
``delivery`` is the delivery count, to pass back so that an acknowledgement from a reader whose
lease ended is refused even after the record went to another reader.

An acknowledge, cancel or reject for a partition of the served topic that this server does not
serve (or is still catching up on) is forwarded to the partition's owner through the state log
(:meth:`ConsumeProxy.forward <consume_proxy.ConsumeProxy.forward>`) and answered 202 Accepted
``{"forwarded": true}``: the owner applies it when it reads it, and refuses it there if the
lease has ended by then (the record then comes back, as after any expired lease). A renew needs
the owner's answer (the new deadline): it is answered 404 by a server that does not serve the
partition, and 503 while it catches up on it.

Refusals change nothing and carry a one-line text reason: 400 for a body that is not a JSON
object with the fields above (wrong types, a negative offset, a timeout out of bounds, unknown
fields), 404 for an unknown route, a partition not served here or an offset not fetched yet,
405 (with ``Allow``) for a wrong method, 409 for a record in the wrong state (its lease ended,
never handed out, finished already), 413 for a body over :attr:`Frontend.max_body`, and 503
(with ``Retry-After``) for a read while the server serves no partition (it is joining its
group).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping

import trio

from consume_proxy.errors import (
    InvalidRecordStateError,
    OffsetOutOfRangeError,
    UnknownPartitionError,
)
from consume_proxy.proxy import ConsumeProxy
from consume_proxy.record_state import Record, RecordState
from consume_proxy.state_log import LogEntryKind
from replica.types import TopicPartition
from trio_http import Response

__all__ = ["DEFAULT_MAX_BODY", "MAX_READ_TIMEOUT_MS", "Frontend"]

MAX_READ_TIMEOUT_MS = 300_000
"""The longest a read may wait (5 minutes)."""
DEFAULT_MAX_BODY = 4096
"""Bytes a request body may have by default; more is answered 413."""

_RECORD_ROUTES = ("/acknowledge", "/cancel", "/reject", "/renew")
_ROUTES = {"/read": "POST", "/status": "GET", **dict.fromkeys(_RECORD_ROUTES, "POST")}
_RECORD_FIELDS = {"topic": str, "partition": int, "offset": int, "delivery": int}
_FORWARDED_AS = {
    "/acknowledge": LogEntryKind.ACKNOWLEDGE_REQUEST,
    "/cancel": LogEntryKind.CANCEL_REQUEST,
    "/reject": LogEntryKind.REJECT_REQUEST,
}
_OK = Response.json({})
_FORWARDED = Response.json({"forwarded": True}, 202)
_NOTHING = Response(204, b"", "")


class _Refused(Exception):
    """Answer with this response (raised by the checks below)."""

    def __init__(self, status: int, reason: str, *headers: tuple[str, str]) -> None:
        self.response = Response.error(status, reason, *headers)


class Frontend:
    """The HTTP API over ``proxy`` (see the module docstring).

    ``clock`` reads the time in the proxy's units (the reaper's clock); ``high_watermark``
    gives a served partition's high watermark as last seen from Kafka (None: not known yet),
    for the lag on the status page; ``partitions`` gives a topic's partition count if
    requests for its partitions not served here may be forwarded (None: they may not).
    """

    def __init__(
        self,
        proxy: ConsumeProxy,
        clock: Callable[[], int],
        *,
        high_watermark: Callable[[TopicPartition], int | None] = lambda tp: None,
        partitions: Callable[[str], int | None] = lambda topic: None,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.proxy = proxy
        self.clock = clock
        self.high_watermark = high_watermark
        self.partitions = partitions
        self.max_body = max_body

    def may_wait(self, method: str, target: str) -> bool:
        """Reads are long polls."""
        return target == "/read"

    async def handle(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        """Answer one request (``headers`` are not used)."""
        try:
            route = _ROUTES.get(target)
            if route is None:
                raise _Refused(404, f"no such route: {target}")
            if method != route:
                raise _Refused(405, f"{method} is not allowed on {target}", ("Allow", route))
            self.proxy.advance(self.clock())
            if target == "/status":
                return Response.json(self.status())
            fields = _json_object(body)
            if target == "/read":
                return await self._read(fields)
            return self._record_request(target, fields)
        except _Refused as refused:
            return refused.response

    async def _read(self, fields: dict[str, object]) -> Response:
        _check_fields(fields, {"timeout_ms": int}, required=("timeout_ms",))
        timeout = fields["timeout_ms"]
        assert isinstance(timeout, int)
        if not 0 <= timeout <= MAX_READ_TIMEOUT_MS:
            raise _Refused(400, f"timeout_ms must be 0 to {MAX_READ_TIMEOUT_MS}, got {timeout}")
        got: list[Record | None] = []
        done = trio.Event()

        def complete(record: Record | None) -> None:
            got.append(record)
            done.set()

        try:
            read = self.proxy.read(timeout, complete)
        except UnknownPartitionError as error:
            raise _Refused(503, str(error), ("Retry-After", "1")) from None
        try:
            await done.wait()
        finally:
            read.cancel()  # the client left (cancelled): take nothing for it; else a no-op
        record = got[0]
        if record is None:
            return _NOTHING
        return Response.json(
            {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "key": _base64(record.key),
                "value": _base64(record.value),
                "delivery": record.delivery_count,
                "lease_deadline_ms": record.lease_deadline,
            }
        )

    def _record_request(self, target: str, fields: dict[str, object]) -> Response:
        _check_fields(fields, _RECORD_FIELDS, required=("topic", "partition", "offset"))
        topic, partition, offset = fields["topic"], fields["partition"], fields["offset"]
        delivery = fields.get("delivery")
        assert isinstance(topic, str) and isinstance(partition, int) and isinstance(offset, int)
        assert delivery is None or isinstance(delivery, int)
        if not (
            0 <= partition < 2**31
            and 0 <= offset < 2**63
            and (delivery is None or 1 <= delivery < 2**31)
        ):
            raise _Refused(
                400, "partition and offset must be >= 0, delivery >= 1 (int32, int64, int32)"
            )
        tp = TopicPartition(topic, partition)
        proxy = self.proxy
        count = self.partitions(topic)
        forwards = target != "/renew" and count is not None and partition < count
        if tp in proxy.catching_up():  # its owner is this server, once it has read its log
            if forwards:
                return self._forward(target, tp, offset, delivery)
            if target == "/renew":
                raise _Refused(503, f"{tp} is catching up on its state log", ("Retry-After", "1"))
        try:
            if target == "/renew":
                return Response.json({"lease_deadline_ms": proxy.renew(tp, offset, delivery)})
            action = {
                "/acknowledge": proxy.acknowledge,
                "/cancel": proxy.cancel,
                "/reject": proxy.reject,
            }[target]
            action(tp, offset, delivery)
        except UnknownPartitionError as error:  # served elsewhere, or not a partition at all
            if forwards:
                return self._forward(target, tp, offset, delivery)
            raise _Refused(404, str(error)) from None
        except OffsetOutOfRangeError as error:
            raise _Refused(404, str(error)) from None
        except InvalidRecordStateError as error:
            raise _Refused(409, str(error)) from None
        return _OK

    def _forward(
        self, target: str, tp: TopicPartition, offset: int, delivery: int | None
    ) -> Response:
        """Forward the request to ``tp``'s owner through the state log."""
        self.proxy.forward(_FORWARDED_AS[target], tp, offset, delivery)
        return _FORWARDED

    def status(self) -> dict[str, object]:
        """The status page: each served partition's committed position (``start_offset``),
        fetched end, high watermark, lag (high watermark - committed position), whether it
        is catching up, and record counts; the total pending; this server's writer id and
        what it did with the shared log (:class:`~consume_proxy.ProxyCounts`)."""
        partitions = []
        total = 0
        catching_up = set(self.proxy.catching_up())
        for tp in self.proxy.served:
            share = self.proxy.partition(tp)
            high = self.high_watermark(tp)
            pending = share.count(RecordState.PENDING)
            total += pending
            partitions.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "start_offset": share.start_offset,
                    "end_offset": share.end_offset,
                    "high_watermark": high,
                    "lag": None if high is None else max(high - share.start_offset, 0),
                    "catching_up": tp in catching_up,
                    "available": share.count(RecordState.AVAILABLE),
                    "pending": pending,
                    "acknowledged": share.count(RecordState.ACKNOWLEDGED),
                }
            )
        counts = self.proxy.counts
        return {
            "partitions": partitions,
            "pending": total,
            "writer": self.proxy.log.writer,
            "forwarded": counts.forwarded,
            "applied": counts.applied,
            "refused": counts.refused,
            "fenced": counts.fenced,
        }


def _json_object(body: bytes) -> dict[str, object]:
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise _Refused(400, "the body must be a JSON object") from None
    if not isinstance(value, dict):
        raise _Refused(400, "the body must be a JSON object")
    return value


def _check_fields(
    fields: dict[str, object], types: Mapping[str, type], *, required: tuple[str, ...]
) -> None:
    """Refuse a missing or unknown field, or a value of the wrong JSON type (a bool is not an
    integer here)."""
    for name in required:
        if name not in fields:
            raise _Refused(400, f"the field {name!r} is required")
    for name, value in fields.items():
        kind = types.get(name)
        if kind is None:
            raise _Refused(400, f"unknown field {name!r} (allowed: {', '.join(types)})")
        if type(value) is not kind:
            raise _Refused(400, f"{name} must be a JSON {kind.__name__}, got {value!r:.40}")


def _base64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")

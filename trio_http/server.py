"""The HTTP/1.1 server: h11's state machine fed with bytes from trio sockets.

h11 is the protocol with no I/O; this module reads bytes from a trio socket into it and hands
each complete request to a :class:`Handler`, which answers with a :class:`Response`. A
connection serves requests one after another (keep-alive) until the client closes it or h11
says it must close, or it stays idle (or takes to send a request) longer than
:data:`IDLE_TIMEOUT_S`. A body past the handler's ``max_body`` is answered 413 at once (from
its Content-Length if it declares one, else as soon as the bytes read pass it), and the
connection is closed. A request h11 cannot parse gets 400 and the connection is closed. A
handler that raises gets 500 (logged), and the connection carries on.

Long polls: while a request the handler says ``may_wait`` is handled, the connection is
watched, and if the client closes it the handling is cancelled, so a long poll never takes
something for a client that has gone. Other requests are handled without the watch (it costs
a task per request).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import partial
from http import HTTPStatus
from typing import Protocol

import attrs
import h11
import trio

__all__ = ["IDLE_TIMEOUT_S", "Handler", "Response", "serve_handler"]

_logger = logging.getLogger("trio_http")
_READ_SIZE = 65536
IDLE_TIMEOUT_S = 60.0
"""Seconds a connection may take to send a whole request (head and body), or stay idle
between requests, before the server closes it."""


@attrs.frozen
class Response:
    """An HTTP response: status, body bytes, and extra headers (name, value)."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, value: object, status: int = 200) -> Response:
        return cls(status, json.dumps(value).encode())

    @classmethod
    def error(cls, status: int, reason: str, *headers: tuple[str, str]) -> Response:
        """A one-line text reason."""
        line = " ".join(reason.splitlines())
        return cls(status, f"{line}\n".encode(), "text/plain; charset=utf-8", headers)


class Handler(Protocol):
    """What :func:`serve_handler` serves: answers one request at a time, with no I/O."""

    max_body: int
    """Bytes a request body may have; more is answered 413."""

    async def handle(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        """Answer one request; ``headers`` are keyed by lower-case name."""
        ...

    def may_wait(self, method: str, target: str) -> bool:
        """True if answering may wait (a long poll): the connection is then watched and the
        handling cancelled if the client leaves."""
        ...


async def serve_handler(
    handler: Handler,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept connections for ``handler`` until cancelled; report the bound port when
    listening (``port=0`` picks a free one)."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(partial(_serve_connection, handler), listeners)


async def _serve_connection(handler: Handler, stream: trio.SocketStream) -> None:
    connection = h11.Connection(h11.SERVER)
    try:
        while True:
            request = None
            with trio.move_on_after(IDLE_TIMEOUT_S):
                request = await _read_request(connection, stream, handler.max_body)
            if not request:
                return  # closed by the peer, or idle too long
            head = request[0]
            if handler.may_wait(head.method.decode("ascii"), head.target.decode("latin-1")):
                answered = await _answer_while_connected(handler, connection, stream, *request)
            else:
                answered = await _answer(handler, *request)
            if answered is None:
                return
            response, complete = answered
            await _send(connection, stream, response)
            if not complete or connection.our_state is not h11.DONE:
                return
            connection.start_next_cycle()
    except h11.RemoteProtocolError as error:
        if connection.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            await _send(connection, stream, Response.error(400, f"bad request: {error}"))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await stream.aclose()


async def _read_request(
    connection: h11.Connection, stream: trio.SocketStream, max_body: int
) -> tuple[h11.Request, bytes | Response] | None:
    """The next request and its body, or the response refusing the body; None when the peer
    closed the connection."""
    event = await _next_event(connection, stream)
    if not isinstance(event, h11.Request):
        return None  # ConnectionClosed
    declared = dict(event.headers).get(b"content-length")
    too_large = Response.error(413, f"body exceeds {max_body} bytes")
    if declared is not None and int(declared) > max_body:
        return event, too_large
    body = bytearray()
    while True:
        part = await _next_event(connection, stream)
        if isinstance(part, h11.Data):
            body += part.data
            if len(body) > max_body:
                return event, too_large
        elif isinstance(part, h11.EndOfMessage):
            return event, bytes(body)
        else:
            return event, Response.error(400, "the request ended early")


async def _answer(
    handler: Handler, request: h11.Request, body: bytes | Response
) -> tuple[Response, bool]:
    """Handle the request; False with the response if the connection must close (its body
    was refused)."""
    if isinstance(body, Response):
        return body, False
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in request.headers}
    method, target = request.method.decode("ascii"), request.target.decode("latin-1")
    try:
        response = await handler.handle(method, target, headers, body)
    except Exception:
        _logger.exception("request %s %s failed", method, target)
        response = Response.error(500, "internal error")
    return response, True


async def _answer_while_connected(
    handler: Handler,
    connection: h11.Connection,
    stream: trio.SocketStream,
    request: h11.Request,
    body: bytes | Response,
) -> tuple[Response, bool] | None:
    """:func:`_answer`, abandoned (None) if the client closes the connection first."""
    answered: list[tuple[Response, bool]] = []
    async with trio.open_nursery() as nursery:

        async def answer() -> None:
            answered.append(await _answer(handler, request, body))
            nursery.cancel_scope.cancel()

        async def watch() -> None:
            data = await stream.receive_some(_READ_SIZE)
            connection.receive_data(data)  # a pipelined request waits in h11's buffer
            if not data:
                nursery.cancel_scope.cancel()
            else:
                await trio.sleep_forever()

        nursery.start_soon(answer)
        nursery.start_soon(watch)
    return answered[0] if answered else None


async def _next_event(connection: h11.Connection, stream: trio.SocketStream) -> object:
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        connection.receive_data(await stream.receive_some(_READ_SIZE))


async def _send(connection: h11.Connection, stream: trio.SocketStream, response: Response) -> None:
    headers = [("content-length", str(len(response.body))), *response.headers]
    if response.content_type:
        headers.append(("content-type", response.content_type))
    if connection.their_state is not h11.DONE:
        headers.append(("connection", "close"))
    data = connection.send(
        h11.Response(
            status_code=response.status,
            headers=headers,
            reason=HTTPStatus(response.status).phrase.encode(),
        )
    )
    assert data is not None
    if response.body:
        data += connection.send(h11.Data(data=response.body)) or b""
    data += connection.send(h11.EndOfMessage()) or b""
    await stream.send_all(data)

"""The real-time driver: an HTTP/1.1 server on trio and h11, and the engine's expiry reaper.

h11 is the protocol as a state machine (no I/O); this module feeds it bytes from trio
sockets and hands each complete request to :meth:`msgqueue.http.Frontend.handle`. A
connection serves requests one after another (keep-alive) until the client closes it or
h11 says it must close, or it stays idle (or takes to send a request) longer than
:data:`IDLE_TIMEOUT_S`; a body past the limit is answered 413 at once (from its
Content-Length if it declares one, else as soon as the bytes read pass it), and the connection
is closed. A request h11 cannot parse gets 400 and the connection is closed. While a request
with a ``wait`` is handled, the connection is watched: if the client closes it, the long
poll is cancelled, so a message is never taken for a client that has gone.

Time: :func:`serve` anchors a :func:`purgatory.trio_reaper.trio_clock` at the wall clock's
epoch milliseconds, so deadlines stored in an SQLite file mean the same after a restart, and
a :class:`~purgatory.trio_reaper.TrioReaper` sleeps until the engine's next deadline (a ttl,
a hide or a wait), never polling. Wall-clock time is read once, at start-up, here and nowhere
below.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from functools import partial
from http import HTTPStatus

import h11
import trio

from msgqueue.backend import Backend
from msgqueue.http import DEFAULT_MAX_BODY, Frontend, Response
from msgqueue.message_queue import MessageQueue
from purgatory.trio_reaper import open_trio_reaper, trio_clock

__all__ = ["serve", "serve_frontend"]

_logger = logging.getLogger("msgqueue.server")
_READ_SIZE = 65536
IDLE_TIMEOUT_S = 60.0
"""Seconds a connection may take to send a whole request (head and body), or stay idle
between requests, before the server closes it."""


async def serve(
    backend: Backend,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    tokens: Mapping[str, str] | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``backend`` over HTTP until cancelled; report the bound port when listening
    (``port=0`` picks a free one). The engine's reaper runs alongside."""
    clock = trio_clock(start=time.time_ns() // 1_000_000)
    engine = MessageQueue(backend, clock=clock, start=clock())
    frontend = Frontend(engine, tokens=tokens, max_body=max_body)
    async with open_trio_reaper(engine.purgatory, clock), trio.open_nursery() as nursery:
        bound = await nursery.start(partial(serve_frontend, frontend, host=host, port=port))
        task_status.started(bound)


async def serve_frontend(
    frontend: Frontend,
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept connections for ``frontend`` until cancelled (something else must drive its
    engine's clock); report the bound port."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(partial(_serve_connection, frontend), listeners)


async def _serve_connection(frontend: Frontend, stream: trio.SocketStream) -> None:
    connection = h11.Connection(h11.SERVER)
    try:
        while True:
            request = None
            with trio.move_on_after(IDLE_TIMEOUT_S):
                request = await _read_request(connection, stream, frontend.max_body)
            if not request:
                return  # closed by the peer, or idle too long
            if b"wait=" in request[0].target:  # may wait long: give up if the client leaves
                answered = await _answer_while_connected(frontend, connection, stream, *request)
            else:
                answered = await _answer(frontend, *request)
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
    frontend: Frontend, request: h11.Request, body: bytes | Response
) -> tuple[Response, bool]:
    """Handle the request; False with the response if the connection must close (its body
    was refused)."""
    if isinstance(body, Response):
        return body, False
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in request.headers}
    method, target = request.method.decode("ascii"), request.target.decode("latin-1")
    try:
        response = await frontend.handle(method, target, headers, body)
    except Exception:
        _logger.exception("request %s %s failed", method, target)
        response = Response.error(500, "internal error")
    return response, True


async def _answer_while_connected(
    frontend: Frontend,
    connection: h11.Connection,
    stream: trio.SocketStream,
    request: h11.Request,
    body: bytes | Response,
) -> tuple[Response, bool] | None:
    """:func:`_answer`, abandoned (None) if the client closes the connection first: its long
    poll is cancelled before it takes a message, so no message goes to a client that left."""
    answered: list[tuple[Response, bool]] = []
    async with trio.open_nursery() as nursery:

        async def answer() -> None:
            answered.append(await _answer(frontend, request, body))
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

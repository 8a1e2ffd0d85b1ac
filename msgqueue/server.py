"""The real-time driver: the HTTP/1.1 server and the engine's expiry reaper.

:func:`trio_http.serve_handler` (h11 on trio) carries requests to
:meth:`msgqueue.http.Frontend.handle`: keep-alive, body limits, idle connections closed after
:data:`trio_http.IDLE_TIMEOUT_S`. A request with a ``wait`` is a long poll
(:meth:`~msgqueue.http.Frontend.may_wait`): while it is handled its connection is watched,
and if the client closes it the poll is cancelled, so a message is never taken for a client
that has gone.

Time: :func:`serve` anchors a :func:`purgatory.trio_reaper.trio_clock` at the wall clock's
epoch milliseconds, so deadlines stored in an SQLite file mean the same after a restart, and
a :class:`~purgatory.trio_reaper.TrioReaper` sleeps until the engine's next deadline (a ttl,
a hide or a wait), never polling. Wall-clock time is read once, at start-up, here and nowhere
below.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial

import trio

from msgqueue.backend import Backend
from msgqueue.http import DEFAULT_MAX_BODY, Frontend
from msgqueue.message_queue import MessageQueue
from purgatory.trio_reaper import open_trio_reaper, trio_clock
from trio_http import serve_handler

__all__ = ["serve"]


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
        bound = await nursery.start(partial(serve_handler, frontend, host=host, port=port))
        task_status.started(bound)

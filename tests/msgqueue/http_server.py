"""A server on a loopback port for the duration of an ``async with``, and an httpx client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial

import httpx
import trio

from msgqueue import Backend
from msgqueue.server import serve


@asynccontextmanager
async def running(
    backend: Backend, *, tokens: Mapping[str, str] | None = None, max_body: int = 65536
) -> AsyncIterator[httpx.AsyncClient]:
    """Serve ``backend`` on 127.0.0.1 (a free port); yield a client set up for it."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            partial(serve, backend, host="127.0.0.1", port=0, tokens=tokens, max_body=max_body)
        )
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            yield http
        nursery.cancel_scope.cancel()

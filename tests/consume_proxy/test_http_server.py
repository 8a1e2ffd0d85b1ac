"""The front end served over loopback by trio_http, with the proxy's reaper: a long poll
ends empty at its timeout, and a reader that disconnects while its read waits takes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import httpx
import trio
import trio.testing

from consume_proxy import ConsumeProxy, RecordState
from consume_proxy.http import Frontend
from purgatory.trio_reaper import open_trio_reaper, trio_clock
from replica.types import TopicPartition
from trio_http import serve_handler

TP = TopicPartition("jobs", 0)


@asynccontextmanager
async def serving() -> AsyncIterator[tuple[ConsumeProxy, int]]:
    clock = trio_clock()
    proxy = ConsumeProxy(lease_duration=1_000)
    proxy.assign(TP, 0)
    async with open_trio_reaper(proxy.purgatory, clock), trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve_handler, Frontend(proxy, clock), port=0))
        yield proxy, port
        nursery.cancel_scope.cancel()


async def test_a_long_poll_ends_empty_at_its_timeout() -> None:
    async with serving() as (_, port), httpx.AsyncClient() as http:
        start = trio.current_time()
        response = await http.post(f"http://127.0.0.1:{port}/read", json={"timeout_ms": 200})
        assert response.status_code == 204
        assert trio.current_time() - start >= 0.2


async def test_a_reader_that_leaves_takes_nothing() -> None:
    async with serving() as (proxy, port):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        body = b'{"timeout_ms": 60000}'
        await stream.send_all(
            b"POST /read HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        await trio.sleep(0.1)
        assert proxy.purgatory.num_delayed == 1  # the read waits
        await stream.aclose()
        with trio.fail_after(5):
            while proxy.purgatory.num_delayed:
                await trio.sleep(0.01)
        proxy.append(TP, 0, None, b"x")
        assert proxy.state(TP, 0) is RecordState.AVAILABLE

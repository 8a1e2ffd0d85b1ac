"""Reads + acknowledgements per second through one proxy server.

``n`` records wait in one partition; a reader takes one (a read with timeout 0) and
acknowledges it, ``n`` times, and the proxy's commit position is taken after each
acknowledgement (what the feed does after each batch). Three paths: ``core`` calls
:class:`~consume_proxy.ConsumeProxy` directly; ``frontend`` passes JSON requests to
:meth:`consume_proxy.http.Frontend.handle` (parsing and validation, no sockets); ``http``
sends them with httpx over a loopback socket to :func:`trio_http.serve_handler` in the same
trio loop, so the process CPU time counts both ends.
"""

from __future__ import annotations

import json
import time
from functools import partial

import attrs
import httpx
import trio

from consume_proxy.http import Frontend
from consume_proxy.proxy import ConsumeProxy
from consume_proxy.record_state import Record
from replica.types import TopicPartition
from trio_http import serve_handler

__all__ = ["PATHS", "Rate", "run_throughput"]

PATHS = ("core", "frontend", "http")
_TP = TopicPartition("bench", 0)
_READ = json.dumps({"timeout_ms": 0}).encode()


@attrs.frozen
class Rate:
    """Reads + acknowledgements on one path: how many, the process CPU and wall seconds they
    took, and the rates per second of each."""

    path: str
    records: int
    cpu_seconds: float
    wall_seconds: float
    per_cpu_second: float = attrs.field(init=False)
    per_wall_second: float = attrs.field(init=False)

    @per_cpu_second.default
    def _per_cpu(self) -> float:
        return self.records / self.cpu_seconds if self.cpu_seconds else float("inf")

    @per_wall_second.default
    def _per_wall(self) -> float:
        return self.records / self.wall_seconds if self.wall_seconds else float("inf")


def run_throughput(n: int = 5000) -> list[Rate]:
    """Measure each path with ``n`` records."""
    return [trio.run(_run_one, path, n) for path in PATHS]


def _filled(n: int) -> ConsumeProxy:
    proxy = ConsumeProxy()
    proxy.assign(_TP, 0)
    for offset in range(n):
        proxy.append(_TP, offset, None, b"x" * 100)
    return proxy


async def _run_one(path: str, n: int) -> Rate:
    proxy = _filled(n)
    frontend = Frontend(proxy, proxy.now)
    cpu, wall = time.process_time(), time.perf_counter()
    if path == "core":
        got: list[Record | None] = []
        for _ in range(n):
            proxy.read(0, got.append)
            record = got.pop()
            assert record is not None
            proxy.acknowledge(_TP, record.offset, record.delivery_count)
            proxy.commit()
    elif path == "frontend":
        for _ in range(n):
            response = await frontend.handle("POST", "/read", {}, _READ)
            await frontend.handle("POST", "/acknowledge", {}, _ack_body(response.body))
            proxy.commit()
    else:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(partial(serve_handler, frontend, port=0))
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                for _ in range(n):
                    answer = await http.post("/read", content=_READ)
                    await http.post("/acknowledge", content=_ack_body(answer.content))
                    proxy.commit()
            nursery.cancel_scope.cancel()
    rate = Rate(path, n, time.process_time() - cpu, time.perf_counter() - wall)
    assert proxy.partition(_TP).start_offset == n, "every record was read and acknowledged"
    return rate


def _ack_body(read: bytes) -> bytes:
    record = json.loads(read)
    return json.dumps({k: record[k] for k in ("topic", "partition", "offset", "delivery")}).encode()

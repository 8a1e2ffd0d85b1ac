"""Throughput: insert, get-and-hide and delete, in process and over HTTP, on each back end.

One client sends ``n`` requests of each kind one after another, through the same
:class:`~msgqueue.client.Client` methods on both transports: ``PUT`` a message, ``POST
?limit=1&hide=60`` (a reliable worker's take), ``DELETE`` the id it took. In process the
client calls the front end directly; over HTTP it goes through httpx and a loopback socket to
the h11 server running in the same trio loop, so the process CPU time counts both ends.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import attrs
import httpx
import trio

from msgqueue.backend import Backend, MemoryBackend, SqliteBackend
from msgqueue.client import Client
from msgqueue.http import Frontend
from msgqueue.message_queue import MessageQueue
from msgqueue.server import serve

__all__ = ["BACKENDS", "OPERATIONS", "TRANSPORTS", "Rate", "run_throughput"]

BACKENDS = ("memory", "sqlite")
TRANSPORTS = ("in-process", "http")
OPERATIONS = ("insert", "get-and-hide", "delete")


@attrs.frozen
class Rate:
    """Messages per second of one operation on one back end and transport."""

    backend: str
    transport: str
    operation: str
    messages: int
    cpu_seconds: float
    wall_seconds: float

    @property
    def per_cpu_second(self) -> float:
        return self.messages / self.cpu_seconds if self.cpu_seconds else float("inf")

    @property
    def per_wall_second(self) -> float:
        return self.messages / self.wall_seconds if self.wall_seconds else float("inf")


async def _measure(client: Client, n: int, record: Callable[[str, float, float], None]) -> None:
    ids = [f"m{number:07d}" for number in range(n)]

    async def each(step: Callable[[str], Awaitable[object]]) -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        for id in ids:
            await step(id)
        return time.process_time() - cpu, time.perf_counter() - wall

    async def insert(id: str) -> object:
        return await client.create_message("bench", "q", id, "x" * 100)

    taken: list[object] = []

    async def take(_: str) -> object:
        got = await client.update_messages("bench", "q", limit=1, hide=60, detail="id")
        taken.extend(got)
        return got

    async def delete(id: str) -> object:
        return await client.delete_message("bench", "q", id)

    record("insert", *await each(insert))
    record("get-and-hide", *await each(take))
    assert len(taken) == n, f"took {len(taken)} of {n} messages"
    record("delete", *await each(delete))


def _backend(kind: str, directory: Path) -> Backend:
    return MemoryBackend() if kind == "memory" else SqliteBackend(directory.with_suffix(".db"))


def run_throughput(n: int = 2000, backends: tuple[str, ...] = BACKENDS) -> list[Rate]:
    """Measure every operation for each back end and transport, ``n`` messages each."""
    rates: list[Rate] = []
    with tempfile.TemporaryDirectory() as directory:
        for kind in backends:
            for transport in TRANSPORTS:
                backend = _backend(kind, Path(directory) / transport)
                record = partial(_record, rates, kind, transport, n)
                trio.run(_run_one, backend, transport, n, record)
                backend.close()
    return rates


def _record(
    rates: list[Rate], kind: str, transport: str, n: int, operation: str, cpu: float, wall: float
) -> None:
    rates.append(Rate(kind, transport, operation, n, cpu, wall))


async def _run_one(
    backend: Backend, transport: str, n: int, record: Callable[[str, float, float], None]
) -> None:
    if transport == "in-process":
        await _measure(Client.in_process(Frontend(MessageQueue(backend))), n, record)
        return
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve, backend, host="127.0.0.1", port=0))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            await _measure(Client.over_http(http), n, record)
        nursery.cancel_scope.cancel()

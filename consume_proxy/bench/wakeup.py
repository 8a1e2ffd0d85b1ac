"""Wake-up latency: how long after a record arrives a reader has it, long poll vs polling.

One proxy server (HTTP over loopback, client and server in one trio loop, the proxy's reaper
running) and one reader. ``n`` times, a random pause (0 to twice the poller's interval,
seeded) after the reader got the previous record, a record is appended to the proxy, as the
Kafka feed appends a fetched record; the latency is from the append to the reader holding the
record, by trio's clock. The ``long poll`` reader keeps a
read waiting (timeout 10 s) that the record completes; the ``polling`` baseline sends reads
with timeout 0 and sleeps ``interval_ms`` between empty answers, as a reader without long
polls must. Both run in the same process, one after the other, with the same pauses; the
requests each sent are counted.
"""

from __future__ import annotations

import random
import statistics
from functools import partial

import attrs
import httpx
import trio

from consume_proxy.http import Frontend
from consume_proxy.proxy import ConsumeProxy
from purgatory.trio_reaper import open_trio_reaper, trio_clock
from replica.types import TopicPartition
from trio_http import serve_handler

__all__ = ["READERS", "Latency", "run_wakeup"]

READERS = ("long poll", "polling")
_TP = TopicPartition("bench", 0)


@attrs.frozen
class Latency:
    """Append-to-reader latency of one reader kind, in milliseconds, and its requests."""

    reader: str
    records: int
    requests: int
    median_ms: float
    p99_ms: float
    max_ms: float


def run_wakeup(n: int = 200, *, interval_ms: float = 10.0, seed: int = 1) -> list[Latency]:
    """Measure both readers with ``n`` records each."""
    return [trio.run(_run_one, reader, n, interval_ms, seed) for reader in READERS]


async def _run_one(reader: str, n: int, interval_ms: float, seed: int) -> Latency:
    clock = trio_clock()
    proxy = ConsumeProxy()
    proxy.assign(_TP, 0)
    frontend = Frontend(proxy, clock)
    pauses = random.Random(seed)
    latencies: list[float] = []
    requests = 0
    appended_at: list[float] = []
    async with open_trio_reaper(proxy.purgatory, clock), trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve_handler, frontend, port=0))
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:

            async def read() -> None:
                nonlocal requests
                timeout = 10_000 if reader == "long poll" else 0
                while len(latencies) < n:
                    requests += 1
                    response = await http.post("/read", json={"timeout_ms": timeout})
                    if response.status_code == 200:
                        latencies.append((trio.current_time() - appended_at[-1]) * 1000)
                        record = response.json()
                        body = {k: record[k] for k in ("topic", "partition", "offset")}
                        await http.post("/acknowledge", json=body)
                    elif reader == "polling":
                        await trio.sleep(interval_ms / 1000)

            async def produce() -> None:
                for offset in range(n):
                    while len(latencies) < offset:  # one record at a time
                        await trio.sleep(0.001)
                    await trio.sleep(pauses.uniform(0, 2 * interval_ms / 1000))
                    proxy.advance(clock())
                    appended_at.append(trio.current_time())
                    proxy.append(_TP, offset, None, b"x")

            async with trio.open_nursery() as clients:
                clients.start_soon(read)
                clients.start_soon(produce)
        nursery.cancel_scope.cancel()
    ordered = sorted(latencies)
    return Latency(
        reader,
        n,
        requests,
        statistics.median(ordered),
        ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        ordered[-1],
    )

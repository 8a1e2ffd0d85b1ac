"""End to end on loopback: the project's wire-protocol Kafka (three brokers), three proxy
servers (``python -m consume_proxy serve`` processes) in one consumer group, many HTTP
clients reading and acknowledging (some forget to acknowledge, some cancel), and one server
killed with SIGKILL halfway: its partitions move to the others, pending records come back
after their leases, nothing is lost, and the records acknowledged twice are bounded by what
the killed server held uncommitted."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from base64 import b64decode
from collections import Counter
from collections.abc import Callable, Iterator

import httpx
import pytest
import trio
from confluent_kafka import Producer

from apis.config import KafkaConfig
from coordinator.config import GroupConfig
from kafka_server import ServerThread
from kafka_server.server import TopicSpec

TOPIC = "jobs"
PARTITIONS = 6
RECORDS = 240
LEASE_MS = 1000


def start_proxy(bootstrap: str) -> tuple[subprocess.Popen[str], str]:
    command = [
        sys.executable,
        "-m",
        "consume_proxy",
        "serve",
        *("--bootstrap", bootstrap, "--topic", TOPIC, "--group", "proxies", "--port", "0"),
        *("--lease-ms", str(LEASE_MS), "--delivery-count-limit", "1000"),
        *("-X", "session.timeout.ms=1500", "-X", "heartbeat.interval.ms=300"),
        *("--log-level", "WARNING"),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("consume_proxy: serving jobs for group proxies on http://"), line
    return process, line.split()[-1]


@pytest.fixture
def cluster() -> Iterator[ServerThread]:
    group = GroupConfig(group_min_session_timeout_ms=500, group_initial_rebalance_delay_ms=0)
    with ServerThread(
        brokers=3,
        topics=[TopicSpec(TOPIC, PARTITIONS, 3)],
        config=KafkaConfig(group=group),
    ) as server:
        yield server


def status(url: str) -> dict[str, object]:
    result: dict[str, object] = httpx.get(f"{url}/status", timeout=5).json()
    return result


def served(url: str) -> set[int]:
    partitions = status(url)["partitions"]
    assert isinstance(partitions, list)
    return {entry["partition"] for entry in partitions}


def wait_until(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the group to settle"
        time.sleep(0.1)


def test_servers_share_a_topic_and_survive_a_kill(cluster: ServerThread) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for index in range(RECORDS):
        producer.produce(TOPIC, b"record-%d" % index, partition=index % PARTITIONS)
    assert producer.flush(10) == 0
    proxies = [start_proxy(cluster.bootstrap_servers) for _ in range(3)]
    urls = [url for _, url in proxies]
    try:

        def settled() -> bool:
            each = [served(url) for url in urls]
            return all(each) and sorted(p for s in each for p in s) == list(range(PARTITIONS))

        wait_until(settled)
        victim_process, victim = proxies[0]
        outcome = trio.run(run_clients, urls, victim, victim_process)
        # Every record was acknowledged at least once: nothing lost.
        assert set(outcome.acked) == {b"record-%d" % i for i in range(RECORDS)}
        # Records that came back after a lease (readers that forgot to acknowledge).
        assert outcome.redelivered > 0
        duplicates = sum(count - 1 for count in outcome.acked.values())
        assert duplicates <= outcome.bound, (duplicates, outcome.bound)
        # The survivors took the victim's partitions and commit everything.
        survivors = urls[1:]
        wait_until(
            lambda: sorted(p for url in survivors for p in served(url)) == [0, 1, 2, 3, 4, 5]
        )

        def all_committed() -> bool:
            entries = [e for url in survivors for e in status(url)["partitions"]]  # type: ignore[attr-defined]
            return all(entry["lag"] == 0 for entry in entries)

        wait_until(all_committed, 10)
    finally:
        for process, _ in proxies:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        try:
            for process, _ in proxies[1:]:
                assert process.wait(20) == 0  # Ctrl-C: commits, leaves the group, exits 0
        finally:
            for process, _ in proxies:
                if process.poll() is None:
                    process.kill()


class Outcome:
    def __init__(self) -> None:
        self.acked: Counter[bytes] = Counter()
        self.redelivered = 0
        self.bound = 0  # what the victim held uncommitted when it was killed, plus late acks


async def run_clients(
    urls: list[str], victim: str, victim_process: subprocess.Popen[str]
) -> Outcome:
    outcome = Outcome()
    alive = list(urls)
    killed = trio.Event()
    snapshot_taken = trio.Event()
    done = trio.Event()

    async def client(index: int, http: httpx.AsyncClient) -> None:
        chooser = random.Random(index)
        kind = index % 3  # 0 acknowledges everything, 1 forgets 30%, 2 cancels 30%
        turn = index
        while not done.is_set():
            url = alive[turn % len(alive)]
            turn += 1
            try:
                read = await http.post(f"{url}/read", json={"timeout_ms": 300})
                if read.status_code != 200:
                    continue
                record = read.json()
                if record["delivery"] > 1:
                    outcome.redelivered += 1
                fate = chooser.random()
                if kind == 1 and fate < 0.3:
                    continue  # forgotten: comes back after its lease
                body = {k: record[k] for k in ("topic", "partition", "offset", "delivery")}
                route = "cancel" if kind == 2 and fate < 0.3 else "acknowledge"
                answer = await http.post(f"{url}/{route}", json=body)
                if route == "acknowledge" and answer.status_code == 200:
                    outcome.acked[b64decode(record["value"])] += 1
                    if url == victim and snapshot_taken.is_set() and not killed.is_set():
                        outcome.bound += 1
            except httpx.TransportError:
                if url in alive and url == victim and killed.is_set():
                    alive.remove(url)

    async def killer(http: httpx.AsyncClient) -> None:
        while len(outcome.acked) < RECORDS // 3:
            await trio.sleep(0.01)
        held = (await http.get(f"{victim}/status")).json()["partitions"]
        snapshot_taken.set()
        victim_process.send_signal(signal.SIGKILL)
        killed.set()
        outcome.bound += sum(entry["end_offset"] - entry["start_offset"] for entry in held)
        if victim in alive:
            alive.remove(victim)

    async def monitor(http: httpx.AsyncClient) -> None:
        """Done once every record is acknowledged and the survivors committed everything (a
        record acknowledged at the victim and redelivered must be acknowledged again)."""
        while True:
            await trio.sleep(0.2)
            if not killed.is_set() or len(outcome.acked) < RECORDS:
                continue
            entries = [
                e for url in alive for e in (await http.get(f"{url}/status")).json()["partitions"]
            ]
            if len(entries) == PARTITIONS and all(entry["lag"] == 0 for entry in entries):
                done.set()
                return

    async with httpx.AsyncClient(timeout=10) as http:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(killer, http)
                nursery.start_soon(monitor, http)
                for index in range(12):
                    nursery.start_soon(client, index, http)
    return outcome

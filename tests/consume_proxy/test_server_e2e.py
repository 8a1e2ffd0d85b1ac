"""End to end on loopback: the project's wire-protocol Kafka (three brokers), three proxy
servers (``python -m consume_proxy serve`` processes) in one consumer group sharing a state log
topic, many HTTP clients reading and acknowledging at any server (some forget to acknowledge,
some cancel), and one server killed with SIGKILL halfway.

What it shows: the killed server's partitions move to the others, which catch up from the
state log (checked in the log itself: they claim the partitions, continue the delivery counts
the log holds, and never hand out again a record the log says was acknowledged); pending
records come back after their leases; acknowledgements sent to a server that does not own the
partition are forwarded to the owner; no partition ever has more records pending than its lock
bound; nothing is lost; and the records acknowledged twice are bounded by the deliveries that
ended unacknowledged (expired leases, cancels) plus what the state log shows the killed server
had in flight: acknowledgements and hand-outs it answered whose entries never reached the
log."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from base64 import b64decode
from collections import Counter
from collections.abc import Callable, Iterator

import attrs
import httpx
import pytest
import trio
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaPartition

from apis.config import KafkaConfig
from consume_proxy import REQUESTS, LogEntry, LogEntryKind, decode_entry
from consume_proxy.feed import DEFAULT_LOG_TOPIC
from coordinator.config import GroupConfig
from kafka_server import ServerThread
from kafka_server.server import TopicSpec

TOPIC = "jobs"
PARTITIONS = 6
RECORDS = 240
LEASE_MS = 1000
LOCKS = 8
K = LogEntryKind

Key = tuple[int, int]  # partition, offset


def start_proxy(bootstrap: str) -> tuple[subprocess.Popen[str], str]:
    command = [
        sys.executable,
        *("-X", "faulthandler"),  # a crash prints every thread's Python stack
        "-m",
        "consume_proxy",
        "serve",
        *("--bootstrap", bootstrap, "--topic", TOPIC, "--group", "proxies", "--port", "0"),
        *("--lease-ms", str(LEASE_MS), "--delivery-count-limit", "1000"),
        *("--max-record-locks", str(LOCKS)),
        *("-X", "consumer.session.timeout.ms=1500", "-X", "consumer.heartbeat.interval.ms=300"),
        *("--log-level", "WARNING"),
    ]
    # glibc reports a heap error on the terminal, which CI has not: on stderr instead.
    env = {**os.environ, "LIBC_FATAL_STDERR_": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("consume_proxy: serving jobs for group proxies on http://"), line
    return process, line.split()[-1]


@pytest.fixture
def cluster() -> Iterator[ServerThread]:
    group = GroupConfig(group_min_session_timeout_ms=500, group_initial_rebalance_delay_ms=0)
    with ServerThread(
        brokers=3,
        topics=[TopicSpec(TOPIC, PARTITIONS, 3), TopicSpec(DEFAULT_LOG_TOPIC, PARTITIONS, 3)],
        config=KafkaConfig(group=group),
    ) as server:
        yield server


def status(url: str) -> dict[str, object]:
    result: dict[str, object] = httpx.get(f"{url}/status", timeout=5).json()
    return result


def serving(url: str) -> set[int]:
    partitions = status(url)["partitions"]
    assert isinstance(partitions, list)
    return {entry["partition"] for entry in partitions if not entry["catching_up"]}


def wait_until(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the group to settle"
        time.sleep(0.1)


def read_log(bootstrap: str) -> dict[int, list[LogEntry]]:
    """Every entry of the state log, per partition, in log order."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "inspector"})
    reader.assign([KafkaPartition(DEFAULT_LOG_TOPIC, p, 0) for p in range(PARTITIONS)])
    log: dict[int, list[LogEntry]] = {p: [] for p in range(PARTITIONS)}
    while (message := reader.poll(1.0)) is not None:
        partition, offset = message.partition(), message.offset()
        assert partition is not None and offset is not None
        log[partition].append(decode_entry(message.key(), message.value(), offset))
    reader.close()
    return log


def test_servers_share_a_topic_and_survive_a_kill(cluster: ServerThread) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for index in range(RECORDS):
        producer.produce(TOPIC, b"record-%d" % index, partition=index % PARTITIONS)
    assert producer.flush(10) == 0
    proxies = [start_proxy(cluster.bootstrap_servers) for _ in range(3)]
    urls = [url for _, url in proxies]
    try:

        def settled() -> bool:
            each = [serving(url) for url in urls]
            return all(each) and sorted(p for s in each for p in s) == list(range(PARTITIONS))

        wait_until(settled)
        victim_process, victim = proxies[0]
        writer = status(victim)["writer"]
        outcome = trio.run(run_clients, urls, victim, victim_process)
        survivors = urls[1:]
        final = [status(url) for url in survivors]
    finally:
        # Ctrl-C, and SIGTERM (a process manager's stop) alike: commit, leave the group, exit 0
        stops = [signal.SIGINT, signal.SIGINT, signal.SIGTERM]
        for (process, _), stop in zip(proxies, stops, strict=True):
            if process.poll() is None:
                process.send_signal(stop)
        try:
            for process, _ in proxies[1:]:
                assert process.wait(20) == 0
        finally:
            for process, _ in proxies:
                if process.poll() is None:
                    process.kill()
    # Every record was acknowledged at least once, and the group committed every partition
    # to its end (the run ended on lag 0): nothing lost.
    assert set(outcome.acked) == {b"record-%d" % i for i in range(RECORDS)}
    assert outcome.redelivered > 0  # records that came back after a lease or a cancel
    assert outcome.forwarded > 0  # acknowledgements and cancels sent to a non-owner ...
    assert sum(s["applied"] for s in final) > 0  # type: ignore[misc]  # ... applied by owners
    assert outcome.most_pending <= LOCKS  # the lock bound held on every status page seen
    log = read_log(cluster.bootstrap_servers)
    check_the_takeover_in_the_log(log, writer, outcome)
    lost = outcome.lost_at_the_kill(log, writer)
    duplicates = sum(count - 1 for count in outcome.acked.values())
    assert duplicates <= outcome.redelivered + lost, (duplicates, outcome.redelivered, lost)
    print(
        f"duplicates {duplicates}, redelivered {outcome.redelivered}, lost at the kill {lost},"
        f" forwarded {outcome.forwarded}, most pending {outcome.most_pending}"
    )


def check_the_takeover_in_the_log(
    log: dict[int, list[LogEntry]], victim: object, outcome: Outcome
) -> None:
    """The victim's partitions were claimed by survivors after its last entry, and their
    hand-outs continue from what the log said: never a record it logged as acknowledged, and
    a delivery still leased at the kill is continued (the next hand-out has a higher delivery
    count; one whose delivery had ended may have been passed by the log's commit, and then
    counts start again)."""
    assert outcome.victim_partitions
    for partition in outcome.victim_partitions:
        entries = log[partition]
        last = max(e.position for e in entries if e.writer == victim)
        claims = [e for e in entries if e.kind is K.CLAIM and e.position > last]
        assert claims and claims[0].writer != victim
        leased: dict[int, int] = {}  # offset -> delivery, of the victim's, leased at the kill
        acknowledged: set[int] = set()
        for entry in entries:
            if entry.position > last:
                break
            if entry.kind in REQUESTS or entry.kind is K.ACKNOWLEDGED:
                leased.pop(entry.offset, None)
            if entry.writer != victim:
                continue
            if entry.kind is K.ACKNOWLEDGED:
                acknowledged.add(entry.offset)
            elif entry.kind is K.PENDING:
                assert entry.lease_deadline is not None
                if entry.lease_deadline > outcome.killed_at_ms + 50:
                    leased[entry.offset] = entry.delivery
        for entry in entries:
            if entry.position > claims[0].position and entry.kind is K.PENDING:
                assert entry.offset not in acknowledged, entry
                assert entry.delivery > leased.get(entry.offset, 0), entry


@attrs.define
class Outcome:
    acked: Counter[bytes] = attrs.Factory(Counter)  # answered 200 or 202, per record
    redelivered: int = 0  # hand-outs with delivery > 1
    forwarded: int = 0  # requests answered 202
    most_pending: int = 0
    victim_partitions: set[int] = attrs.Factory(set)
    killed_at_ms: float = 0.0
    # What the victim answered, to compare with what reached the log:
    victim_handed: set[tuple[int, int, int]] = attrs.Factory(set)  # partition, offset, delivery
    victim_acked: set[Key] = attrs.Factory(set)
    victim_forwarded: set[tuple[int, int, int]] = attrs.Factory(set)

    def lost_at_the_kill(self, log: dict[int, list[LogEntry]], victim: object) -> int:
        """Hand-outs, acknowledgements and forwarded acknowledgements the victim answered
        whose entries are not in the log."""
        mine = [e for entries in log.values() for e in entries if e.writer == victim]
        logged = {(e.kind, e.tp.partition, e.offset, e.delivery) for e in mine}
        acked = {(e.tp.partition, e.offset) for e in mine if e.kind is K.ACKNOWLEDGED}
        return (
            sum((K.PENDING, *h) not in logged for h in self.victim_handed)
            + len(self.victim_acked - acked)
            + sum((K.ACKNOWLEDGE_REQUEST, *f) not in logged for f in self.victim_forwarded)
        )


async def run_clients(
    urls: list[str], victim: str, victim_process: subprocess.Popen[str]
) -> Outcome:
    outcome = Outcome()
    alive = list(urls)
    killed = trio.Event()
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
                where = (record["partition"], record["offset"], record["delivery"])
                if url == victim:  # it answered before it died
                    outcome.victim_handed.add(where)
                if record["delivery"] > 1:
                    outcome.redelivered += 1
                fate = chooser.random()
                if kind == 1 and fate < 0.3:
                    continue  # forgotten: comes back after its lease
                body = {k: record[k] for k in ("topic", "partition", "offset", "delivery")}
                route = "cancel" if kind == 2 and fate < 0.3 else "acknowledge"
                target = chooser.choice(alive)  # any server: a non-owner forwards it
                answer = await http.post(f"{target}/{route}", json=body)
                outcome.forwarded += answer.status_code == 202
                if route == "acknowledge" and answer.status_code in (200, 202):
                    outcome.acked[b64decode(record["value"])] += 1
                    if target == victim:
                        if answer.status_code == 200:
                            outcome.victim_acked.add(where[:2])
                        else:
                            outcome.victim_forwarded.add(where)
            except httpx.TransportError:
                pass  # the victim, killed: its clients move on

    async def killer(http: httpx.AsyncClient) -> None:
        while len(outcome.acked) < RECORDS // 3:
            await trio.sleep(0.01)
        held = (await http.get(f"{victim}/status")).json()["partitions"]
        outcome.victim_partitions = {entry["partition"] for entry in held}
        alive.remove(victim)
        outcome.killed_at_ms = time.time() * 1000
        victim_process.send_signal(signal.SIGKILL)
        killed.set()

    async def monitor(http: httpx.AsyncClient) -> None:
        """Done once every record is acknowledged and the survivors serve and committed
        everything (a record acknowledged at the victim and redelivered must be acknowledged
        again); meanwhile, watch the lock bound."""
        while True:
            await trio.sleep(0.1)
            entries = []
            for url in list(alive):
                try:
                    entries += (await http.get(f"{url}/status")).json()["partitions"]
                except httpx.TransportError:
                    continue
            for entry in entries:
                outcome.most_pending = max(outcome.most_pending, entry["pending"])
            if not killed.is_set() or len(outcome.acked) < RECORDS:
                continue
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

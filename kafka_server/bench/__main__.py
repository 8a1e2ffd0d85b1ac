"""``python -m kafka_server.bench [--messages N] [--size BYTES] [--json]``.

Side by side in one process, with confluent-kafka (librdkafka) as the client:

* **produce**: ``--messages`` records of ``--size`` bytes with acks=all to a 1-partition,
  RF 3 topic, against this server (3 brokers) and against librdkafka's built-in mock cluster
  (``test.mock.num.brokers=3``); records/s, MB/s and process CPU seconds per 1,000 records
  (both clusters run inside this process, so process CPU time counts broker and client work
  for both).
* **end to end**: records produced one at a time, each carrying its send time, read by an
  assigned consumer; p50/p99 of receive minus send.
* **idle consumer**: process CPU while a consumer waits on an empty partition for
  ``--idle`` seconds, long-polling (fetch.wait.max.ms=500) against the same consumer polling
  (fetch.wait.max.ms=0) -- the cost the Fetch purgatory saves.

Every record goes to partition 0 (the mock cluster auto-creates topics with several
partitions; its replication factor for them is librdkafka's choice).

Ratios are this server over the mock cluster (or long poll over polling loop). Wall-clock
numbers are noisy on a shared machine; compare ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition

from kafka_server.server import TopicSpec
from kafka_server.thread import ServerThread

_Target = Callable[[], dict[str, Any]]


def _produce(config: dict[str, Any], topic: str, messages: int, size: int) -> dict[str, float]:
    producer = Producer({**config, "acks": "all", "linger.ms": 5})
    payload = b"x" * size
    producer.produce(topic, b"warm-up", partition=0)
    producer.flush(30)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(messages):
        while True:
            try:
                producer.produce(topic, payload, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(120)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if remaining:
        raise RuntimeError(f"{remaining} records were not delivered")
    return {
        "records_per_s": messages / wall,
        "mb_per_s": messages * size / wall / 1e6,
        "cpu_s_per_1000": cpu / messages * 1000,
    }


def _end_to_end(config: dict[str, Any], topic: str, messages: int) -> dict[str, float]:
    producer = Producer({**config, "acks": "all", "linger.ms": 0})
    producer.produce(topic, struct.pack(">d", time.perf_counter()), partition=0)
    producer.flush(30)
    consumer = Consumer({**config, "group.id": "bench", "fetch.wait.max.ms": 500,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([CkTopicPartition(topic, 0, 1)])
    latencies: list[float] = []
    for _ in range(messages):
        producer.produce(topic, struct.pack(">d", time.perf_counter()), partition=0)
        producer.poll(0)
        give_up = time.monotonic() + 30
        while True:
            if time.monotonic() > give_up:
                raise RuntimeError(f"a record sent to {topic} was not received in 30 s")
            message = consumer.poll(5)
            if message is not None and message.error() is None:
                sent = struct.unpack(">d", message.value() or b"")[0]
                latencies.append((time.perf_counter() - sent) * 1000)
                break
    consumer.close()
    producer.flush(10)
    cuts = statistics.quantiles(latencies, n=100)
    return {"p50_ms": cuts[49], "p99_ms": cuts[98]}


def _idle_cpu(config: dict[str, Any], topic: str, seconds: float, wait_ms: int) -> float:
    producer = Producer(config)
    producer.produce(topic, b"exists", partition=0)
    producer.flush(30)
    consumer = Consumer({**config, "group.id": "idle", "fetch.wait.max.ms": wait_ms,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([CkTopicPartition(topic, 0, 1)])
    consumer.poll(0.5)
    cpu, end = time.process_time(), time.monotonic() + seconds
    while time.monotonic() < end:
        consumer.poll(0.1)
    cpu = time.process_time() - cpu
    consumer.close()
    return cpu / seconds


def run(messages: int, size: int, latency_messages: int, idle: float) -> dict[str, Any]:
    """Every measurement, for this server and for the mock cluster, with ratios."""
    results: dict[str, Any] = {}
    with ServerThread(brokers=3, topics=[TopicSpec("bench", 1, 3)]) as server:
        ours = {"bootstrap.servers": server.bootstrap_servers}
        results["server"] = {
            **_produce(ours, "bench", messages, size),
            **_end_to_end(ours, "bench-e2e", latency_messages),
            "idle_long_poll_cpu": _idle_cpu(ours, "idle-a", idle, 500),
            "idle_polling_cpu": _idle_cpu(ours, "idle-b", idle, 0),
        }
    mock = {"test.mock.num.brokers": 3, "bootstrap.servers": ""}
    # librdkafka's mock cluster lives in the client that configures it: one per measurement,
    # the producer's cluster shared with the consumer through its bootstrap list.
    holder = Producer({**mock, "topic.metadata.refresh.interval.ms": 100})
    bootstrap = _mock_bootstrap(holder)
    mocked = {"bootstrap.servers": bootstrap}
    topic = f"bench-{uuid.uuid4().hex[:6]}"
    results["mock"] = {
        **_produce(mocked, topic, messages, size),
        **_end_to_end(mocked, topic + "-e2e", latency_messages),
    }
    holder.flush(1)
    ratios = {
        key: results["server"][key] / results["mock"][key]
        for key in ("records_per_s", "mb_per_s", "cpu_s_per_1000", "p50_ms", "p99_ms")
    }
    ratios["idle_long_poll_over_polling_cpu"] = (
        results["server"]["idle_long_poll_cpu"] / results["server"]["idle_polling_cpu"]
    )
    results["ratios"] = ratios
    return results


def _mock_bootstrap(client: Producer) -> str:
    metadata = client.list_topics(timeout=10)
    return ",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its numbers (one JSON object with ``--json``)."""
    parser = argparse.ArgumentParser(prog="python -m kafka_server.bench")
    parser.add_argument("--messages", type=int, default=20_000, help="records produced")
    parser.add_argument("--size", type=int, default=100, help="bytes per record")
    parser.add_argument("--latency-messages", type=int, default=200, help="end-to-end samples")
    parser.add_argument("--idle", type=float, default=3.0, help="idle consumer seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    results = run(args.messages, args.size, args.latency_messages, args.idle)
    if args.json:
        print(json.dumps(results))
        return 0
    for side in ("server", "mock", "ratios"):
        print(side)
        for key, value in results[side].items():
            print(f"  {key:34} {value:12.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

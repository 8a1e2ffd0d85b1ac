"""The replica layer's benchmarks, each against its baseline in the same run (see
:mod:`replica.bench`); each returns its numbers as a dict."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from purgatory import ManualClock
from replica.config import BrokerConfig
from replica.log import Log
from replica.records import Record
from replica.replica_manager import ReplicaManager
from replica.testing import DirectCluster
from replica.types import (
    FetchIsolation,
    FetchPartitionData,
    IsolationLevel,
    PartitionFetchInfo,
    PartitionResponse,
    PartitionState,
    TopicPartition,
)

__all__ = ["follower_fetch", "log_read", "replication", "timestamp_lookup"]

_PARTITIONS = 8


def _replication_run(requests: int, batch: int, acks: int) -> tuple[float, int]:
    """CPU seconds to push ``requests`` produce requests; and how many were answered."""
    cluster = DirectCluster((0, 1, 2), BrokerConfig())
    partitions = [TopicPartition("bench", p) for p in range(_PARTITIONS)]
    for tp in partitions:
        cluster.elect(tp, leader=tp.partition % 3)
    cluster.pump()
    answered = 0

    def on_response(_response: dict[TopicPartition, PartitionResponse]) -> None:
        nonlocal answered
        answered += 1

    records = [Record(None, b"x" * 100, 0) for _ in range(batch)]
    start = time.process_time()
    for i in range(requests):
        tp = partitions[i % _PARTITIONS]
        cluster.brokers[tp.partition % 3].append_messages(30_000, acks, {tp: records}, on_response)
        if i % _PARTITIONS == _PARTITIONS - 1:
            cluster.pump()
            cluster.advance(1)
    cluster.pump()
    return time.process_time() - start, answered


def replication(requests: int = 4000, batch: int = 10, rounds: int = 3) -> dict[str, float]:
    """Records per CPU-second with acks=-1 and acks=1, and the cost ratio (see replica.bench).

    Raises:
        RuntimeError: a produce request was left unanswered (a bug, not a slow machine).
    """
    best = {-1: float("inf"), 1: float("inf")}
    for _ in range(rounds):
        for acks in (-1, 1):
            seconds, answered = _replication_run(requests, batch, acks)
            if answered != requests:
                raise RuntimeError(f"acks={acks}: {answered} of {requests} requests answered")
            best[acks] = min(best[acks], seconds)
    records = requests * batch
    return {
        "records": records,
        "acks_all_records_per_cpu_second": records / best[-1],
        "acks_one_records_per_cpu_second": records / best[1],
        "acks_all_cost_ratio": best[-1] / best[1],
    }


def _filled_log(batches: int) -> Log:
    log = Log(TopicPartition("bench", 0), segment_bytes=1 << 20, max_message_bytes=1 << 20)
    records = [Record(None, b"x" * 100, 0) for _ in range(4)]
    for _ in range(batches):
        log.append_as_leader(records, 0)
    return log


def _read_cost(log: Log, reads: int, rng: random.Random) -> float:
    offsets = [rng.randrange(log.log_end_offset) for _ in range(reads)]
    read: Callable[[int, int, FetchIsolation, bool], object] = log.read
    start = time.process_time()
    for offset in offsets:
        read(offset, 4096, FetchIsolation.LOG_END, True)
    return (time.process_time() - start) / reads


def log_read(
    small: int = 1000, large: int = 100_000, reads: int = 20_000, rounds: int = 3, seed: int = 1
) -> dict[str, float]:
    """CPU per read at random offsets in a small and a large log, and their ratio."""
    rng = random.Random(seed)
    logs = {small: _filled_log(small), large: _filled_log(large)}
    best = {small: float("inf"), large: float("inf")}
    for _ in range(rounds):
        for size, log in logs.items():
            best[size] = min(best[size], _read_cost(log, reads, rng))
    return {
        "small_log_batches": small,
        "large_log_batches": large,
        "small_log_us_per_read": best[small] * 1e6,
        "large_log_us_per_read": best[large] * 1e6,
        "read_cost_ratio": best[large] / best[small],
    }


def _ignore(_response: dict[TopicPartition, FetchPartitionData]) -> None:
    pass


def _fetch_cost(broker: ReplicaManager, info: PartitionFetchInfo, fetches: int) -> float:
    infos = {TopicPartition("bench", 0): info}
    fetch = broker.fetch_messages
    uncommitted = IsolationLevel.READ_UNCOMMITTED
    start = time.process_time()
    for _ in range(fetches):
        fetch(1, infos, 1, 0, 1 << 20, uncommitted, _ignore)
    return (time.process_time() - start) / fetches


def follower_fetch(epochs: int = 1000, fetches: int = 20_000, rounds: int = 3) -> dict[str, float]:
    """CPU per follower fetch without and with ``last_fetched_epoch``, and their ratio."""
    tp = TopicPartition("bench", 0)
    broker = ReplicaManager(0, BrokerConfig(), ManualClock())
    records = [Record(None, b"x" * 100, 0)]
    for epoch in range(epochs):
        broker.become_leader_or_follower({tp: PartitionState(0, epoch, (0, 1), (0, 1))})
        broker.append_messages(0, 1, {tp: records}, lambda _response: None)
    end = epochs  # one record per epoch
    variants = {
        "without_epoch": PartitionFetchInfo(end, 1 << 20, epochs - 1, 0, None),
        "with_epoch": PartitionFetchInfo(end, 1 << 20, epochs - 1, 0, epochs - 1),
    }
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(rounds):
        for name, info in variants.items():
            best[name] = min(best[name], _fetch_cost(broker, info, fetches))
    return {
        "epochs": epochs,
        "without_epoch_us_per_fetch": best["without_epoch"] * 1e6,
        "with_epoch_us_per_fetch": best["with_epoch"] * 1e6,
        "epoch_check_cost_ratio": best["with_epoch"] / best["without_epoch"],
    }


def _stamped_log(batches: int) -> Log:
    log = Log(TopicPartition("bench", 0), segment_bytes=1 << 20, max_message_bytes=1 << 20)
    for timestamp in range(batches):
        log.append_as_leader([Record(None, b"x" * 100, timestamp)], 0)
    log.find_offset_by_timestamp(0)  # builds the lazy index outside the timed part
    return log


def _lookup_cost(log: Log, lookups: int, rng: random.Random) -> float:
    targets = [rng.randrange(log.log_end_offset) for _ in range(lookups)]
    find = log.find_offset_by_timestamp
    start = time.process_time()
    for target in targets:
        find(target)
    return (time.process_time() - start) / lookups


def timestamp_lookup(
    small: int = 1000, large: int = 100_000, lookups: int = 20_000, rounds: int = 3, seed: int = 1
) -> dict[str, float]:
    """CPU per timestamp lookup in a small and a large log, and their ratio."""
    rng = random.Random(seed)
    logs = {small: _stamped_log(small), large: _stamped_log(large)}
    best = {small: float("inf"), large: float("inf")}
    for _ in range(rounds):
        for size, log in logs.items():
            best[size] = min(best[size], _lookup_cost(log, lookups, rng))
    return {
        "small_log_batches": small,
        "large_log_batches": large,
        "small_log_us_per_lookup": best[small] * 1e6,
        "large_log_us_per_lookup": best[large] * 1e6,
        "lookup_cost_ratio": best[large] / best[small],
    }

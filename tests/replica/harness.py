"""Test harness: response recorders and produce/consume shortcuts on a DirectCluster."""

from __future__ import annotations

from collections.abc import Sequence

from purgatory import ManualClock
from replica import (
    FetchPartitionData,
    IsolationLevel,
    PartitionFetchInfo,
    PartitionResponse,
    Record,
    TopicPartition,
)
from replica.testing import DirectCluster

__all__ = ["Cluster", "ManualClock", "Recorder", "records"]


class Recorder:
    """A response callback that records every call (to assert 'exactly once')."""

    def __init__(self) -> None:
        self.calls: list[dict[TopicPartition, object]] = []

    def __call__(self, response: dict[TopicPartition, object]) -> None:
        self.calls.append(dict(response))

    @property
    def done(self) -> bool:
        return bool(self.calls)

    @property
    def response(self) -> dict[TopicPartition, object]:
        assert len(self.calls) == 1, f"expected exactly one response, got {len(self.calls)}"
        return self.calls[0]

    def produce(self, tp: TopicPartition) -> PartitionResponse:
        value = self.response[tp]
        assert isinstance(value, PartitionResponse)
        return value

    def fetch(self, tp: TopicPartition) -> FetchPartitionData:
        value = self.response[tp]
        assert isinstance(value, FetchPartitionData)
        return value


def records(*values: bytes, timestamp: int = 0) -> list[Record]:
    return [Record(None, value, timestamp) for value in values]


class Cluster(DirectCluster):
    """A DirectCluster with produce/consume shortcuts that record the responses."""

    def produce(
        self,
        leader: int,
        tp: TopicPartition,
        values: Sequence[bytes],
        acks: int = -1,
        timeout_ms: int = 1000,
    ) -> Recorder:
        recorder = Recorder()
        self.brokers[leader].append_messages(timeout_ms, acks, {tp: records(*values)}, recorder)
        return recorder

    def consume(
        self,
        leader: int,
        tp: TopicPartition,
        offset: int,
        *,
        min_bytes: int = 1,
        max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
    ) -> Recorder:
        recorder = Recorder()
        self.brokers[leader].fetch_messages(
            -1,
            {tp: PartitionFetchInfo(offset, max_bytes)},
            min_bytes,
            max_wait_ms,
            max_bytes,
            IsolationLevel.READ_UNCOMMITTED,
            recorder,
        )
        return recorder

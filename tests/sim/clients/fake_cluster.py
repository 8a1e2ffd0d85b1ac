"""A test double for the cluster: in-memory partition logs behind a ``ClientNetwork``.

Not a broker model (the real one lives in ``replica``/``apis``): just enough Kafka behaviour
to drive the clients, with knobs to break things on purpose. Every request arrives after
``latency_us`` and its response takes ``latency_us`` back. Replication is instantaneous
(the high watermark is the log end offset). The cluster is also an oracle ``MetadataView``
whose refresh takes one round trip.

Fault injection: ``produce_fault(tp, broker_id)`` is asked once per partition of every
produce request the leader handles; it can reject the partition, append then report an
error, or lose the whole response or request. ``commit_fault()`` can fail OffsetCommits.
"""

from __future__ import annotations

import enum
from bisect import bisect_right
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from apis.fetch import FetchRequest, FetchResponse
from apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from apis.list_offsets import (
    EARLIEST_TIMESTAMP,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from apis.metadata import (
    BrokerEndpoint,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from apis.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from apis.offset_fetch import OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartition
from apis.produce import ProduceRequest, ProduceResponse
from replica.errors import Errors
from replica.records import Record, RecordBatch, batch_size_in_bytes
from replica.types import UNKNOWN_OFFSET, FetchPartitionData, PartitionResponse, TopicPartition
from sim.clients.records import message_id_of
from sim.core.engine import Event, Simulator


class FaultKind(enum.Enum):
    REJECT = "reject"  # answer the partition with `error`, append nothing
    APPEND_THEN_ERROR = "append_then_error"  # append, but answer with `error`
    DROP_RESPONSE = "drop_response"  # append, never answer the request
    DROP_REQUEST = "drop_request"  # append nothing, never answer the request


@attrs.frozen
class Fault:
    kind: FaultKind
    error: Errors = Errors.NONE


ProduceFault = Callable[[TopicPartition, int], Fault | None]


class _ParkedFetch:
    __slots__ = ("broker_id", "done", "on_response", "request", "timer")

    def __init__(
        self, broker_id: int, request: FetchRequest, on_response: Callable[[Any], None]
    ) -> None:
        self.broker_id = broker_id
        self.request = request
        self.on_response = on_response
        self.done = False
        self.timer: Event | None = None


class FakeCluster:
    """Brokers ``0..brokers-1``; partition ``p`` of every topic is led by ``p % brokers``;
    broker 0 coordinates every group."""

    def __init__(
        self,
        sim: Simulator,
        topics: Mapping[str, int],
        *,
        brokers: int = 1,
        latency_us: int = 100,
        produce_fault: ProduceFault | None = None,
        commit_fault: Callable[[], Errors | None] | None = None,
        commit_delay_us: int = 0,
    ) -> None:
        self.sim = sim
        self.brokers = brokers
        self.latency_us = latency_us
        self.produce_fault = produce_fault
        self.commit_fault = commit_fault
        self.commit_delay_us = commit_delay_us
        self.topics = dict(topics)
        self.leaders: dict[TopicPartition, int | None] = {
            TopicPartition(t, p): p % brokers for t, n in topics.items() for p in range(n)
        }
        self.logs: dict[TopicPartition, list[RecordBatch]] = {tp: [] for tp in self.leaders}
        # per partition: next offset after each batch, and bytes before each batch
        self._ends: dict[TopicPartition, list[int]] = {tp: [] for tp in self.leaders}
        self._bytes_before: dict[TopicPartition, list[int]] = {tp: [0] for tp in self.leaders}
        self.committed: dict[tuple[str, TopicPartition], int] = {}
        self.coordinator: int | None = 0
        self.requests: list[tuple[int, int, Any]] = []  # (time, broker, request)
        self.outstanding: dict[int, int] = {}  # produce requests awaiting their response
        self.max_outstanding: dict[int, int] = {}
        self.metadata_refreshes = 0
        self._parked: list[_ParkedFetch] = []

    # -- helpers for tests ----------------------------------------------------------------------

    def log_end_offset(self, tp: TopicPartition) -> int:
        batches = self.logs[tp]
        return batches[-1].next_offset if batches else 0

    def message_ids(self, tp: TopicPartition) -> list[int]:
        """The message ids in ``tp``'s log, in offset order."""
        ids = []
        for batch in self.logs[tp]:
            for record in batch.records:
                mid = message_id_of(record)
                assert mid is not None
                ids.append(mid)
        return ids

    def append(self, tp: TopicPartition, records: tuple[Record, ...]) -> int:
        """Append a batch as a leader would; returns its base offset; wakes parked fetches."""
        base = self.log_end_offset(tp)
        batch = RecordBatch(base, records, batch_size_in_bytes(records))
        self.logs[tp].append(batch)
        self._ends[tp].append(batch.next_offset)
        self._bytes_before[tp].append(self._bytes_before[tp][-1] + batch.size_in_bytes)
        self._wake_fetches()
        return base

    def move_leader(self, tp: TopicPartition) -> None:
        current = self.leaders[tp]
        self.leaders[tp] = 0 if current is None else (current + 1) % self.brokers

    def produce_requests(self) -> list[tuple[int, int, ProduceRequest]]:
        return [(t, b, r) for t, b, r in self.requests if isinstance(r, ProduceRequest)]

    # -- MetadataView (an oracle with one round trip of refresh latency) -------------------------

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self.leaders.get(tp)

    def partition_count(self, topic: str) -> int | None:
        return self.topics.get(topic)

    def coordinator_for(self, group_id: str) -> int | None:
        return self.coordinator

    def refresh(self, on_done: Callable[[], None]) -> None:
        self.metadata_refreshes += 1
        self.sim.call_later(2 * self.latency_us, on_done)

    # -- ClientNetwork --------------------------------------------------------------------------

    def send(self, broker_id: int, request: Any, on_response: Callable[[Any], None]) -> None:
        self.requests.append((self.sim.now, broker_id, request))
        if isinstance(request, ProduceRequest) and request.acks != 0:
            n = self.outstanding.get(broker_id, 0) + 1
            self.outstanding[broker_id] = n
            self.max_outstanding[broker_id] = max(self.max_outstanding.get(broker_id, 0), n)

            def on_produce_response(response: Any) -> None:
                self.outstanding[broker_id] -= 1
                on_response(response)

            self.sim.call_later(
                self.latency_us, lambda: self._handle(broker_id, request, on_produce_response)
            )
            return
        self.sim.call_later(self.latency_us, lambda: self._handle(broker_id, request, on_response))

    def _respond(self, on_response: Callable[[Any], None], response: Any, delay: int = 0) -> None:
        self.sim.call_later(self.latency_us + delay, lambda: on_response(response))

    def _handle(self, broker_id: int, request: Any, on_response: Callable[[Any], None]) -> None:
        if isinstance(request, ProduceRequest):
            self._produce(broker_id, request, on_response)
        elif isinstance(request, FetchRequest):
            self._fetch(broker_id, request, on_response)
        elif isinstance(request, OffsetCommitRequest):
            self._offset_commit(broker_id, request, on_response)
        elif isinstance(request, OffsetFetchRequest):
            self._offset_fetch(broker_id, request, on_response)
        elif isinstance(request, ListOffsetsRequest):
            self._list_offsets(broker_id, request, on_response)
        elif isinstance(request, MetadataRequest):
            self._metadata(request, on_response)
        elif isinstance(request, FindCoordinatorRequest):
            endpoint = None if self.coordinator is None else BrokerEndpoint(self.coordinator)
            error = Errors.COORDINATOR_NOT_AVAILABLE if endpoint is None else Errors.NONE
            self._respond(on_response, FindCoordinatorResponse(error, endpoint))
        else:
            raise AssertionError(f"unexpected request {request!r}")

    def _produce(
        self, broker_id: int, request: ProduceRequest, on_response: Callable[[Any], None]
    ) -> None:
        results: dict[TopicPartition, PartitionResponse] = {}
        respond = True
        for tp, records in request.records.items():
            if self.leaders.get(tp) != broker_id:
                results[tp] = PartitionResponse(Errors.NOT_LEADER_OR_FOLLOWER)
                continue
            fault = self.produce_fault(tp, broker_id) if self.produce_fault else None
            if fault is None:
                results[tp] = PartitionResponse(Errors.NONE, self.append(tp, tuple(records)))
            elif fault.kind is FaultKind.REJECT:
                results[tp] = PartitionResponse(fault.error)
            elif fault.kind is FaultKind.APPEND_THEN_ERROR:
                self.append(tp, tuple(records))
                results[tp] = PartitionResponse(fault.error)
            elif fault.kind is FaultKind.DROP_RESPONSE:
                self.append(tp, tuple(records))
                respond = False
            else:
                respond = False
        if respond:
            self._respond(on_response, ProduceResponse(results))

    def _first_batch(self, tp: TopicPartition, offset: int) -> int:
        """Index of the first batch holding an offset >= ``offset``."""
        return bisect_right(self._ends[tp], offset)

    def _available(self, tp: TopicPartition, offset: int) -> int:
        before = self._bytes_before[tp]
        return before[-1] - before[self._first_batch(tp, offset)]

    def _fetch(
        self, broker_id: int, request: FetchRequest, on_response: Callable[[Any], None]
    ) -> None:
        parked = _ParkedFetch(broker_id, request, on_response)
        available = sum(
            self._available(tp, info.fetch_offset) for tp, info in request.fetch_data.items()
        )
        errors = any(
            self.leaders.get(tp) != broker_id or info.fetch_offset > self.log_end_offset(tp)
            for tp, info in request.fetch_data.items()
        )
        if request.max_wait_ms <= 0 or available >= request.min_bytes or errors:
            self._complete_fetch(parked)
            return
        self._parked.append(parked)
        parked.timer = self.sim.call_later(
            request.max_wait_ms * 1000, lambda: self._complete_fetch(parked)
        )

    def _wake_fetches(self) -> None:
        for parked in list(self._parked):
            request = parked.request
            available = sum(
                self._available(tp, info.fetch_offset) for tp, info in request.fetch_data.items()
            )
            if available >= request.min_bytes:
                self._complete_fetch(parked)

    def _complete_fetch(self, parked: _ParkedFetch) -> None:
        if parked.done:
            return
        parked.done = True
        if parked.timer is not None:
            parked.timer.cancel()
        if parked in self._parked:
            self._parked.remove(parked)
        data: dict[TopicPartition, FetchPartitionData] = {}
        for tp, info in parked.request.fetch_data.items():
            leo = self.log_end_offset(tp)
            if self.leaders.get(tp) != parked.broker_id:
                error = Errors.NOT_LEADER_OR_FOLLOWER
            elif info.fetch_offset > leo:
                error = Errors.OFFSET_OUT_OF_RANGE
            else:
                error = Errors.NONE
            batches: list[RecordBatch] = []
            size = 0
            if error is Errors.NONE:
                log = self.logs[tp]
                for batch in log[self._first_batch(tp, info.fetch_offset) :]:
                    if batches and size + batch.size_in_bytes > info.max_bytes:
                        break
                    batches.append(batch)
                    size += batch.size_in_bytes
            data[tp] = FetchPartitionData(error, leo, 0, leo, tuple(batches), size, UNKNOWN_OFFSET)
        self._respond(parked.on_response, FetchResponse(Errors.NONE, data))

    def _offset_commit(
        self, broker_id: int, request: OffsetCommitRequest, on_response: Callable[[Any], None]
    ) -> None:
        error = Errors.NOT_COORDINATOR if broker_id != self.coordinator else None
        if error is None and self.commit_fault is not None:
            error = self.commit_fault()
        if error is None:
            for tp, partition in request.offsets.items():
                self.committed[(request.group_id, tp)] = partition.committed_offset
            error = Errors.NONE
        self._respond(
            on_response,
            OffsetCommitResponse({tp: error for tp in request.offsets}),
            self.commit_delay_us,
        )

    def _offset_fetch(
        self, broker_id: int, request: OffsetFetchRequest, on_response: Callable[[Any], None]
    ) -> None:
        if broker_id != self.coordinator:
            self._respond(on_response, request.error_response(Errors.NOT_COORDINATOR))
            return
        partitions = request.partitions or []
        offsets = {
            tp: OffsetFetchResponsePartition(self.committed.get((request.group_id, tp), -1))
            for tp in partitions
        }
        self._respond(on_response, OffsetFetchResponse(Errors.NONE, offsets))

    def _list_offsets(
        self, broker_id: int, request: ListOffsetsRequest, on_response: Callable[[Any], None]
    ) -> None:
        answers = {}
        for tp, timestamp in request.timestamps.items():
            if self.leaders.get(tp) != broker_id:
                answers[tp] = ListOffsetsPartitionResponse(Errors.NOT_LEADER_OR_FOLLOWER)
            else:
                offset = 0 if timestamp == EARLIEST_TIMESTAMP else self.log_end_offset(tp)
                answers[tp] = ListOffsetsPartitionResponse(Errors.NONE, offset=offset)
        self._respond(on_response, ListOffsetsResponse(answers))

    def _metadata(self, request: MetadataRequest, on_response: Callable[[Any], None]) -> None:
        topics = {}
        for topic in request.topics if request.topics is not None else list(self.topics):
            count = self.topics.get(topic)
            if count is None:
                topics[topic] = TopicMetadata(Errors.UNKNOWN_TOPIC_OR_PARTITION, {})
                continue
            partitions = {}
            for p in range(count):
                leader = self.leaders[TopicPartition(topic, p)]
                partitions[p] = PartitionMetadata(
                    Errors.NONE if leader is not None else Errors.LEADER_NOT_AVAILABLE,
                    -1 if leader is None else leader,
                    0,
                    tuple(range(self.brokers)),
                    tuple(range(self.brokers)),
                )
            topics[topic] = TopicMetadata(Errors.NONE, partitions)
        brokers = tuple(BrokerEndpoint(b) for b in range(self.brokers))
        self._respond(on_response, MetadataResponse(brokers, 0, topics))

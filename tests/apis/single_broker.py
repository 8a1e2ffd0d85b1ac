"""One broker wired from the real layers, driven directly through KafkaApis (no cluster)."""

from __future__ import annotations

import itertools

from apis import (
    BrokerEndpoint,
    KafkaApis,
    KafkaConfig,
    LeaderAndIsrRequest,
    MetadataCache,
    Request,
    RequestBody,
    RequestChannel,
    RequestHeader,
    Response,
    UpdateMetadataRequest,
)
from coordinator import GroupCoordinator, OffsetConfig, OffsetManager
from replica.config import BrokerConfig
from replica.replica_manager import ReplicaManager
from replica.types import GROUP_METADATA_TOPIC_NAME, PartitionState, TopicPartition

TOPIC = "orders"
T0 = TopicPartition(TOPIC, 0)
T1 = TopicPartition(TOPIC, 1)
OFFSETS_PARTITIONS = 4


class SingleBroker:
    """Broker 0 leading ``orders`` (2 partitions) and ``__consumer_offsets`` (4), RF 1."""

    def __init__(self, broker: BrokerConfig | None = None) -> None:
        self.now = 0
        self.config = KafkaConfig(
            broker=broker or BrokerConfig(),
            offsets=OffsetConfig(offsets_topic_num_partitions=OFFSETS_PARTITIONS),
        )
        self.cache = MetadataCache()
        self.rm = ReplicaManager(
            0, self.config.broker, self.clock, metadata_contains=self.cache.contains_partition
        )
        self.om = OffsetManager(0, self.rm, self.config.offsets, self.clock)
        self.gc = GroupCoordinator(0, self.om, self.config.group, self.clock)
        self.channel = RequestChannel()
        self.apis = KafkaApis(0, self.rm, self.gc, self.cache, self.config, self.channel)
        self._ids = itertools.count(1)
        states = {
            TopicPartition(topic, p): PartitionState(0, 0, (0,), (0,))
            for topic, count in ((TOPIC, 2), (GROUP_METADATA_TOPIC_NAME, OFFSETS_PARTITIONS))
            for p in range(count)
        }
        self.request(UpdateMetadataRequest(1, 1, [BrokerEndpoint(0)], states))
        self.request(LeaderAndIsrRequest(1, 1, states))

    def clock(self) -> int:
        return self.now

    def send(self, body: RequestBody, *, api_version: int = 0) -> Request:
        """Hand ``body`` (as request version ``api_version``) to KafkaApis; returns the
        request (its response may come later)."""
        header = RequestHeader(body.API_KEY, next(self._ids), "client", api_version)
        request = Request(header, body)
        self.apis.handle(request)
        return request

    def responses(self) -> list[Response]:
        return self.channel.receive_responses()

    def request(self, body: RequestBody) -> Response:
        """Send ``body`` and return its one response, which must be immediate."""
        request = self.send(body)
        responses = self.responses()
        assert [r.request for r in responses] == [request], responses
        return responses[0]

    def advance(self, ms: int) -> None:
        self.now += ms
        self.rm.advance_clock(self.now)
        self.gc.advance_clock(self.now)

    def state(self) -> tuple[object, ...]:
        """Everything a request could change: log ends, high watermarks, purgatory sizes,
        committed offsets of the groups used in the tests."""
        partitions = sorted(self.rm.partitions)
        return (
            [(tp, self.rm.log_end_offset(tp), self.rm.high_watermark(tp)) for tp in partitions],
            self.rm.produce_purgatory.watched,
            self.rm.fetch_purgatory.watched,
            [self.om.get_offsets(g) for g in ("group-a", "group-b")],
            self.gc.heartbeat_purgatory.watched,
            self.gc.rebalance_purgatory.watched,
            repr(self.gc),
        )

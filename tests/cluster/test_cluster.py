"""The in-process cluster itself: controller decisions, faults, transports, time."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import pytest

from apis import (
    Errors,
    FetchResponse,
    KafkaConfig,
    MetadataRequest,
    MetadataResponse,
    ProduceResponse,
    Request,
    ResponseBody,
)
from cluster import (
    BrokerStateError,
    Client,
    Cluster,
    ClusterError,
    DuplicateResponseError,
    ImmediateTransport,
    IneligibleLeaderError,
    InvalidTopicError,
    ManualClock,
    Receiver,
    ResponseCallback,
    UnexpectedResponseError,
    UnknownBrokerError,
)
from coordinator import OffsetConfig
from purgatory import ClockWentBackwardsError
from replica.types import GROUP_METADATA_TOPIC_NAME, PartitionState, TopicPartition

SMALL = KafkaConfig(offsets=OffsetConfig(offsets_topic_num_partitions=3))


def test_topics_are_assigned_round_robin_and_known_everywhere() -> None:
    cluster = Cluster(3, config=SMALL)
    created = cluster.create_topic("t", 4, 2)
    assert [s.replicas for s in created.values()] == [(0, 1), (1, 2), (2, 0), (0, 1)]
    assert all(s.isr == s.replicas and s.leader == s.replicas[0] for s in created.values())
    offsets = [
        cluster.controller.partition_state(TopicPartition(GROUP_METADATA_TOPIC_NAME, p))
        for p in range(3)
    ]
    assert [s.replicas for s in offsets] == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    for node in cluster.brokers.values():
        response = cluster.send(node.broker_id, MetadataRequest(["t"])).result(MetadataResponse)
        assert [b.broker_id for b in response.brokers] == [0, 1, 2]
        assert response.controller_id == cluster.controller.controller_id
        assert {p: m.leader for p, m in response.topics["t"].partitions.items()} == {
            0: 0,
            1: 1,
            2: 2,
            3: 0,
        }
    for tp, state in created.items():
        for replica in state.replicas:
            rm = cluster.broker(replica).replica_manager
            assert rm.is_leader(tp) == (replica == state.leader)


def test_offsets_topic_replication_is_capped_by_the_broker_count() -> None:
    cluster = Cluster(1, config=SMALL)
    state = cluster.controller.partition_state(TopicPartition(GROUP_METADATA_TOPIC_NAME, 0))
    assert state.replicas == (0,)


@pytest.mark.parametrize(
    ("name", "partitions", "rf", "message"),
    [
        ("", 1, 1, "must not be empty"),
        ("t", 0, 1, "num_partitions must be an int >= 1"),
        ("t", 1, 4, "replication_factor must be between 1 and the 3 live brokers"),
        ("t", 1, 0, "replication_factor must be between 1"),
        (GROUP_METADATA_TOPIC_NAME, 1, 1, "already exists"),
    ],
)
def test_bad_topics_are_refused(name: str, partitions: int, rf: int, message: str) -> None:
    cluster = Cluster(3, config=SMALL)
    with pytest.raises(InvalidTopicError, match=message):
        cluster.create_topic(name, partitions, rf)


def test_stopping_a_leader_elects_the_first_live_isr_member() -> None:
    cluster = Cluster(3, config=SMALL)
    tp = TopicPartition("t", 0)
    cluster.create_topic("t", 1, 3)
    before = cluster.controller.partition_state(tp)
    cluster.stop_broker(0)
    after = cluster.controller.partition_state(tp)
    assert (after.leader, after.isr, after.leader_epoch) == (1, (1, 2), before.leader_epoch + 1)
    assert cluster.broker(1).replica_manager.is_leader(tp)
    assert cluster.broker(2).replica_manager.leader_epoch(tp) == after.leader_epoch
    metadata = cluster.send(2, MetadataRequest(["t"])).result(MetadataResponse)
    assert [b.broker_id for b in metadata.brokers] == [1, 2]
    assert metadata.topics["t"].partitions[0].leader == 1


def test_no_unclean_election_and_the_last_isr_member_comes_back() -> None:
    cluster = Cluster(3, config=SMALL)
    tp = TopicPartition("t", 0)
    cluster.create_topic("t", 1, 2)  # replicas (0, 1)
    client = Client(cluster)
    cluster.stop_broker(1)  # ISR shrinks to (0,)
    assert cluster.controller.partition_state(tp).isr == (0,)
    client.produce(tp, [b"only on 0"], acks=1)
    cluster.pause_fetchers(1)  # so that, once back, 1 cannot catch up and rejoin the ISR
    cluster.restart_broker(1)
    cluster.advance(1_000)
    assert cluster.controller.partition_state(tp).isr == (0,)
    cluster.stop_broker(0)
    offline = cluster.controller.partition_state(tp)
    assert offline.leader == -1
    assert offline.isr == (0,)  # kept: only 0 may lead again
    metadata = cluster.send(1, MetadataRequest(["t"])).result(MetadataResponse)
    assert metadata.topics["t"].partitions[0].error is Errors.LEADER_NOT_AVAILABLE
    cluster.restart_broker(0)
    back = cluster.controller.partition_state(tp)
    assert (back.leader, back.isr) == (0, (0,))
    fetch = client.fetch(tp, 0, max_wait_ms=0).result(FetchResponse)
    assert [r.value for b in fetch.responses[tp].records for r in b.records] == [b"only on 0"]


def test_elect_leader_needs_a_live_isr_member() -> None:
    cluster = Cluster(3, config=SMALL)
    tp = TopicPartition("t", 0)
    cluster.create_topic("t", 1, 2)  # replicas (0, 1)
    with pytest.raises(IneligibleLeaderError, match="broker 2 cannot lead t-0"):
        cluster.elect_leader(tp, 2)
    cluster.stop_broker(1)
    with pytest.raises(IneligibleLeaderError, match="broker 1 cannot lead"):
        cluster.elect_leader(tp, 1)
    assert cluster.elect_leader(tp, 0).leader == 0  # already the leader: unchanged
    with pytest.raises(InvalidTopicError, match="no partition"):
        cluster.elect_leader(TopicPartition("nope", 0), 0)


def test_unknown_brokers_and_broker_state_errors() -> None:
    cluster = Cluster(2, config=SMALL)
    with pytest.raises(UnknownBrokerError, match="broker 7 is not in the cluster"):
        cluster.stop_broker(7)
    with pytest.raises(UnknownBrokerError):
        cluster.send(7, MetadataRequest())
    with pytest.raises(BrokerStateError, match="already running"):
        cluster.restart_broker(0)
    cluster.stop_broker(0)
    with pytest.raises(BrokerStateError, match="already stopped"):
        cluster.stop_broker(0)
    with pytest.raises(UnknownBrokerError, match="distinct ints"):
        Cluster([1, 1])


def test_stopping_a_broker_fails_its_pending_requests_once() -> None:
    cluster = Cluster(3, config=SMALL)
    tp = TopicPartition("t", 0)
    cluster.create_topic("t", 1, 3)
    client = Client(cluster)
    poll = client.fetch(tp, 0, max_wait_ms=10_000)
    assert not poll.done
    cluster.stop_broker(0)
    assert poll.result(FetchResponse).error is Errors.NETWORK_EXCEPTION
    refused = client.produce(tp, [b"x"], destination=0)
    assert refused.result(ProduceResponse).responses[tp].error is Errors.NETWORK_EXCEPTION
    cluster.restart_broker(0)
    cluster.advance(20_000)  # the abandoned fetch expires on broker 0: its answer is dropped
    assert cluster.broker(0).in_flight == 0


def test_a_duplicate_response_is_detected() -> None:
    cluster = Cluster(1, config=SMALL)
    node = cluster.broker(0)
    call = cluster.send(0, MetadataRequest())
    node.request_channel.send_response(call.request, call.result(MetadataResponse))
    with pytest.raises(DuplicateResponseError, match="answered correlation id"):
        cluster.run_until_idle()


def test_advance_stops_at_every_deadline() -> None:
    cluster = Cluster(3, config=SMALL)
    tp = TopicPartition("t", 0)
    cluster.create_topic("t", 1, 3)
    client = Client(cluster)
    fetches = [client.fetch(tp, 0, max_wait_ms=wait) for wait in (30, 70, 250)]
    cluster.advance(1_000)
    assert [f.answered_at for f in fetches] == [30, 70, 250]
    assert cluster.clock.now == 1_000
    with pytest.raises(ClockWentBackwardsError):
        cluster.advance_to(999)
    with pytest.raises(ValueError, match="ms >= 0"):
        cluster.advance(-1)


def test_manual_clock() -> None:
    clock = ManualClock(5)
    assert clock() == clock.now == 5
    clock.advance_to(9)
    assert clock() == 9
    with pytest.raises(ClockWentBackwardsError, match="from 9 to 3"):
        clock.advance_to(3)


class _DriverClock:
    """A clock that someone else moves (as the simulator's engine clock is)."""

    def __init__(self) -> None:
        self.now = 40

    def __call__(self) -> int:
        return self.now


def test_a_cluster_reads_the_clock_its_driver_gives_it() -> None:
    clock = _DriverClock()
    cluster = Cluster(3, clock=clock)
    tp = TopicPartition("events", 0)
    cluster.create_topic("events", 1, 3)
    clock.now = 45
    produced = Client(cluster).produce(tp, [b"v"], acks=1)
    assert produced.answered_at == 45
    # A long poll parked at 45 ms is due at the time read from the driver's clock. It polls at
    # the high watermark, 0: the followers have not fetched the record yet.
    fetch = Client(cluster).fetch(tp, 0, max_wait_ms=100)
    assert not fetch.done and cluster.brokers[cluster.leader(tp)].next_deadline() == 145
    with pytest.raises(ClusterError, match="moved by its driver"):
        cluster.advance_to(50)
    with pytest.raises(ClusterError, match="not both"):
        Cluster(3, clock=clock, start_ms=5)


def test_immediate_transport_needs_a_receiver() -> None:
    transport = ImmediateTransport()
    request = Request.create(MetadataRequest(), correlation_id=1)
    with pytest.raises(RuntimeError, match="before bind"):
        transport.send("client", 0, request, lambda _body: None)


class SteppedTransport:
    """A transport delivering only when the test says so, like a simulator's event loop:
    ``poll`` never delivers anything."""

    def __init__(self) -> None:
        self.queue: deque[Callable[[], None]] = deque()
        self.receiver: Receiver | None = None

    def bind(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def send(
        self, source: str, destination: int, request: Request, on_response: ResponseCallback
    ) -> None:
        receiver = self.receiver
        assert receiver is not None

        def reply(body: ResponseBody) -> None:
            self.queue.append(lambda: on_response(body))

        self.queue.append(lambda: receiver(destination, request, reply))

    def poll(self) -> bool:
        return False

    def deliver_all(self) -> int:
        count = 0
        while self.queue:
            self.queue.popleft()()
            count += 1
        return count


def test_a_transport_that_delivers_outside_the_cluster() -> None:
    transport = SteppedTransport()
    cluster = Cluster(3, config=SMALL, transport=transport)
    tp = TopicPartition("t", 0)
    cluster.create_topic("t", 1, 3)
    assert cluster.broker(0).replica_manager.partitions == {}  # nothing delivered yet
    assert transport.deliver_all() > 0  # metadata, LeaderAndIsr, then the followers' fetches
    assert cluster.broker(0).replica_manager.is_leader(tp)
    call = Client(cluster).produce(tp, [b"a"], acks=-1)
    assert not call.done
    for _ in range(3):  # request, follower fetches, the fetch that confirms, the response
        transport.deliver_all()
        cluster.advance(500)
    assert call.result(ProduceResponse).responses[tp].error is Errors.NONE
    assert cluster.controller.partition_state(tp) == PartitionState(0, 0, (0, 1, 2), (0, 1, 2))


def test_held_requests_wait_for_release() -> None:
    transport = ImmediateTransport(hold=lambda source, _dst, _req: source.startswith("broker-"))
    cluster = Cluster(2, config=SMALL, transport=transport)
    tp = TopicPartition("t", 0)
    cluster.create_topic("t", 1, 2)
    assert len(transport.held) >= 1  # follower fetches wait; controller requests went through
    call = Client(cluster).produce(tp, [b"a"], acks=-1)
    assert not call.done
    for _ in range(20):  # a released fetch may wait at the leader: then time must pass
        if call.done:
            break
        if transport.held:
            transport.release(0)
            cluster.run_until_idle()
        else:
            cluster.advance(100)
    assert call.result(ProduceResponse).responses[tp].error is Errors.NONE
    with pytest.raises(IndexError):
        transport.release(len(transport.held))


def test_call_result_checks_presence_and_type() -> None:
    cluster = Cluster(3, config=SMALL)
    cluster.create_topic("t", 1, 3)
    pending = Client(cluster).fetch(TopicPartition("t", 0), 0, max_wait_ms=100)
    with pytest.raises(UnexpectedResponseError, match=r"expected a FetchResponse .* got None"):
        pending.result(FetchResponse)
    cluster.advance(100)
    assert pending.result(FetchResponse).error is Errors.NONE
    with pytest.raises(UnexpectedResponseError, match="expected a ProduceResponse"):
        pending.result(ProduceResponse)


def test_followers_fetch_in_sessions_sending_only_what_changed() -> None:
    cluster = Cluster(3, config=SMALL)
    tp = TopicPartition("t", 0)
    cluster.create_topic("t", 1, 3)  # leader 0; broker 0 leads __consumer_offsets-0 too
    client = Client(cluster)
    sessions = cluster.broker(0).apis.fetch_manager.cache
    fetcher = cluster.broker(1).replica_manager.fetcher_manager.fetchers[0]
    first = client.produce(tp, [b"a"], acks=-1)
    cluster.advance(1_000)  # the followers' first fetches, parked before "t" existed, expire
    first.result(ProduceResponse)
    # One privileged session per follower on the leader; the parked fetch is incremental and
    # sends only what changed since the last one (nothing: both partitions are idle).
    in_flight = fetcher.in_flight
    assert in_flight is not None and len(in_flight.fetch_infos) == 2
    assert in_flight.session.metadata.epoch >= 1 and dict(in_flight.session.to_send) == {}
    assert len(sessions) == 2
    assert all(sessions.get(s).privileged for s in (1, 2))  # type: ignore[union-attr]
    # Records still replicate; the follower sends the new offset of the one partition.
    client.produce(tp, [b"b"], acks=-1).result(ProduceResponse)
    assert cluster.broker(1).replica_manager.log_end_offset(tp) == 2
    in_flight = fetcher.in_flight
    assert in_flight is not None and list(in_flight.session.to_send) == [tp]
    # A session the leader lost: the follower's next fetch is answered with a session error,
    # and the one after is full again.
    for session_id in (1, 2):
        sessions.remove(session_id)
    client.produce(tp, [b"c"], acks=-1).result(ProduceResponse)
    cluster.advance(1_000)
    assert cluster.broker(1).replica_manager.log_end_offset(tp) == 3
    assert len(sessions) == 2 and sessions.get(1) is None and sessions.get(2) is None

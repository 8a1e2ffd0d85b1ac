"""Invalid requests: exactly one response, the right error code, and no state change."""

from __future__ import annotations

from typing import Any

import pytest

from apis import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    Errors,
    FetchRequest,
    FetchResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionFetchInfo,
    ProduceRequest,
    ProduceResponse,
    RequestBody,
    ResponseBody,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from replica.config import BrokerConfig
from replica.records import Record
from replica.types import GROUP_METADATA_TOPIC_NAME, PartitionState, TopicPartition
from tests.apis.single_broker import T0, T1, TOPIC, SingleBroker

UNKNOWN = TopicPartition("no-such-topic", 0)
UNKNOWN_PARTITION = TopicPartition(TOPIC, 7)
RECORDS = [Record(b"k", b"value")]


def answer(broker: SingleBroker, body: RequestBody) -> ResponseBody:
    """Send an invalid request: its one response comes at once and nothing changes."""
    before = broker.state()
    response = broker.request(body).body
    broker.advance(60_000)  # nothing was left waiting either
    assert broker.responses() == []
    assert broker.state() == before
    return response


@pytest.fixture
def broker() -> SingleBroker:
    b = SingleBroker(BrokerConfig(message_max_bytes=200))
    b.request(ProduceRequest(1, 1000, {T0: RECORDS, T1: RECORDS}))
    return b


@pytest.mark.parametrize("acks", [2, -2, 100])
def test_produce_invalid_acks(broker: SingleBroker, acks: int) -> None:
    response = answer(broker, ProduceRequest(acks, 1000, {T0: RECORDS, T1: RECORDS}))
    assert isinstance(response, ProduceResponse)
    assert {tp: r.error for tp, r in response.responses.items()} == {
        T0: Errors.INVALID_REQUIRED_ACKS,
        T1: Errors.INVALID_REQUIRED_ACKS,
    }


@pytest.mark.parametrize("acks", [-1, 0, 1])
def test_a_negative_produce_timeout_is_not_an_error(broker: SingleBroker, acks: int) -> None:
    # Kafka validates no produce timeout (KafkaApis.handleProduceRequest): the records are
    # appended; acks=-1 with nothing to wait for (the ISR is the leader) succeeds at once.
    response = broker.request(ProduceRequest(acks, -1, {T0: RECORDS})).body
    assert isinstance(response, ProduceResponse)
    assert response.responses[T0].error is Errors.NONE
    assert broker.rm.log_end_offset(T0) == 2


def test_acks_all_with_a_negative_timeout_expires_at_once(broker: SingleBroker) -> None:
    # As in Kafka, a negative timeout is a deadline already passed: the produce waits for no
    # replication, it expires at the broker's next timer run, with no time passing.
    broker.request(LeaderAndIsrRequest(1, 1, {T0: PartitionState(0, 1, (0, 1), (0, 1))}))
    request = broker.send(ProduceRequest(-1, -1, {T0: RECORDS}))
    assert broker.responses() == []
    assert broker.rm.next_deadline() == broker.now
    broker.advance(0)
    [response] = broker.responses()
    assert response.request is request
    assert isinstance(response.body, ProduceResponse)
    assert response.body.responses[T0].error is Errors.REQUEST_TIMED_OUT


@pytest.mark.parametrize("tp", [UNKNOWN, UNKNOWN_PARTITION])
def test_produce_unknown_partition(broker: SingleBroker, tp: TopicPartition) -> None:
    response = answer(broker, ProduceRequest(-1, 1000, {tp: RECORDS}))
    assert isinstance(response, ProduceResponse)
    assert response.responses[tp].error is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_produce_records_over_max_message_size(broker: SingleBroker) -> None:
    response = answer(broker, ProduceRequest(-1, 1000, {T0: [Record(None, b"x" * 300)]}))
    assert isinstance(response, ProduceResponse)
    assert response.responses[T0].error is Errors.MESSAGE_TOO_LARGE


def test_produce_to_internal_topic_is_refused(broker: SingleBroker) -> None:
    tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, 0)
    response = answer(broker, ProduceRequest(1, 1000, {tp: RECORDS}))
    assert isinstance(response, ProduceResponse)
    assert response.responses[tp].error is Errors.INVALID_TOPIC_EXCEPTION


def test_produce_with_no_records(broker: SingleBroker) -> None:
    response = answer(broker, ProduceRequest(1, 1000, {T0: []}))
    assert isinstance(response, ProduceResponse)
    assert response.responses[T0].error is Errors.INVALID_RECORD


def test_invalid_acks_zero_request_still_gets_its_one_no_op_response(broker: SingleBroker) -> None:
    request = broker.send(ProduceRequest(0, 1000, {T0: []}))
    [response] = broker.responses()
    assert response.request is request
    assert not request.expects_response
    assert isinstance(response.body, ProduceResponse)
    assert response.body.responses[T0].error is Errors.INVALID_RECORD


def test_produce_mixed_partitions_appends_only_the_valid_ones(broker: SingleBroker) -> None:
    before = broker.rm.log_end_offset(T0)
    response = broker.request(ProduceRequest(1, 1000, {UNKNOWN: RECORDS, T0: RECORDS})).body
    assert isinstance(response, ProduceResponse)
    assert list(response.responses) == [UNKNOWN, T0]  # the request's order
    assert response.responses[UNKNOWN].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert response.responses[T0].error is Errors.NONE
    assert broker.rm.log_end_offset(T0) == (before or 0) + 1


def test_a_negative_fetch_max_wait_answers_at_once(broker: SingleBroker) -> None:
    # Kafka validates no max wait (KafkaApis.handleFetchRequest): a fetch with
    # max_wait_ms <= 0 is answered at once with what is there, here nothing.
    response = broker.request(FetchRequest({T0: PartitionFetchInfo(1, 1000)}, max_wait_ms=-1))
    assert isinstance(response.body, FetchResponse)
    assert (response.body.error, response.body.responses[T0].error) == (Errors.NONE, Errors.NONE)
    assert response.body.responses[T0].records == ()


@pytest.mark.parametrize("fields", [{"min_bytes": -1}, {"max_bytes": -1}])
def test_fetch_negative_values(broker: SingleBroker, fields: dict[str, Any]) -> None:
    response = answer(broker, FetchRequest({T0: PartitionFetchInfo(0, 1000)}, **fields))
    assert isinstance(response, FetchResponse)
    assert response.error is Errors.INVALID_REQUEST
    assert response.responses[T0].error is Errors.INVALID_REQUEST


def test_fetch_negative_partition_max_bytes(broker: SingleBroker) -> None:
    response = answer(broker, FetchRequest({T0: PartitionFetchInfo(0, -1)}))
    assert isinstance(response, FetchResponse)
    assert response.responses[T0].error is Errors.INVALID_REQUEST


@pytest.mark.parametrize("tp", [UNKNOWN, UNKNOWN_PARTITION])
def test_fetch_unknown_partition(broker: SingleBroker, tp: TopicPartition) -> None:
    response = answer(broker, FetchRequest({tp: PartitionFetchInfo(0, 1000)}))
    assert isinstance(response, FetchResponse)
    assert response.responses[tp].error is Errors.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize("offset", [-1, 2, 1_000])
def test_fetch_offset_out_of_range(broker: SingleBroker, offset: int) -> None:
    response = answer(broker, FetchRequest({T0: PartitionFetchInfo(offset, 1000)}))
    assert isinstance(response, FetchResponse)
    data = response.responses[T0]
    assert data.error is Errors.OFFSET_OUT_OF_RANGE
    assert data.records == ()


def test_consumer_fetch_hides_the_log_end_offset(broker: SingleBroker) -> None:
    response = broker.request(FetchRequest({T0: PartitionFetchInfo(0, 1000)})).body
    assert isinstance(response, FetchResponse)
    assert response.responses[T0].records
    assert response.responses[T0].log_end_offset == -1


def test_commit_metadata_too_large(broker: SingleBroker) -> None:
    limit = broker.config.offsets.offset_metadata_max_bytes
    partition = OffsetCommitRequestPartition(5, "m" * (limit + 1))
    response = answer(broker, OffsetCommitRequest("group-a", {T0: partition}))
    assert isinstance(response, OffsetCommitResponse)
    assert response.errors == {T0: Errors.OFFSET_METADATA_TOO_LARGE}


def test_commit_unknown_topic(broker: SingleBroker) -> None:
    request = OffsetCommitRequest("group-a", {UNKNOWN: OffsetCommitRequestPartition(5)})
    response = answer(broker, request)
    assert isinstance(response, OffsetCommitResponse)
    assert response.errors == {UNKNOWN: Errors.UNKNOWN_TOPIC_OR_PARTITION}


def test_commit_empty_group_id(broker: SingleBroker) -> None:
    response = answer(broker, OffsetCommitRequest("", {T0: OffsetCommitRequestPartition(5)}))
    assert isinstance(response, OffsetCommitResponse)
    assert response.errors == {T0: Errors.INVALID_GROUP_ID}


def test_commit_and_fetch_for_a_group_coordinated_elsewhere(broker: SingleBroker) -> None:
    partition = broker.om.partition_for("group-b")
    broker.request(
        LeaderAndIsrRequest(
            1,
            1,
            {
                TopicPartition(GROUP_METADATA_TOPIC_NAME, partition): PartitionState(
                    1, 1, (1,), (0, 1)
                )
            },
        )
    )
    commit = answer(broker, OffsetCommitRequest("group-b", {T0: OffsetCommitRequestPartition(5)}))
    assert isinstance(commit, OffsetCommitResponse)
    assert commit.errors == {T0: Errors.NOT_COORDINATOR}
    fetch = answer(broker, OffsetFetchRequest("group-b"))
    assert isinstance(fetch, OffsetFetchResponse)
    assert fetch.error is Errors.NOT_COORDINATOR
    assert fetch.offsets == {}


def test_list_offsets_errors(broker: SingleBroker) -> None:
    response = answer(
        broker,
        ListOffsetsRequest(
            {UNKNOWN: LATEST_TIMESTAMP, T0: -3, T1: LATEST_TIMESTAMP},
            current_leader_epochs={T1: 5},
        ),
    )
    assert isinstance(response, ListOffsetsResponse)
    assert {tp: r.error for tp, r in response.responses.items()} == {
        UNKNOWN: Errors.UNKNOWN_TOPIC_OR_PARTITION,
        T0: Errors.INVALID_REQUEST,
        T1: Errors.UNKNOWN_LEADER_EPOCH,
    }


def test_list_offsets_latest_earliest_and_by_timestamp(broker: SingleBroker) -> None:
    broker.request(
        ProduceRequest(1, 1000, {T1: [Record(None, b"a", 100), Record(None, b"b", 200)]})
    )
    response = broker.request(
        ListOffsetsRequest({T0: LATEST_TIMESTAMP, T1: EARLIEST_TIMESTAMP})
    ).body
    assert isinstance(response, ListOffsetsResponse)
    assert (response.responses[T0].offset, response.responses[T0].leader_epoch) == (1, 0)
    assert response.responses[T1].offset == 0
    by_time = broker.request(ListOffsetsRequest({T1: 150})).body
    assert isinstance(by_time, ListOffsetsResponse)
    found = by_time.responses[T1]
    assert (found.error, found.offset, found.timestamp) == (Errors.NONE, 2, 200)
    none = broker.request(ListOffsetsRequest({T1: 10_000})).body
    assert isinstance(none, ListOffsetsResponse)
    assert none.responses[T1].offset == -1


def test_metadata_unknown_topic(broker: SingleBroker) -> None:
    response = answer(broker, MetadataRequest([TOPIC, "no-such-topic"]))
    assert isinstance(response, MetadataResponse)
    assert response.topics["no-such-topic"].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert response.topics[TOPIC].error is Errors.NONE
    assert sorted(response.topics[TOPIC].partitions) == [0, 1]


def test_find_coordinator(broker: SingleBroker) -> None:
    invalid = answer(broker, FindCoordinatorRequest(""))
    assert isinstance(invalid, FindCoordinatorResponse)
    assert invalid.error is Errors.INVALID_GROUP_ID
    found = broker.request(FindCoordinatorRequest("group-a")).body
    assert isinstance(found, FindCoordinatorResponse)
    assert found.error is Errors.NONE
    assert found.coordinator is not None and found.coordinator.broker_id == 0


def test_stale_controller_epoch(broker: SingleBroker) -> None:
    stale_state = {T0: PartitionState(0, 9, (0,), (0,))}
    response = answer(broker, LeaderAndIsrRequest(1, 0, stale_state))
    assert isinstance(response, LeaderAndIsrResponse)
    assert response.error is Errors.STALE_CONTROLLER_EPOCH
    assert broker.rm.leader_epoch(T0) == 0
    update = answer(broker, UpdateMetadataRequest(1, 0, [], stale_state))
    assert isinstance(update, UpdateMetadataResponse)
    assert update.error is Errors.STALE_CONTROLLER_EPOCH
    assert broker.cache.alive_brokers() != []

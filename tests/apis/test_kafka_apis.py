"""KafkaApis: one response per request even when a manager raises; dispatch; the thin path."""

from __future__ import annotations

import importlib.util
import inspect
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

import attrs
import pytest

from apis import (
    BrokerEndpoint,
    Errors,
    FetchRequest,
    FetchResponse,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaderAndIsrRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    PartitionFetchInfo,
    ProduceRequest,
    ProduceResponse,
    Request,
    RequestBody,
    RequestHeader,
    RequestHeaderMismatchError,
    StopReplicaRequest,
    StopReplicaResponse,
    SyncGroupRequest,
    UpdateMetadataRequest,
)
from apis.api_table import API_TABLE, response_errors
from apis.body_fields import body_fields, replace
from apis.header import ApiKeys
from coordinator import OffsetsPartitionStatus
from replica.records import Record
from replica.types import (
    GROUP_METADATA_TOPIC_NAME,
    PartitionResponse,
    PartitionState,
    TopicPartition,
)
from tests.apis.single_broker import T0, SingleBroker
from tests.builds import compiled

RECORDS = [Record(b"k", b"v")]


def test_manager_exception_becomes_unknown_server_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broker = SingleBroker()

    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(broker.rm, "append_messages", boom)
    with caplog.at_level(logging.ERROR, logger="apis.kafka_apis"):
        response = broker.request(ProduceRequest(-1, 1000, {T0: RECORDS})).body
    assert isinstance(response, ProduceResponse)
    assert response.responses[T0].error is Errors.UNKNOWN_SERVER_ERROR
    assert broker.apis.unknown_server_errors == 1
    assert "disk on fire" in caplog.text


def test_exception_after_responding_sends_no_second_response(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broker = SingleBroker()

    def answer_then_raise(
        _timeout: int,
        _acks: int,
        entries: dict[TopicPartition, object],
        callback: Callable[[dict[TopicPartition, PartitionResponse]], None],
        **_options: object,
    ) -> None:
        callback({tp: PartitionResponse(Errors.NONE, 0) for tp in entries})
        raise RuntimeError("after the fact")

    monkeypatch.setattr(broker.rm, "append_messages", answer_then_raise)
    response = broker.request(ProduceRequest(1, 1000, {T0: RECORDS})).body
    assert isinstance(response, ProduceResponse)
    assert response.responses[T0].error is Errors.NONE
    assert broker.apis.unknown_server_errors == 1


def test_callback_after_the_error_response_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    broker = SingleBroker()
    saved: list[Callable[[dict[TopicPartition, Errors]], None]] = []

    def keep_then_raise(
        _group: str, offsets: object, callback: Callable[[dict[TopicPartition, Errors]], None]
    ) -> None:
        saved.append(callback)
        raise RuntimeError("lost the group lock")

    monkeypatch.setattr(broker.om, "put_offsets", keep_then_raise)
    response = broker.request(
        OffsetCommitRequest("group-a", {T0: OffsetCommitRequestPartition(1)})
    ).body
    assert isinstance(response, OffsetCommitResponse)
    assert response.errors == {T0: Errors.UNKNOWN_SERVER_ERROR}
    saved[0]({T0: Errors.NONE})  # the manager's late answer
    assert broker.responses() == []


def test_header_must_match_body() -> None:
    with pytest.raises(RequestHeaderMismatchError, match="FETCH does not match a ProduceRequest"):
        Request(RequestHeader(ApiKeys.FETCH, 1), ProduceRequest(1, 0, {}))


def test_responses_keep_order_and_pair_with_requests() -> None:
    broker = SingleBroker()
    first = broker.send(MetadataRequest())
    second = broker.send(ProduceRequest(1, 1000, {T0: RECORDS}))
    responses = broker.responses()
    assert [r.request for r in responses] == [first, second]
    assert [r.correlation_id for r in responses] == [
        first.header.correlation_id,
        second.header.correlation_id,
    ]
    assert broker.channel.responses_sent == 2 + 2  # the two set-up requests too


def test_long_poll_fetch_answers_when_data_arrives() -> None:
    broker = SingleBroker()
    fetch = broker.send(FetchRequest({T0: PartitionFetchInfo(0, 1000)}, max_wait_ms=500))
    assert broker.responses() == []
    broker.advance(100)
    produce = broker.send(ProduceRequest(1, 1000, {T0: RECORDS}))
    responses = broker.responses()
    assert [r.request for r in responses] == [produce, fetch]
    body = responses[1].body
    assert isinstance(body, FetchResponse)
    assert [b.records for b in body.responses[T0].records] == [tuple(RECORDS)]


def test_long_poll_fetch_expires_empty_at_max_wait() -> None:
    broker = SingleBroker()
    fetch = broker.send(FetchRequest({T0: PartitionFetchInfo(0, 1000)}, max_wait_ms=500))
    broker.advance(499)
    assert broker.responses() == []
    broker.advance(1)
    [response] = broker.responses()
    assert response.request is fetch
    assert isinstance(response.body, FetchResponse)
    assert response.body.responses[T0].records == ()


def test_commit_then_offset_fetch() -> None:
    broker = SingleBroker()
    broker.now = 777
    commit = broker.request(
        OffsetCommitRequest("group-a", {T0: OffsetCommitRequestPartition(42, "meta", 3)})
    ).body
    assert isinstance(commit, OffsetCommitResponse)
    assert commit.errors == {T0: Errors.NONE}
    fetched = broker.request(OffsetFetchRequest("group-a", [T0])).body
    assert isinstance(fetched, OffsetFetchResponse)
    assert fetched.error is Errors.NONE
    assert fetched.offsets[T0].offset == 42
    assert fetched.offsets[T0].metadata == "meta"
    assert fetched.offsets[T0].leader_epoch == 3
    assert broker.om.get_offsets("group-a", [T0]).offsets[T0].commit_timestamp == 777


def test_stop_replica_of_an_offsets_partition_resigns_it() -> None:
    broker = SingleBroker()
    partition = broker.om.partition_for("group-a")
    tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, partition)
    assert broker.om.partition_status(partition) is OffsetsPartitionStatus.ACTIVE
    response = broker.request(StopReplicaRequest(1, 1, [tp, T0])).body
    assert isinstance(response, StopReplicaResponse)
    assert response.partition_errors == {tp: Errors.NONE, T0: Errors.NONE}
    assert broker.om.partition_status(partition) is OffsetsPartitionStatus.NOT_OWNED
    fetched = broker.request(OffsetFetchRequest("group-a")).body
    assert isinstance(fetched, OffsetFetchResponse)
    assert fetched.error is Errors.NOT_COORDINATOR
    produce = broker.request(ProduceRequest(1, 1000, {T0: RECORDS})).body
    assert isinstance(produce, ProduceResponse)
    assert produce.responses[T0].error is Errors.NOT_LEADER_OR_FOLLOWER


def test_a_deleted_replica_of_a_known_partition_answers_not_leader_or_follower() -> None:
    # The metadata cache still has the partition (moved elsewhere): Kafka's
    # getPartitionOrError answers NOT_LEADER_OR_FOLLOWER, so clients refresh their metadata,
    # for requests that arrive later and for those that were waiting.
    broker = SingleBroker()
    waiting = broker.send(FetchRequest({T0: PartitionFetchInfo(0, 1000)}, max_wait_ms=500))
    stop = broker.send(StopReplicaRequest(1, 1, [T0], delete_partitions=True))
    answered, stopped = broker.responses()
    assert (answered.request, stopped.request) == (waiting, stop)
    assert isinstance(answered.body, FetchResponse)
    assert answered.body.responses[T0].error is Errors.NOT_LEADER_OR_FOLLOWER
    produce = broker.request(ProduceRequest(1, 1000, {T0: RECORDS})).body
    assert isinstance(produce, ProduceResponse)
    assert produce.responses[T0].error is Errors.NOT_LEADER_OR_FOLLOWER
    fetch = broker.request(FetchRequest({T0: PartitionFetchInfo(0, 1000)})).body
    assert isinstance(fetch, FetchResponse)
    assert fetch.responses[T0].error is Errors.NOT_LEADER_OR_FOLLOWER


def test_min_bytes_above_max_bytes_is_capped_and_the_fetch_answers_at_once() -> None:
    # KAFKA-9101 (2.5): min_bytes is capped at the fetch's effective max_bytes, so a fetch
    # that asks for more than it may receive does not wait out max_wait_ms with data there.
    broker = SingleBroker()
    broker.request(ProduceRequest(1, 1000, {T0: RECORDS}))
    fetch = broker.send(
        FetchRequest(
            {T0: PartitionFetchInfo(0, 1000)}, max_wait_ms=500, min_bytes=10_000, max_bytes=60
        )
    )
    [response] = broker.responses()
    assert response.request is fetch
    assert isinstance(response.body, FetchResponse)
    assert [b.records for b in response.body.responses[T0].records] == [tuple(RECORDS)]


@pytest.mark.parametrize("replica_id", [-1, 1])
def test_fetch_max_bytes_caps_every_fetch_and_its_min_bytes(
    monkeypatch: pytest.MonkeyPatch, replica_id: int
) -> None:
    # KafkaApis.handleFetchRequest: max_bytes = min(request, fetch.max.bytes) for consumers and
    # followers alike, then min_bytes = min(request, max_bytes).
    broker = SingleBroker()
    broker.apis.config = attrs.evolve(broker.config, fetch_max_bytes=2048)
    original = broker.rm.fetch_messages
    seen: list[tuple[object, ...]] = []

    def capture(*args: Any, **kwargs: Any) -> None:
        seen.append((args[2], args[4]))  # min_bytes, max_bytes
        original(*args, **kwargs)

    monkeypatch.setattr(broker.rm, "fetch_messages", capture)
    broker.request(
        FetchRequest(
            {T0: PartitionFetchInfo(0, 1000)},
            max_wait_ms=0,
            min_bytes=5000,
            max_bytes=4096,
            replica_id=replica_id,
        )
    )
    assert seen == [(2048, 2048)]


# -- requests whose fields have the wrong Python types -------------------------------------------

SAMPLES: dict[ApiKeys, RequestBody] = {
    ApiKeys.PRODUCE: ProduceRequest(-1, 1000, {T0: RECORDS}),
    ApiKeys.FETCH: FetchRequest({T0: PartitionFetchInfo(0, 1000)}),
    ApiKeys.LIST_OFFSETS: ListOffsetsRequest({T0: -1}),
    ApiKeys.METADATA: MetadataRequest(["orders"]),
    ApiKeys.LEADER_AND_ISR: LeaderAndIsrRequest(1, 1, {T0: PartitionState(0, 0, (0,), (0,))}),
    ApiKeys.STOP_REPLICA: StopReplicaRequest(1, 1, [T0]),
    ApiKeys.UPDATE_METADATA: UpdateMetadataRequest(1, 1, [BrokerEndpoint(0)], {}),
    ApiKeys.OFFSET_COMMIT: OffsetCommitRequest("g", {T0: OffsetCommitRequestPartition(1)}),
    ApiKeys.OFFSET_FETCH: OffsetFetchRequest("g", [T0]),
    ApiKeys.FIND_COORDINATOR: FindCoordinatorRequest("g"),
    ApiKeys.JOIN_GROUP: JoinGroupRequest("g", 10_000, [JoinGroupRequestProtocol("range")]),
    ApiKeys.HEARTBEAT: HeartbeatRequest("g", 1, "m"),
    ApiKeys.LEAVE_GROUP: LeaveGroupRequest("g", ["m"]),
    ApiKeys.SYNC_GROUP: SyncGroupRequest("g", 1, "m", {"m": b""}),
    ApiKeys.OFFSET_FOR_LEADER_EPOCH: OffsetForLeaderEpochRequest(
        {T0: OffsetForLeaderEpochPartition(0)}
    ),
}
MALFORMED = [
    pytest.param(key, name, wrong, id=f"{API_TABLE[key].name}.{name}={wrong!r}")
    for key, body in SAMPLES.items()
    for name, tp in body_fields(type(body))
    for wrong in (None, 1.5, b"x")  # no field is a float or bytes
    if not (wrong is None and type(None) in get_args(tp))
]


@pytest.mark.parametrize(("key", "name", "wrong"), MALFORMED)
def test_a_field_of_the_wrong_type_gets_one_invalid_request_response(
    key: ApiKeys, name: str, wrong: object
) -> None:
    broker = SingleBroker()
    before = broker.state()
    try:
        body = replace(SAMPLES[key], {name: wrong})
    except TypeError:
        # Compiled, a native body's constructor checks the types of its parameters
        # (tests/builds.py) but a collection's: only those can be built wrong there.
        assert compiled(type(SAMPLES[key]))
        assert dict(body_fields(type(SAMPLES[key])))[name] not in (Mapping, Sequence)
        return
    request = broker.send(body)  # must not raise
    responses = broker.responses()
    assert [r.request for r in responses] == [request]
    response = responses[0].body
    assert isinstance(response, API_TABLE[key].response)
    assert set(response_errors(response)) <= {Errors.INVALID_REQUEST}
    assert broker.state() == before
    assert broker.apis.unknown_server_errors == 0


def _as_written(cls: type) -> type:
    """``cls`` as its source defines it, run by the interpreter: a compiled class keeps no
    signature or annotations to compare with, so its module's source is loaded again, under
    another name, as plain Python."""
    module = sys.modules[cls.__module__]
    source = Path(module.__file__ or "").with_name(cls.__module__.rpartition(".")[2] + ".py")
    spec = importlib.util.spec_from_file_location(f"_as_written_{cls.__module__}", source)
    assert spec is not None and spec.loader is not None
    plain = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plain)
    written: type = getattr(plain, cls.__name__)
    return written


@pytest.mark.parametrize(
    "cls", [api.request for api in API_TABLE.values() if hasattr(api.request, "FIELDS")]
)
def test_a_plain_body_declares_its_constructors_parameters(cls: type) -> None:
    written = _as_written(cls)
    hints = get_type_hints(vars(written)["__init__"])
    assert [name for name, _ in body_fields(cls)] == list(inspect.signature(written).parameters)
    for name, tp in body_fields(cls):
        container = get_origin(hints[name])  # declared shallowly, but a union as it is
        assert tp == (
            hints[name] if container in (Union, UnionType) else container or hints[name]
        ), name


def test_a_produce_without_records_is_answered_once_with_no_partition() -> None:
    broker = SingleBroker()
    response = broker.request(ProduceRequest(-1, 1000, None)).body  # type: ignore[arg-type]
    assert response == ProduceResponse({})
    fetch = broker.request(FetchRequest({T0: PartitionFetchInfo(0, 1000)}, forgotten=None)).body  # type: ignore[arg-type]
    assert isinstance(fetch, FetchResponse) and fetch.error is Errors.INVALID_REQUEST
    assert fetch.responses[T0].error is Errors.INVALID_REQUEST


def test_a_handler_called_directly_with_a_malformed_body_still_answers_once() -> None:
    broker = SingleBroker()
    request = Request.create(ProduceRequest(-1, 1000, None), correlation_id=99)  # type: ignore[arg-type]
    broker.apis.handle_produce(request)
    [response] = broker.responses()
    assert response.request is request and response.body == ProduceResponse({})
    assert broker.apis.unknown_server_errors == 1

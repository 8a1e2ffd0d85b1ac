"""The server over raw sockets: ApiVersions rules, bad frames close only their connection,
fuzzed byte streams never take the server down."""

from __future__ import annotations

import datetime
import io
import socket
import struct
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from apis import KafkaConfig, MetadataRequest
from coordinator import GroupConfig
from kafka_server import TRANSLATIONS, KafkaServer, ServerThread
from kafka_server.records import encode_batches
from kafka_server.translations import Translation, build, nested
from replica.records import Record, RecordBatch
from replica.types import TopicPartition


def frame(api_key: int, version: int, correlation_id: int, payload: Any = None) -> bytes:
    """A request frame; ``payload`` None: a body of no fields (ApiVersions v0-2)."""
    schema = load_request_schema(api_key, version)
    header_cls = schema.__header_schema__
    out = io.BytesIO()
    entity_writer(header_cls)(
        out, header_cls(request_api_key=api_key, request_api_version=version,
                        correlation_id=correlation_id, client_id="test")
    )  # fmt: skip
    entity_writer(schema)(out, payload if payload is not None else schema())
    data = out.getvalue()
    return struct.pack(">i", len(data)) + data


async def read_response(stream: trio.SocketStream, api_key: int, version: int) -> tuple[int, Any]:
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = await stream.receive_some()
        assert chunk, "the server closed the connection"
        data += chunk
    body = data[4:]
    schema = load_response_schema(api_key, version)
    header, offset = entity_reader(schema.__header_schema__)(body, 0)
    payload, _ = entity_reader(schema)(body, offset)
    return header.correlation_id, payload


async def closed(stream: trio.SocketStream) -> bool:
    """True if the server closes ``stream`` (within a second)."""
    with trio.move_on_after(1):
        try:
            while await stream.receive_some():
                pass
        except trio.BrokenResourceError:
            pass
        return True
    return False


@pytest.fixture
async def server(nursery: trio.Nursery) -> AsyncIterator[KafkaServer]:
    started: KafkaServer = await nursery.start(KafkaServer(3).serve)
    yield started
    nursery.cancel_scope.cancel()


async def connect(server: KafkaServer, broker: int = 0) -> trio.SocketStream:
    host, port = server.addresses[broker]
    return await trio.open_tcp_stream(host, port)


async def test_api_versions_in_every_version_and_fallback(server: KafkaServer) -> None:
    stream = await connect(server)
    for version in range(5):
        payload = None
        if version >= 3:
            payload = load_request_schema(18, version)(
                client_software_name="t", client_software_version="1"
            )
        await stream.send_all(frame(18, version, version, payload))
        correlation_id, response = await read_response(stream, 18, version)
        assert correlation_id == version
        assert response.error_code == ErrorCode.none
        advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert advertised == {
            t.api_key: (t.min_version, t.max_version) for t in TRANSLATIONS.values()
        }
    # A version the server does not know: v0 UNSUPPORTED_VERSION with the list, then usable.
    bogus = bytearray(frame(18, 3, 99, load_request_schema(18, 3)(
        client_software_name="t", client_software_version="1")))  # fmt: skip
    bogus[6:8] = (77).to_bytes(2, "big")
    await stream.send_all(bytes(bogus))
    correlation_id, response = await read_response(stream, 18, 0)
    assert (correlation_id, response.error_code) == (99, ErrorCode.unsupported_version)
    assert len(response.api_keys) == len(TRANSLATIONS)
    await stream.send_all(frame(18, 0, 100))
    assert (await read_response(stream, 18, 0))[0] == 100


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">i", -5),  # negative size
        struct.pack(">i", 104_857_601),  # over socket.request.max.bytes
        struct.pack(">i", 8) + struct.pack(">hhi", 1000, 0, 1),  # unknown API key
        struct.pack(">i", 8) + struct.pack(">hhi", 3, 99, 1),  # unknown Metadata version
        struct.pack(">i", 9) + struct.pack(">hhi", 3, 5, 1) + b"\xff",  # body does not parse
        struct.pack(">i", 3) + b"abc",  # shorter than a header
        # Metadata v0 whose topics array is null (nullable from v1 only; kio reads it as None)
        struct.pack(">i", 17) + struct.pack(">hhih", 3, 0, 1, 3) + b"cli" + struct.pack(">i", -1),
        # Produce v3 with a null partition array inside a topic (never nullable)
        struct.pack(">i", 32) + struct.pack(">hhih", 0, 3, 1, 3) + b"cli"
        + struct.pack(">hhiih", -1, -1, 1000, 1, 1) + b"t" + struct.pack(">i", -1),
    ],
    ids=[
        "negative", "oversize", "unknown-key", "unknown-version", "garbage-body", "short",
        "null-in-v0", "nested-null",
    ],
)  # fmt: skip
async def test_bad_frames_close_only_their_connection(server: KafkaServer, data: bytes) -> None:
    bystander = await connect(server)
    bad = await connect(server)
    await bad.send_all(data)
    assert await closed(bad)
    await bystander.send_all(frame(18, 0, 7))
    assert (await read_response(bystander, 18, 0))[0] == 7


async def test_client_vanishing_mid_frame_and_mid_long_poll(server: KafkaServer) -> None:
    half = await connect(server)
    await half.send_all(frame(18, 0, 1)[:5])
    await half.aclose()
    # A consumer's long poll in purgatory, then the client disappears.
    metadata = load_request_schema(3, 5)
    stream = await connect(server)
    topic_cls = _nested(metadata, "topics")
    request = metadata(topics=(topic_cls(name="lp"),), allow_auto_topic_creation=True)
    await stream.send_all(frame(3, 5, 1, request))
    _, response = await read_response(stream, 3, 5)
    assert [t.name for t in response.topics] == ["lp"]
    assert response.topics[0].error_code == ErrorCode.none
    fetch = load_request_schema(1, 11)
    fetch_cls = _nested(fetch, "topics")
    part_cls = _nested(fetch_cls, "partitions")
    leader = server.cluster.leader(_tp("lp", 0))
    stream = await connect(server, leader)
    body = fetch(
        replica_id=-1, max_wait=datetime.timedelta(seconds=5), min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=(fetch_cls(topic="lp", partitions=(part_cls(partition=0, current_leader_epoch=-1,
            fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 20),)),),
        forgotten_topics_data=(), rack_id="",
    )  # fmt: skip
    await stream.send_all(frame(1, 11, 2, body))
    await trio.sleep(0.05)
    await stream.aclose()
    other = await connect(server)
    await other.send_all(frame(18, 0, 3))
    assert (await read_response(other, 18, 0))[0] == 3


async def test_a_connection_silent_past_connections_max_idle_ms_is_closed(
    nursery: trio.Nursery,
) -> None:
    server: KafkaServer = await nursery.start(KafkaServer(1, connections_max_idle_ms=200).serve)
    stalled = await connect(server)
    await stalled.send_all(frame(18, 0, 1)[:5])  # a truncated frame, then silence
    silent = await connect(server)
    with trio.fail_after(10):  # both closed by the server, not by the test
        assert await stalled.receive_some() == b""
        assert await silent.receive_some() == b""
    fresh = await connect(server)  # the broker serves on
    await fresh.send_all(frame(18, 0, 2))
    assert (await read_response(fresh, 18, 0))[0] == 2


def test_connections_max_idle_ms_must_be_positive() -> None:
    with pytest.raises(ValueError, match="connections_max_idle_ms must be >= 1, got 0"):
        KafkaServer(1, connections_max_idle_ms=0)


def _nested(cls: type, field: str) -> type:
    return nested(cls, field)


def _tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


@pytest.fixture(scope="module")
def threaded() -> Any:
    with ServerThread(brokers=1) as server:
        yield server


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    chunks=st.lists(
        st.one_of(
            st.binary(max_size=64),
            st.builds(
                lambda n, b: struct.pack(">i", n) + b, st.integers(0, 200), st.binary(max_size=40)
            ),
            st.sampled_from([frame(18, 0, 1), frame(18, 2, 2)]),
            st.builds(
                lambda f, cut: f[:cut], st.sampled_from([frame(18, 1, 3)]), st.integers(0, 12)
            ),
        ),
        max_size=6,
    )
)
def test_fuzzed_byte_streams_never_take_the_server_down(threaded: Any, chunks: list[bytes]) -> None:
    host, port = threaded.server.addresses[0]
    with socket.create_connection((host, port), timeout=2) as sock:
        for chunk in chunks:
            try:
                sock.sendall(chunk)
            except OSError:
                break  # the server closed this connection: allowed
    # Whatever that stream did, a fresh connection is served.
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(frame(18, 0, 42))
        data = b""
        while len(data) < 8:
            chunk = sock.recv(4096)
            assert chunk
            data += chunk
        assert struct.unpack(">i", data[4:8])[0] == 42


def _produce(topic: str, acks: int, records: bytes) -> Any:
    schema = load_request_schema(0, 7)
    topic_cls = nested(schema, "topic_data")
    partition_cls = nested(topic_cls, "partition_data")
    partition = partition_cls(index=0, records=records)
    return schema(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(topic_cls(name=topic, partition_data=(partition,)),),
    )


async def test_acks_0_gets_no_response_and_a_failed_one_closes(server: KafkaServer) -> None:
    server.cluster.create_topic("zero", 1, 3)
    leader = server.cluster.leader(_tp("zero", 0))
    records = encode_batches([RecordBatch(0, (Record(b"k", b"v", 1),), 70)])
    stream = await connect(server, leader)
    await stream.send_all(frame(0, 7, 1, _produce("zero", 0, records)))
    await stream.send_all(frame(18, 0, 2))
    assert (await read_response(stream, 18, 0))[0] == 2  # the produce got no response
    assert server.cluster.broker(leader).replica_manager.log_end_offset(_tp("zero", 0)) == 1
    # acks=1 with a truncated batch: answered INVALID_RECORD (no complete batch), nothing
    # appended
    await stream.send_all(frame(0, 7, 3, _produce("zero", 1, records[:-2])))
    correlation_id, response = await read_response(stream, 0, 7)
    assert correlation_id == 3
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.invalid_record
    # acks=0 with corrupt records: Kafka closes the connection so the producer notices
    await stream.send_all(frame(0, 7, 4, _produce("zero", 0, records[:-2])))
    assert await closed(stream)
    assert server.cluster.broker(leader).replica_manager.log_end_offset(_tp("zero", 0)) == 1


@pytest.mark.parametrize("where", ["serving", "answering"])
async def test_a_failing_translation_closes_only_its_connection(
    server: KafkaServer, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    def serve(request: Any, version: int, ctx: Any, reply: Any) -> None:
        if where == "serving":
            raise RuntimeError("a bug while serving")
        ctx.send(MetadataRequest(None), lambda response: reply(1 / 0))

    monkeypatch.setitem(TRANSLATIONS, 3, Translation(3, "Metadata", 0, 12, serve))  # type: ignore[index]
    bystander = await connect(server)
    broken = await connect(server)
    request = load_request_schema(3, 5)(topics=None, allow_auto_topic_creation=False)
    await broken.send_all(frame(3, 5, 1, request))
    assert await closed(broken)
    await bystander.send_all(frame(18, 0, 2))
    assert (await read_response(bystander, 18, 0))[0] == 2


async def test_a_stopped_broker_restarts_on_its_port(server: KafkaServer) -> None:
    address = server.addresses[1]
    server.stop_broker(1)
    with pytest.raises(OSError):
        await trio.open_tcp_stream(*address)
    metadata = load_request_schema(3, 5)(topics=None, allow_auto_topic_creation=False)
    stream = await connect(server, 0)
    await stream.send_all(frame(3, 5, 1, metadata))
    _, response = await read_response(stream, 3, 5)
    assert sorted(b.node_id for b in response.brokers) == [0, 2]
    server.restart_broker(1)
    assert server.addresses[1] == address
    restarted = await trio.open_tcp_stream(*address)
    await restarted.send_all(frame(3, 5, 2, metadata))
    _, response = await read_response(restarted, 3, 5)
    assert sorted(b.node_id for b in response.brokers) == [0, 1, 2]


async def test_an_idempotent_producers_retry_is_appended_once(server: KafkaServer) -> None:
    """InitProducerId, then the same batch twice (a retry after a lost response): the second
    gets the first one's offset and appends nothing; a gap in the sequence is refused; a
    fetch returns the batch with its producer's stamp."""
    server.cluster.create_topic("idem", 1, 3)
    leader = server.cluster.leader(_tp("idem", 0))
    stream = await connect(server, leader)
    init = load_request_schema(22, 4)(
        transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60),
        producer_id=-1, producer_epoch=-1,
    )  # fmt: skip
    await stream.send_all(frame(22, 4, 1, init))
    _, given_id = await read_response(stream, 22, 4)
    producer_id, epoch = given_id.producer_id, given_id.producer_epoch

    def stamped(base_sequence: int, count: int) -> bytes:
        records = tuple(Record(None, b"v%d" % (base_sequence + i), 1) for i in range(count))
        batch = RecordBatch(0, records, 100, -1, -1, producer_id, epoch, base_sequence)
        return encode_batches([batch])

    answers = []
    for correlation_id, (sequence, count) in enumerate([(0, 2), (2, 1), (2, 1), (0, 2), (5, 1)]):
        await stream.send_all(frame(0, 7, 10 + correlation_id, _produce(
            "idem", -1, stamped(sequence, count))))  # fmt: skip
        _, response = await read_response(stream, 0, 7)
        part = response.responses[0].partition_responses[0]
        answers.append((part.error_code, part.base_offset))
    assert answers == [
        (ErrorCode.none, 0),
        (ErrorCode.none, 2),
        (ErrorCode.none, 2),  # the retry: its first offset, nothing appended
        (ErrorCode.none, 0),
        (ErrorCode.out_of_order_sequence_number, -1),  # 3 and 4 never arrived
    ]
    assert server.cluster.broker(leader).replica_manager.log_end_offset(_tp("idem", 0)) == 3
    fetch = load_request_schema(1, 11)
    fetch_cls = _nested(fetch, "topics")
    part_cls = _nested(fetch_cls, "partitions")
    body = fetch(
        replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=(fetch_cls(topic="idem", partitions=(part_cls(partition=0, current_leader_epoch=-1,
            fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 20),)),),
        forgotten_topics_data=(), rack_id="",
    )  # fmt: skip
    await stream.send_all(frame(1, 11, 30, body))
    _, fetched = await read_response(stream, 1, 11)
    data = fetched.responses[0].partitions[0].records
    batches = list(MemoryRecords(bytes(data)))
    assert [(b.producer_id, b.base_sequence, b.base_offset) for b in batches] == [
        (producer_id, 0, 0),
        (producer_id, 2, 2),
    ]


def _fetch_request(version: int, topic: Any, *partitions: dict[str, Any], **fields: Any) -> Any:
    """A Fetch request of ``version`` for ``topic`` (a name, or an id from v13) with one entry
    per ``partitions`` item (``partition`` and ``fetch_offset`` required)."""
    schema = load_request_schema(1, version)
    topic_cls = nested(schema, "topics")
    part_cls = nested(topic_cls, "partitions")
    parts = tuple(
        build(part_cls, **{"current_leader_epoch": -1, "log_start_offset": -1,
                           "last_fetched_epoch": -1, "partition_max_bytes": 1 << 20, **p})
        for p in partitions
    )  # fmt: skip
    name = {"topic_id" if version >= 13 else "topic": topic}
    values = {
        "replica_id": -1, "max_wait": datetime.timedelta(0), "min_bytes": 0,
        "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": (build(topic_cls, **name, partitions=parts),) if parts else (),
        "forgotten_topics_data": (), "rack_id": "", **fields,
    }  # fmt: skip
    return build(schema, **values)


async def _fetch(stream: trio.SocketStream, version: int, request: Any) -> Any:
    await stream.send_all(frame(1, version, 1, request))
    return (await read_response(stream, 1, version))[1]


async def _produce_one(stream: trio.SocketStream, topic: str, value: bytes) -> None:
    records = encode_batches([RecordBatch(0, (Record(None, value, 1),), 70)])
    await stream.send_all(frame(0, 7, 2, _produce(topic, -1, records)))
    _, response = await read_response(stream, 0, 7)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


async def test_fetch_sessions_over_the_wire(nursery: trio.Nursery) -> None:
    """A v13 consumer fetch asks for a session (epoch 0) and gets one; its incremental fetches
    list nothing and get back only the partitions with news; a wrong epoch is refused."""
    server: KafkaServer = await nursery.start(KafkaServer(1).serve)
    server.cluster.create_topic("sess", 2, 1)
    stream = await connect(server, 0)
    # the topic's id, as a client learns it: Metadata v12, the same id every time
    metadata = load_request_schema(3, 12)
    ask = metadata(
        topics=(nested(metadata, "topics")(name="sess", topic_id=None),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    ids = []
    for number in (1, 2):
        await stream.send_all(frame(3, 12, number, ask))
        ids.append((await read_response(stream, 3, 12))[1].topics[0].topic_id)
    topic_id = ids[0]
    assert ids == [topic_id, topic_id] and topic_id.int != 0
    full = await _fetch(stream, 13, _fetch_request(
        13, topic_id, {"partition": 0, "fetch_offset": 0}, {"partition": 1, "fetch_offset": 0},
        session_epoch=0))  # fmt: skip
    session_id = full.session_id
    assert full.error_code == ErrorCode.none and session_id != 0
    assert [p.partition_index for p in full.responses[0].partitions] == [0, 1]
    await _produce_one(stream, "sess", b"news")  # to partition 0
    incremental = await _fetch(stream, 13, _fetch_request(
        13, topic_id, session_id=session_id, session_epoch=1))  # fmt: skip
    assert incremental.session_id == session_id
    [topic] = incremental.responses
    assert topic.topic_id == topic_id
    assert [p.partition_index for p in topic.partitions] == [0]
    assert [r.value for r in next(iter(MemoryRecords(bytes(topic.partitions[0].records))))] == [
        b"news"
    ]
    # the consumer moves its position on partition 0: only that changed fetch data is sent
    quiet = await _fetch(stream, 13, _fetch_request(
        13, topic_id, {"partition": 0, "fetch_offset": 1}, session_id=session_id,
        session_epoch=2))  # fmt: skip
    assert quiet.error_code == ErrorCode.none and quiet.responses == ()
    # epoch 2 again where 3 is due
    stale = await _fetch(stream, 13, _fetch_request(
        13, topic_id, session_id=session_id, session_epoch=2))  # fmt: skip
    assert stale.error_code == ErrorCode.invalid_fetch_session_epoch
    unknown = await _fetch(stream, 13, _fetch_request(
        13, uuid.uuid4(), {"partition": 0, "fetch_offset": 0}))  # fmt: skip
    assert unknown.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_id


async def test_a_fetch_whose_last_fetched_epoch_diverges_gets_the_diverging_epoch(
    server: KafkaServer,
) -> None:
    """Fetch v12+ carries the epoch of the consumer's last record (KIP-320): a log that does
    not continue it to the fetch offset is answered with where that epoch ends."""
    server.cluster.create_topic("div", 1, 3)
    first = server.cluster.leader(_tp("div", 0))
    stream = await connect(server, first)
    for value in (b"a", b"b"):
        await _produce_one(stream, "div", value)  # epoch 0: offsets 0 and 1
    server.stop_broker(first)
    second = server.cluster.leader(_tp("div", 0))
    stream = await connect(server, second)
    for value in (b"c", b"d"):
        await _produce_one(stream, "div", value)  # epoch 1: offsets 2 and 3
    for version in (12, 13):
        topic = server.topic_id("div") if version >= 13 else "div"
        past = {"partition": 0, "fetch_offset": 3, "last_fetched_epoch": 0}
        response = await _fetch(stream, version, _fetch_request(version, topic, past))
        part = response.responses[0].partitions[0]
        assert part.error_code == ErrorCode.none and part.records in (b"", None)
        assert (part.diverging_epoch.epoch, part.diverging_epoch.end_offset) == (0, 2)
        at_end = {"partition": 0, "fetch_offset": 2, "last_fetched_epoch": 0}
        response = await _fetch(stream, version, _fetch_request(version, topic, at_end))
        part = response.responses[0].partitions[0]
        assert part.diverging_epoch.epoch == -1  # epoch 0 reaches offset 2: no divergence
        assert [r.value for b in MemoryRecords(bytes(part.records)) for r in b] == [b"c", b"d"]


async def test_a_fetch_claiming_to_be_a_broker_reads_nothing(server: KafkaServer) -> None:
    """Followers replicate in process: a wire fetch with replica_id >= 0 gets
    NOT_LEADER_OR_FOLLOWER and moves no follower's state."""
    server.cluster.create_topic("peer", 1, 3)
    leader = server.cluster.leader(_tp("peer", 0))
    follower = next(b for b in server.cluster.brokers if b != leader)
    stream = await connect(server, leader)
    await _produce_one(stream, "peer", b"x")
    partition = server.cluster.broker(leader).replica_manager.partitions[_tp("peer", 0)]
    assert partition.remote_replicas[follower].log_end_offset == 1
    # as the follower, from offset 0: had it been taken, the follower would be behind again
    request = _fetch_request(11, "peer", {"partition": 0, "fetch_offset": 0}, replica_id=follower)
    part = (await _fetch(stream, 11, request)).responses[0].partitions[0]
    assert part.error_code == ErrorCode.not_leader_or_follower and not part.records
    assert partition.remote_replicas[follower].log_end_offset == 1


async def test_api_versions_refuses_a_malformed_client_software_name(
    server: KafkaServer,
) -> None:
    stream = await connect(server)
    for number, (name, software_version) in enumerate([("my app", "1.0"), ("app", "-1")]):
        request = load_request_schema(18, 3)(
            client_software_name=name, client_software_version=software_version
        )
        await stream.send_all(frame(18, 3, number, request))
        _, response = await read_response(stream, 18, 3)
        assert (response.error_code, response.api_keys) == (ErrorCode.invalid_request, ())
    request = load_request_schema(18, 3)(
        client_software_name="confluent-kafka-python", client_software_version="2.16.1-rdkafka"
    )
    await stream.send_all(frame(18, 3, 9, request))
    _, response = await read_response(stream, 18, 3)
    assert response.error_code == ErrorCode.none and response.api_keys


async def test_metadata_reports_authorized_operations_when_asked(server: KafkaServer) -> None:
    """No authorizer: every operation a topic (or the cluster) supports, as Kafka says;
    INT32_MIN when not asked."""
    server.cluster.create_topic("ops", 1, 3)
    stream = await connect(server)
    schema = load_request_schema(3, 8)
    topic_cls = nested(schema, "topics")
    for asked in (True, False):
        request = schema(
            topics=(topic_cls(name="ops"),), allow_auto_topic_creation=False,
            include_cluster_authorized_operations=asked,
            include_topic_authorized_operations=asked,
        )  # fmt: skip
        await stream.send_all(frame(3, 8, 1, request))
        _, response = await read_response(stream, 3, 8)
        topic_ops = response.topics[0].topic_authorized_operations
        cluster_ops = response.cluster_authorized_operations
        if not asked:
            assert topic_ops == cluster_ops == -(2**31)
            continue
        # READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
        assert {bit for bit in range(32) if topic_ops >> bit & 1} == {3, 4, 5, 6, 7, 8, 10, 11}
        # CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
        assert {bit for bit in range(32) if cluster_ops >> bit & 1} == {5, 7, 8, 9, 10, 11, 12}


async def test_init_producer_id_gives_a_new_id_as_kafka_does_without_transactions(
    server: KafkaServer,
) -> None:
    stream = await connect(server)
    schema = load_request_schema(22, 4)
    seen = []
    for number, (transactional_id, producer_id, epoch) in enumerate(
        [(None, -1, -1), (None, -1, -1), (None, 0, 3), ("", -1, -1), ("tx", -1, -1)]
    ):
        request = schema(
            transactional_id=transactional_id, transaction_timeout=datetime.timedelta(seconds=60),
            producer_id=producer_id, producer_epoch=epoch,
        )  # fmt: skip
        await stream.send_all(frame(22, 4, number, request))
        _, response = await read_response(stream, 22, 4)
        seen.append((response.error_code, response.producer_id, response.producer_epoch))
    assert seen == [
        (ErrorCode.none, 0, 0),
        (ErrorCode.none, 1, 0),
        (ErrorCode.none, 2, 0),  # its old id and epoch do not matter
        (ErrorCode.invalid_request, -1, -1),
        (ErrorCode.transactional_id_authorization_failed, -1, -1),
    ]


async def test_a_member_id_starts_with_the_client_id_and_records_the_client_address(
    nursery: trio.Nursery,
) -> None:
    config = KafkaConfig(group=GroupConfig(group_initial_rebalance_delay_ms=0))
    server: KafkaServer = await nursery.start(KafkaServer(3, config=config).serve)
    group = "addressed"
    coordinator = server.cluster.coordinator(group)
    stream = await connect(server, coordinator)
    schema = load_request_schema(11, 3)  # before v4: no MEMBER_ID_REQUIRED round
    protocol_cls = nested(schema, "protocols")
    request = schema(
        group_id=group, session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10), member_id="",
        protocol_type="consumer", protocols=(protocol_cls(name="range", metadata=b"m"),),
    )  # fmt: skip
    await stream.send_all(frame(11, 3, 1, request))
    _, response = await read_response(stream, 11, 3)
    assert response.error_code == ErrorCode.none
    assert response.member_id.startswith("test-")  # the client id of every test frame
    held = server.cluster.broker(coordinator).group_coordinator.group(group)
    assert held is not None
    assert held.get(response.member_id).client_host == "/127.0.0.1"


async def test_pipelined_requests_are_answered_in_request_order(server: KafkaServer) -> None:
    """Kafka's ordering guarantee per connection: a long poll sent first is answered first,
    although the requests pipelined behind it could be answered at once."""
    server.cluster.create_topic("ordered", 1, 3)
    leader = server.cluster.leader(_tp("ordered", 0))
    stream = await connect(server, leader)
    poll = _fetch_request(
        11, "ordered", {"partition": 0, "fetch_offset": 0},
        max_wait=datetime.timedelta(milliseconds=300), min_bytes=1,
    )  # fmt: skip
    await stream.send_all(frame(1, 11, 1, poll) + frame(18, 0, 2) + frame(18, 0, 3))
    data = b""
    order = []
    while len(order) < 3:
        chunk = await stream.receive_some()
        assert chunk
        data += chunk
        while len(data) >= 8 and len(data) >= 4 + int.from_bytes(data[:4], "big"):
            size = int.from_bytes(data[:4], "big")
            order.append(int.from_bytes(data[4:8], "big"))
            data = data[4 + size :]
    assert order == [1, 2, 3]

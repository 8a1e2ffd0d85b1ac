"""The translation table: Kafka's wire messages (``kio`` payloads) to and from :mod:`apis`.

One :class:`Translation` per API key served over the wire. A row names the versions it fully
serves and a ``serve`` function that takes a decoded request (a ``kio`` payload of one of those
versions), does what only the network edge can do (topic ids, record batch decoding,
advertised addresses, auto-creating topics), hands an :mod:`apis` body to the broker through
the :class:`BrokerContext` and, when the broker answers, builds the ``kio`` response of the
request's version and gives it to ``reply``. ApiVersions and InitProducerId are answered here
without a broker body (the model has no API for them).

A request whose fields Kafka refuses while parsing it (an unknown isolation level) makes
``serve`` raise :class:`InvalidRequestError`: the server closes that connection, as Kafka
does, and nothing is handed to the broker.

``reply`` is called exactly once per request that does not raise, with a response payload, or with
:data:`Silence.NO_RESPONSE` (an acks=0 produce that succeeded: the client expects nothing)
or :data:`Silence.CLOSE_CONNECTION` (an acks=0 produce that failed: Kafka closes the
connection so the client notices).

Responses are built version-generically: :func:`build` passes a class only the fields it
declares (so the code that fills Fetch v4 also fills v13, whose topics carry ids instead of
names), and :func:`nested` finds the class of a nested entity of the same version. A new API
is one more row in :data:`TRANSLATIONS` once its :mod:`apis` request/response types exist;
ApiVersions advertises whatever the table holds.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import re
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from apis import (
    DEBUGGING_REPLICA_ID,
    FetchRequest,
    FetchResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochPartition,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    PartitionFetchInfo,
    ProduceRequest,
    ProduceResponse,
    RequestBody,
    ResponseBody,
    SyncGroupRequest,
    SyncGroupResponse,
    fetch_error,
)
from kafka_server.records import RecordsError, decode_produced_batch, encode_batches
from replica.errors import Errors
from replica.records import NO_PRODUCER_ID, NO_TIMESTAMP, ProducerBatchInfo, Record
from replica.types import INTERNAL_TOPICS, EpochEndOffset, IsolationLevel, TopicPartition

__all__ = [
    "TRANSLATIONS",
    "BrokerContext",
    "InvalidRequestError",
    "Reply",
    "Silence",
    "Translation",
    "build",
    "nested",
]


class InvalidRequestError(ValueError):
    """A request Kafka refuses while parsing it: its connection is closed."""


class Silence(enum.Enum):
    """What a request gets instead of a response payload."""

    NO_RESPONSE = "no response"
    CLOSE_CONNECTION = "close the connection"


Reply = Callable[[Any], None]
"""Called once with the response payload of the request's version, or a :class:`Silence`."""


class BrokerContext(Protocol):
    """What a translation needs of the broker the request arrived at (the server gives it)."""

    @property
    def broker_id(self) -> int:
        """The id of the broker the connection is to."""

    def send(self, body: RequestBody, on_response: Callable[[ResponseBody], None]) -> None:
        """Hand ``body`` to this broker's KafkaApis (in a request header carrying the
        client's API version); ``on_response`` gets its one answer."""

    def advertised(self, broker_id: int) -> tuple[str, int] | None:
        """The host and port clients reach broker ``broker_id`` at (None: not served)."""

    def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id: stable for as long as the server runs."""

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id, None if no topic has it."""

    def auto_create(self, topics: list[str]) -> None:
        """Create those of ``topics`` that do not exist, if auto-creation is on."""

    def allocate_producer_id(self) -> int:
        """A producer id never handed out before by this server."""

    def cluster_id(self) -> str:
        """The cluster id reported in Metadata."""

    def max_message_bytes(self) -> int:
        """The broker's ``message.max.bytes``: the largest record batch it takes."""


Serve = Callable[[Any, int, BrokerContext, Reply], None]


@attrs.frozen
class Translation:
    """One row of :data:`TRANSLATIONS`: API key, Kafka's name, the versions served (all of
    them fully), and the function serving a decoded request (see the module docstring)."""

    api_key: int
    name: str
    min_version: int
    max_version: int
    serve: Serve = attrs.field(repr=False)

    def serves(self, version: int) -> bool:
        """True if ``version`` of this API is served."""
        return self.min_version <= version <= self.max_version


# -- building kio payloads --------------------------------------------------------------------


@functools.cache
def _field_types(cls: type) -> Mapping[str, Any]:
    hints = typing.get_type_hints(cls)
    return {field.name: hints[field.name] for field in dataclasses.fields(cls)}


def build(cls: type, **values: Any) -> Any:
    """An instance of kio entity ``cls`` from those of ``values`` that ``cls`` declares (the
    others belong to other versions); fields not given take their defaults."""
    declared = _field_types(cls)
    return cls(**{name: value for name, value in values.items() if name in declared})


@functools.cache
def nested(cls: type, field: str) -> type:
    """The entity class of the items of ``cls``'s field ``field`` (a tuple of entities, maybe
    nullable, or one entity)."""
    tp = _field_types(cls)[field]
    while True:
        args = [a for a in typing.get_args(tp) if a is not type(None) and a is not Ellipsis]
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            return tp
        if not args:
            raise TypeError(f"{cls.__name__}.{field} holds no entity")
        tp = args[0]


def _nullable(cls: type, field: str) -> bool:
    return type(None) in typing.get_args(_field_types(cls)[field])


def _ms(delta: datetime.timedelta) -> int:
    return round(delta.total_seconds() * 1000)


def _timedelta(ms: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=ms)


def _by_topic(topic_cls: Any, by_topic: dict[str, list[Any]]) -> tuple[Any, ...]:
    """A response's per-topic entries: one ``topic_cls`` per topic with its partitions."""
    return tuple(
        build(topic_cls, name=name, partitions=tuple(parts)) for name, parts in by_topic.items()
    )


def _code(error: Errors) -> ErrorCode:
    return ErrorCode(int(error))


def _timestamp(ms: int) -> datetime.datetime | None:
    if ms == NO_TIMESTAMP:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


def _isolation_level(request: Any) -> IsolationLevel:
    value = getattr(request, "isolation_level", 0)
    try:
        return IsolationLevel(value)
    except ValueError:
        raise InvalidRequestError(f"unknown isolation level {value}") from None


def _response_class(request: Any, version: int) -> type:
    return load_response_schema(request.__api_key__, version)


# -- ApiVersions (18) -------------------------------------------------------------------------


def api_versions_response(version: int, error: ErrorCode = ErrorCode.none) -> Any:
    """The ApiVersions response of ``version`` listing every row of :data:`TRANSLATIONS`."""
    cls = load_response_schema(18, version)
    key_cls = nested(cls, "api_keys")
    keys = tuple(
        build(key_cls, api_key=t.api_key, min_version=t.min_version, max_version=t.max_version)
        for t in TRANSLATIONS.values()
    )
    return build(cls, error_code=error, api_keys=keys, throttle_time=_timedelta(0))


_SOFTWARE_NAME_OR_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _serve_api_versions(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    """The served APIs; from v3 the client names its software, and a name or version that
    is not Kafka's pattern (letters, digits, '-' and '.', starting and ending with a letter or
    digit) is answered INVALID_REQUEST with no APIs, as Kafka answers it."""
    software = (
        getattr(request, "client_software_name", "a"),
        getattr(request, "client_software_version", "1"),
    )
    if all(_SOFTWARE_NAME_OR_VERSION.fullmatch(text) for text in software):
        reply(api_versions_response(version))
        return
    cls = load_response_schema(18, version)
    reply(build(cls, error_code=ErrorCode.invalid_request, api_keys=(),
                throttle_time=_timedelta(0)))  # fmt: skip


# -- Metadata (3) -----------------------------------------------------------------------------

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def _operations(*codes: int) -> int:
    """A set of ACL operation codes as Kafka's 32-bit field (bit ``code`` set per code)."""
    return sum(1 << code for code in codes)


#: What Kafka reports as authorized on a topic with no authorizer: every operation a topic
#: supports (READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
#: ALTER_CONFIGS 11).
_TOPIC_OPERATIONS = _operations(3, 4, 5, 6, 7, 8, 10, 11)
#: ... and on the cluster (CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
#: ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12).
_CLUSTER_OPERATIONS = _operations(5, 7, 8, 9, 10, 11, 12)
#: The authorized-operations value of a request that did not ask for them.
_NOT_REQUESTED = -(2**31)


def _serve_metadata(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    broker_cls = nested(cls, "brokers")
    unknown_ids: list[uuid.UUID] = []
    names: list[str] | None = None
    if request.topics is not None and (request.topics or version > 0):
        names = []
        for topic in request.topics:
            name = topic.name
            if name is None:
                topic_id = getattr(topic, "topic_id", None)
                name = None if topic_id is None else ctx.topic_name(topic_id)
                if name is None:
                    unknown_ids.append(topic_id or uuid.UUID(int=0))
                    continue
            names.append(name)
    invalid = [n for n in names or () if not _LEGAL_TOPIC.fullmatch(n) or n in (".", "..")]
    wanted = None if names is None else [n for n in names if n not in invalid]
    if wanted and getattr(request, "allow_auto_topic_creation", True):
        ctx.auto_create([n for n in wanted if n not in INTERNAL_TOPICS])
    # No authorizer: everything is allowed, as Kafka reports it when asked (v8+).
    topic_operations = (
        _TOPIC_OPERATIONS
        if getattr(request, "include_topic_authorized_operations", False)
        else _NOT_REQUESTED
    )
    cluster_operations = (
        _CLUSTER_OPERATIONS
        if getattr(request, "include_cluster_authorized_operations", False)
        else _NOT_REQUESTED
    )

    def answer(response: ResponseBody) -> None:
        assert isinstance(response, MetadataResponse)
        brokers = []
        for endpoint in response.brokers:
            address = ctx.advertised(endpoint.broker_id)
            if address is not None:
                brokers.append(
                    build(broker_cls, node_id=endpoint.broker_id, host=address[0],
                          port=address[1], rack=endpoint.rack)
                )  # fmt: skip
        alive = {endpoint.broker_id for endpoint in response.brokers}
        topics = [
            build(
                topic_cls,
                error_code=_code(meta.error),
                name=name,
                topic_id=ctx.topic_id(name) if meta.error is Errors.NONE else uuid.UUID(int=0),
                is_internal=meta.is_internal,
                partitions=tuple(
                    build(
                        partition_cls,
                        error_code=_code(p.error),
                        partition_index=index,
                        leader_id=p.leader,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=p.replicas,
                        isr_nodes=p.isr,
                        offline_replicas=tuple(r for r in p.replicas if r not in alive),
                    )
                    for index, p in meta.partitions.items()
                ),
                topic_authorized_operations=topic_operations,
            )
            for name, meta in response.topics.items()
        ]
        topics += [
            build(topic_cls, error_code=ErrorCode.invalid_topic_exception, name=name,
                  topic_id=uuid.UUID(int=0), partitions=(),
                  topic_authorized_operations=topic_operations)
            for name in invalid
        ]  # fmt: skip
        unnamed = None if _nullable(topic_cls, "name") else ""
        topics += [
            build(topic_cls, error_code=ErrorCode.unknown_topic_id, name=unnamed,
                  topic_id=topic_id, partitions=(), topic_authorized_operations=_NOT_REQUESTED)
            for topic_id in unknown_ids
        ]  # fmt: skip
        reply(
            build(
                cls,
                throttle_time=_timedelta(0),
                brokers=tuple(brokers),
                cluster_id=ctx.cluster_id(),
                controller_id=response.controller_id,
                topics=tuple(topics),
                cluster_authorized_operations=cluster_operations,
            )
        )

    ctx.send(MetadataRequest(wanted), answer)


# -- Produce (0) ------------------------------------------------------------------------------


def _serve_produce(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)
    topic_cls = nested(cls, "responses")
    partition_cls = nested(topic_cls, "partition_responses")
    order: list[TopicPartition] = []
    rejected: dict[TopicPartition, Errors | ErrorCode] = {}
    records: dict[TopicPartition, list[Record]] = {}
    producers: dict[TopicPartition, ProducerBatchInfo] = {}
    for topic in request.topic_data:
        for partition in topic.partition_data:
            tp = TopicPartition(topic.name, partition.index)
            order.append(tp)
            if request.transactional_id is not None:
                rejected[tp] = ErrorCode.transactional_id_authorization_failed
                continue
            try:
                batch = decode_produced_batch(
                    partition.records or b"", version, ctx.max_message_bytes()
                )
            except RecordsError as exc:
                rejected[tp] = exc.error
                continue
            records[tp] = batch.records
            if batch.producer.producer_id != NO_PRODUCER_ID:
                producers[tp] = batch.producer

    def answer(response: ProduceResponse | None) -> None:
        results = {} if response is None else response.responses
        errors = [rejected.get(tp, Errors.NONE) for tp in order]
        errors += [r.error for r in results.values()]
        if request.acks == 0:
            failed = any(int(e) != 0 for e in errors)
            reply(Silence.CLOSE_CONNECTION if failed else Silence.NO_RESPONSE)
            return
        by_topic: dict[str, list[Any]] = {}
        for tp in order:
            result = results.get(tp)
            if result is None:
                error = ErrorCode(int(rejected.get(tp, Errors.UNKNOWN_SERVER_ERROR)))
                fields: dict[str, Any] = {"error_code": error, "base_offset": -1}
            else:
                fields = {
                    "error_code": _code(result.error),
                    "base_offset": result.base_offset,
                    "log_append_time": _timestamp(result.log_append_time),
                    "log_start_offset": result.log_start_offset,
                }
            by_topic.setdefault(tp.topic, []).append(
                build(partition_cls, index=tp.partition, record_errors=(), **fields)
            )
        reply(
            build(
                cls,
                responses=tuple(
                    build(topic_cls, name=name, partition_responses=tuple(parts))
                    for name, parts in by_topic.items()
                ),
                throttle_time=_timedelta(0),
            )
        )

    if not records:
        answer(None)
        return
    body = ProduceRequest(request.acks, _ms(request.timeout), records, producers)
    ctx.send(body, lambda response: answer(_checked(response, ProduceResponse)))


_R = typing.TypeVar("_R")


def _checked(response: ResponseBody, kind: type[_R]) -> _R:
    if not isinstance(response, kind):
        raise TypeError(f"expected a {kind.__name__}, got {response!r}")
    return response


# -- Fetch (1) --------------------------------------------------------------------------------


def _serve_fetch(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    """A consumer's fetch, in a fetch session (KIP-227) if it asks for one (v7+): the broker's
    ``FetchManager`` keeps the sessions, so an incremental fetch lists and gets back only
    what changed. Topics are named by id from v13 (an unknown id: UNKNOWN_TOPIC_ID). A fetch
    with ``replica_id >= 0`` claims to be a follower broker's: the brokers replicate in
    process, so no wire peer is one; each partition gets NOT_LEADER_OR_FOLLOWER, as Kafka
    answers a broker that is not a replica."""
    cls = _response_class(request, version)
    topic_cls = nested(cls, "responses")
    partition_cls = nested(topic_cls, "partitions")
    by_id = version >= 13
    isolation = _isolation_level(request)

    def topic_name(topic: Any) -> str | None:
        return ctx.topic_name(topic.topic_id) if by_id else topic.topic

    unknown: list[tuple[uuid.UUID, int]] = []  # partitions of topic ids no topic has
    fetch_data: dict[TopicPartition, PartitionFetchInfo] = {}
    for topic in request.topics:
        name = topic_name(topic)
        for partition in topic.partitions:
            if name is None:
                unknown.append((topic.topic_id, partition.partition))
                continue
            epoch = getattr(partition, "current_leader_epoch", -1)
            last_fetched = getattr(partition, "last_fetched_epoch", -1)
            fetch_data[TopicPartition(name, partition.partition)] = PartitionFetchInfo(
                partition.fetch_offset,
                partition.partition_max_bytes,
                None if epoch < 0 else epoch,
                last_fetched_epoch=None if last_fetched < 0 else last_fetched,
            )
    forgotten = [
        TopicPartition(name, index)
        for topic in getattr(request, "forgotten_topics_data", ())
        if (name := topic_name(topic)) is not None
        for index in topic.partitions
    ]

    def key(tp: TopicPartition) -> Any:
        """How the response names the topic: by id from v13, else by name."""
        return ctx.topic_id(tp.topic) if by_id else tp.topic

    def answer(response: FetchResponse) -> None:
        by_topic: dict[Any, list[Any]] = {}
        for tp, data in response.responses.items():
            diverging = data.diverging_epoch
            by_topic.setdefault(key(tp), []).append(
                build(
                    partition_cls,
                    partition_index=tp.partition,
                    error_code=_code(data.error),
                    high_watermark=data.high_watermark,
                    last_stable_offset=data.last_stable_offset,
                    log_start_offset=data.log_start_offset,
                    aborted_transactions=None,
                    records=encode_batches(data.records),
                    **(
                        {}
                        if diverging is None
                        else {"diverging_epoch": _epoch_end_offset(partition_cls, diverging)}
                    ),
                )
            )
        for topic_id, index in unknown:
            by_topic.setdefault(topic_id, []).append(
                build(partition_cls, partition_index=index, error_code=ErrorCode.unknown_topic_id,
                      high_watermark=-1, aborted_transactions=None, records=b"")
            )  # fmt: skip
        name_field = "topic_id" if by_id else "topic"
        reply(
            build(
                cls,
                throttle_time=_timedelta(0),
                error_code=_code(response.error),
                session_id=response.session_id,
                responses=tuple(
                    build(topic_cls, **{name_field: name}, partitions=tuple(parts))
                    for name, parts in by_topic.items()
                ),
            )
        )

    if request.replica_id >= 0:
        refused = fetch_error(Errors.NOT_LEADER_OR_FOLLOWER)
        answer(FetchResponse(Errors.NONE, dict.fromkeys(fetch_data, refused)))
        return
    body = FetchRequest(
        fetch_data=fetch_data,
        max_wait_ms=_ms(request.max_wait),
        min_bytes=request.min_bytes,
        max_bytes=getattr(request, "max_bytes", 0x7FFFFFFF),
        isolation_level=isolation,
        session_id=getattr(request, "session_id", 0),
        session_epoch=getattr(request, "session_epoch", -1),
        forgotten=forgotten,
    )
    ctx.send(body, lambda response: answer(_checked(response, FetchResponse)))


def _epoch_end_offset(partition_cls: type, diverging: EpochEndOffset) -> Any:
    """A fetch response partition's ``diverging_epoch`` (v12+)."""
    return nested(partition_cls, "diverging_epoch")(
        epoch=diverging.leader_epoch, end_offset=diverging.end_offset
    )


# -- ListOffsets (2) --------------------------------------------------------------------------


def _serve_list_offsets(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    isolation = _isolation_level(request)
    timestamps: dict[TopicPartition, int] = {}
    epochs: dict[TopicPartition, int] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            tp = TopicPartition(topic.name, partition.partition_index)
            timestamps[tp] = partition.timestamp
            epoch = getattr(partition, "current_leader_epoch", -1)
            if epoch >= 0:
                epochs[tp] = epoch

    def answer(response: ResponseBody) -> None:
        results = _checked(response, ListOffsetsResponse).responses
        by_topic: dict[str, list[Any]] = {}
        for tp, result in results.items():
            by_topic.setdefault(tp.topic, []).append(
                build(
                    partition_cls,
                    partition_index=tp.partition,
                    error_code=_code(result.error),
                    timestamp=result.timestamp,
                    offset=result.offset,
                    leader_epoch=-1 if result.leader_epoch is None else result.leader_epoch,
                )
            )
        reply(
            build(
                cls,
                throttle_time=_timedelta(0),
                topics=_by_topic(topic_cls, by_topic),
            )
        )

    ctx.send(
        ListOffsetsRequest(timestamps, isolation_level=isolation, current_leader_epochs=epochs),
        answer,
    )


# -- OffsetForLeaderEpoch (23) ----------------------------------------------------------------


def _serve_offset_for_leader_epoch(
    request: Any, version: int, ctx: BrokerContext, reply: Reply
) -> None:
    """Where each asked-for epoch ends in the partition's log (a consumer validating its
    position after a leader change, KIP-320). A v2 request carries no replica id and, as in
    Kafka, counts as the debugging replica's, which any replica answers."""
    cls = _response_class(request, version)
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    epochs = {
        TopicPartition(topic.topic, p.partition): OffsetForLeaderEpochPartition(
            p.leader_epoch, None if p.current_leader_epoch < 0 else p.current_leader_epoch
        )
        for topic in request.topics
        for p in topic.partitions
    }

    def answer(response: ResponseBody) -> None:
        results = _checked(response, OffsetForLeaderEpochResponse).responses
        by_topic: dict[str, list[Any]] = {}
        for tp, result in results.items():
            by_topic.setdefault(tp.topic, []).append(
                build(partition_cls, error_code=_code(result.error), partition=tp.partition,
                      leader_epoch=result.leader_epoch, end_offset=result.end_offset)
            )  # fmt: skip
        reply(
            build(
                cls,
                throttle_time=_timedelta(0),
                topics=tuple(
                    build(topic_cls, topic=name, partitions=tuple(parts))
                    for name, parts in by_topic.items()
                ),
            )
        )

    replica_id = getattr(request, "replica_id", DEBUGGING_REPLICA_ID)
    ctx.send(OffsetForLeaderEpochRequest(epochs, replica_id), answer)


# -- FindCoordinator (10) ---------------------------------------------------------------------


def _serve_find_coordinator(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)

    def answer(error: ErrorCode, node: tuple[int, str, int] = (-1, "", -1)) -> None:
        reply(
            build(cls, throttle_time=_timedelta(0), error_code=error,
                  error_message=None, node_id=node[0], host=node[1], port=node[2])
        )  # fmt: skip

    if getattr(request, "key_type", 0) != 0:
        answer(ErrorCode.coordinator_not_available)  # no transaction coordinator
        return

    def on_response(response: ResponseBody) -> None:
        found = _checked(response, FindCoordinatorResponse)
        endpoint = found.coordinator
        address = None if endpoint is None else ctx.advertised(endpoint.broker_id)
        if endpoint is None or address is None:
            error = found.error if found.error is not Errors.NONE else None
            answer(_code(error) if error else ErrorCode.coordinator_not_available)
            return
        answer(ErrorCode.none, (endpoint.broker_id, *address))

    ctx.send(FindCoordinatorRequest(request.key), on_response)


# -- OffsetCommit (8) and OffsetFetch (9) -----------------------------------------------------


def _serve_offset_commit(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    offsets = {
        TopicPartition(topic.name, p.partition_index): OffsetCommitRequestPartition(
            p.committed_offset,
            p.committed_metadata or "",
            None if getattr(p, "committed_leader_epoch", -1) < 0 else p.committed_leader_epoch,
        )
        for topic in request.topics
        for p in topic.partitions
    }
    generation: int = getattr(
        request, "generation_id_or_member_epoch", getattr(request, "generation_id", -1)
    )

    def answer(response: ResponseBody) -> None:
        errors = _checked(response, OffsetCommitResponse).errors
        by_topic: dict[str, list[Any]] = {}
        for tp, error in errors.items():
            by_topic.setdefault(tp.topic, []).append(
                build(partition_cls, partition_index=tp.partition, error_code=_code(error))
            )
        reply(
            build(
                cls,
                throttle_time=_timedelta(0),
                topics=_by_topic(topic_cls, by_topic),
            )
        )

    body = OffsetCommitRequest(request.group_id, offsets, generation, request.member_id)
    ctx.send(body, answer)


def _serve_offset_fetch(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)
    topic_cls = nested(cls, "topics")
    partition_cls = nested(topic_cls, "partitions")
    partitions = (
        None
        if request.topics is None
        else [TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    )

    def answer(response: ResponseBody) -> None:
        result = _checked(response, OffsetFetchResponse)
        by_topic: dict[str, list[Any]] = {}
        # v1 has no top-level error: the group's error goes to every partition.
        top_level = "error_code" in _field_types(cls)
        for tp in partitions if partitions is not None else result.offsets:
            found = result.offsets.get(tp)
            error = found.error if found is not None else Errors.NONE
            if not top_level and result.error is not Errors.NONE:
                error = result.error
            by_topic.setdefault(tp.topic, []).append(
                build(
                    partition_cls,
                    partition_index=tp.partition,
                    committed_offset=-1 if found is None else found.offset,
                    committed_leader_epoch=(
                        -1 if found is None or found.leader_epoch is None else found.leader_epoch
                    ),
                    metadata="" if found is None else found.metadata,
                    error_code=_code(error),
                )
            )
        reply(
            build(
                cls,
                throttle_time=_timedelta(0),
                error_code=_code(result.error),
                topics=_by_topic(topic_cls, by_topic),
            )
        )

    ctx.send(OffsetFetchRequest(request.group_id, partitions), answer)


# -- JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13) ------------------------


def _static_member(request: Any) -> bool:
    """Static membership (``group.instance.id``, KIP-345) is not modelled: such a request is
    answered with UNSUPPORTED_VERSION (see docs/server.md)."""
    return getattr(request, "group_instance_id", None) is not None


def _serve_join_group(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)
    member_cls = nested(cls, "members")
    name_default = None if _nullable(cls, "protocol_name") else ""

    def answer(response: JoinGroupResponse, error: ErrorCode | None = None) -> None:
        reply(
            build(
                cls,
                throttle_time=_timedelta(0),
                error_code=_code(response.error) if error is None else error,
                generation_id=response.generation_id,
                protocol_type=response.protocol_type,
                protocol_name=response.protocol_name or name_default,
                leader=response.leader,
                member_id=response.member_id,
                members=tuple(
                    build(member_cls, member_id=m.member_id, group_instance_id=None,
                          metadata=m.metadata)
                    for m in response.members
                ),
            )
        )  # fmt: skip

    if _static_member(request):
        refused = JoinGroupResponse(Errors.NONE, member_id=request.member_id)
        answer(refused, ErrorCode.unsupported_version)
        return
    rebalance = getattr(request, "rebalance_timeout", None)
    body = JoinGroupRequest(
        group_id=request.group_id,
        session_timeout_ms=_ms(request.session_timeout),
        protocols=[JoinGroupRequestProtocol(p.name, p.metadata) for p in request.protocols],
        member_id=request.member_id,
        protocol_type=request.protocol_type,
        rebalance_timeout_ms=-1 if rebalance is None else _ms(rebalance),
    )
    ctx.send(body, lambda response: answer(_checked(response, JoinGroupResponse)))


def _serve_sync_group(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)

    def answer(error: Errors | ErrorCode, response: SyncGroupResponse | None = None) -> None:
        reply(
            build(cls, throttle_time=_timedelta(0), error_code=ErrorCode(int(error)),
                  protocol_type=response.protocol_type if response else None,
                  protocol_name=response.protocol_name if response else None,
                  assignment=response.assignment if response else b"")
        )  # fmt: skip

    if _static_member(request):
        answer(ErrorCode.unsupported_version)
        return
    body = SyncGroupRequest(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        assignments={a.member_id: a.assignment for a in request.assignments},
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
    )

    def on_response(response: ResponseBody) -> None:
        synced = _checked(response, SyncGroupResponse)
        answer(synced.error, synced)

    ctx.send(body, on_response)


def _serve_heartbeat(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)

    def answer(error: Errors | ErrorCode) -> None:
        reply(build(cls, throttle_time=_timedelta(0), error_code=ErrorCode(int(error))))

    if _static_member(request):
        answer(ErrorCode.unsupported_version)
        return
    body = HeartbeatRequest(request.group_id, request.generation_id, request.member_id)
    ctx.send(body, lambda response: answer(_checked(response, HeartbeatResponse).error))


def _serve_leave_group(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    cls = _response_class(request, version)
    batched = "members" in _field_types(cls)
    if batched:
        if any(m.group_instance_id is not None for m in request.members):
            reply(build(cls, throttle_time=_timedelta(0),
                        error_code=ErrorCode.unsupported_version, members=()))  # fmt: skip
            return
        member_ids = [m.member_id for m in request.members]
    else:
        member_ids = [request.member_id]

    def answer(response: ResponseBody) -> None:
        left = _checked(response, LeaveGroupResponse)
        error = left.error
        if not batched and error is Errors.NONE and left.members:
            error = left.members[0].error  # one member: its error is the response's
        member_cls = nested(cls, "members") if batched else None
        reply(
            build(
                cls,
                throttle_time=_timedelta(0),
                error_code=_code(error),
                members=tuple(
                    build(member_cls, member_id=m.member_id, group_instance_id=None,
                          error_code=_code(m.error))
                    for m in left.members
                ) if member_cls else (),
            )
        )  # fmt: skip

    ctx.send(LeaveGroupRequest(request.group_id, member_ids), answer)


# -- InitProducerId (22) ----------------------------------------------------------------------

_MAX_PRODUCER_EPOCH = 32767


def _serve_init_producer_id(request: Any, version: int, ctx: BrokerContext, reply: Reply) -> None:
    """A producer id for an idempotent producer: as Kafka's transaction coordinator does for a
    request without a transactional id, a new id with epoch 0 every time, whatever id and
    epoch the request carries (v3+; an idempotent producer bumps its epoch itself). A
    transactional id is refused (no transactions are served), an empty one is INVALID_REQUEST.
    The producer's batches are then checked and deduplicated by each partition's log (see
    :mod:`replica.producer_state`)."""
    cls = _response_class(request, version)

    def answer(error: ErrorCode, producer_id: int = -1, epoch: int = -1) -> None:
        reply(build(cls, throttle_time=_timedelta(0), error_code=error,
                    producer_id=producer_id, producer_epoch=epoch))  # fmt: skip

    transactional_id = request.transactional_id
    if transactional_id is None:
        answer(ErrorCode.none, ctx.allocate_producer_id(), 0)
    elif not transactional_id:
        answer(ErrorCode.invalid_request)
    else:
        answer(ErrorCode.transactional_id_authorization_failed)


TRANSLATIONS: Mapping[int, Translation] = {
    row.api_key: row
    for row in (
        Translation(0, "Produce", 3, 9, _serve_produce),
        Translation(1, "Fetch", 4, 13, _serve_fetch),
        Translation(2, "ListOffsets", 1, 6, _serve_list_offsets),
        Translation(3, "Metadata", 0, 12, _serve_metadata),
        Translation(8, "OffsetCommit", 2, 8, _serve_offset_commit),
        Translation(9, "OffsetFetch", 1, 7, _serve_offset_fetch),
        Translation(10, "FindCoordinator", 0, 3, _serve_find_coordinator),
        Translation(11, "JoinGroup", 0, 7, _serve_join_group),
        Translation(12, "Heartbeat", 0, 4, _serve_heartbeat),
        Translation(13, "LeaveGroup", 0, 4, _serve_leave_group),
        Translation(14, "SyncGroup", 0, 5, _serve_sync_group),
        Translation(18, "ApiVersions", 0, 4, _serve_api_versions),
        Translation(22, "InitProducerId", 0, 4, _serve_init_producer_id),
        Translation(23, "OffsetForLeaderEpoch", 2, 4, _serve_offset_for_leader_epoch),
    )
}
"""Every API served over the wire, by API key (ApiVersions advertises exactly these)."""

"""KafkaApis: validate a request, call one manager with a callback that sends the response.

The "Kafka Apis" of the API refactoring design, kept thin: no append, fetch or offset logic
lives here. Each ``handle_*`` method

1. checks what only the request layer can check (value ranges, topics known to the metadata
   cache) and answers invalid parts with error codes, without touching any state;
2. calls ONE manager (:class:`~replica.replica_manager.ReplicaManager` or
   :class:`~coordinator.group_coordinator.GroupCoordinator`) with a callback;
3. the callback puts the response in the :class:`~apis.request_channel.RequestChannel`.

The exceptions are the controller's requests: LeaderAndIsr and StopReplica call the
ReplicaManager and then tell the GroupCoordinator about offsets partitions this broker now leads
or no longer leads (Kafka's ``onLeadershipChange``: ``onElection`` / ``onResignation``).

Guarantee: every request handed to :meth:`KafkaApis.handle` (or a ``handle_*`` method) gets
exactly one response in the channel, sooner or later. A body whose fields do not have their
declared types (``records=None``, ``max_wait_ms="5"``) is malformed: :meth:`KafkaApis.handle`
answers it with INVALID_REQUEST without handling it. (In the compiled build the constructors
of the plain bodies, :class:`~apis.fetch.FetchRequest` and
:class:`~apis.produce.ProduceRequest`, check their parameters' types, a collection's
excepted, so a wrong ``max_wait_ms`` raises TypeError there before any request is made:
docs/benchmarks.md, "What differs for a caller".) An exception raised while handling a
request (inside a manager too) is logged and answered with UNKNOWN_SERVER_ERROR, unless the
response was already sent; a manager callback that fires after that error response is dropped.
An error response is built from the body with its malformed collections emptied, so a produce
with ``records=None`` is answered with a response that lists no partition.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar, Union, get_args, get_origin

from apis.api_table import API_TABLE
from apis.body_fields import body_fields, replace
from apis.config import KafkaConfig
from apis.controller_requests import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from apis.fetch import FetchRequest, FetchResponse, fetch_error
from apis.fetch_session import FetchManager, FetchMetadata, FetchSessionCache
from apis.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from apis.join_group import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember
from apis.leave_group import LeaveGroupRequest, LeaveGroupResponse, LeaveGroupResponseMember
from apis.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from apis.metadata import MetadataRequest, MetadataResponse
from apis.metadata_cache import MetadataCache
from apis.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from apis.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
)
from apis.offset_for_leader_epoch import (
    DEBUGGING_REPLICA_ID,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from apis.produce import ProduceRequest, ProduceResponse
from apis.request_channel import Request, RequestBody, RequestChannel, ResponseBody
from apis.sync_group import SyncGroupRequest, SyncGroupResponse
from coordinator.group_coordinator import GroupCoordinator
from coordinator.group_metadata import JoinGroupResult, SyncGroupResult
from coordinator.offset_record import OffsetAndMetadata
from replica.errors import Errors
from replica.records import NO_TIMESTAMP
from replica.replica_manager import ReplicaManager
from replica.types import (
    GROUP_METADATA_TOPIC_NAME,
    NO_ERROR,
    FetchPartitionData,
    OffsetForLeaderEpochResult,
    PartitionResponse,
    TopicPartition,
)

__all__ = ["KafkaApis"]

_logger = logging.getLogger(__name__)

_Body = TypeVar("_Body")
_V = TypeVar("_V")


_Check = Callable[[object], bool]


class _FieldCheck:
    """One field of a request body class: its name, declared type and type check.

    ``usual`` are the exact types the drivers build the field with (``dict`` for a mapping,
    ``int`` for an int...): a value of one of them conforms without calling ``conforms``,
    so checking a well-formed request costs an identity test or two per field (a tuple: for
    one or two types, cheaper than a set's hash and lookup)."""

    __slots__ = ("conforms", "name", "tp", "usual")

    def __init__(self, name: str, tp: Any, conforms: _Check, usual: frozenset[type]) -> None:
        self.name = name
        self.tp = tp
        self.conforms = conforms
        self.usual = tuple(usual)


_FIELD_CHECKS: Final[dict[type, tuple[_FieldCheck, ...]]] = {}


def _type_check(tp: Any) -> tuple[_Check, frozenset[type]]:
    """A check that a value is of type ``tp``, shallowly: the container, not its items (a bool
    is not an int, a string is not a sequence); and the exact types that surely pass it.
    ``tp`` is an annotation's type, or its container alone (``Mapping``; see
    :mod:`apis.body_fields`)."""
    kind = get_origin(tp) or tp
    if kind in (Union, types.UnionType):
        members = [_type_check(member) for member in get_args(tp)]
        checks = tuple(check for check, _ in members)
        return (
            lambda value: any(check(value) for check in checks),
            frozenset().union(*(usual for _, usual in members)),
        )
    if kind is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool), frozenset(
            {int}
        )
    if kind is Sequence:
        return (
            lambda value: isinstance(value, Sequence) and not isinstance(value, str | bytes),
            frozenset({tuple, list}),
        )
    if kind is Mapping:
        return lambda value: isinstance(value, Mapping), frozenset({dict})
    return lambda value: isinstance(value, kind), frozenset({kind})


def _field_checks(cls: type) -> tuple[_FieldCheck, ...]:
    """The fields of request body class ``cls`` with their type checks (cached per class)."""
    found = _FIELD_CHECKS.get(cls)
    if found is None:
        found = tuple(_FieldCheck(name, tp, *_type_check(tp)) for name, tp in body_fields(cls))
        _FIELD_CHECKS[cls] = found
    return found


def _malformed(body: RequestBody) -> list[_FieldCheck]:
    """The fields of ``body`` whose values are not of their declared types."""
    malformed: list[_FieldCheck] = []
    for field in _field_checks(type(body)):
        value = getattr(body, field.name)
        if type(value) not in field.usual and not field.conforms(value):
            malformed.append(field)
    return malformed


def _error_response(body: RequestBody, error: Errors) -> ResponseBody:
    """``body.error_response(error)``, built from ``body`` with its malformed collection
    fields emptied (or set to None where None is allowed) so that building it cannot fail."""
    empty: dict[str, object] = {}
    for field in _malformed(body):
        kind = get_origin(field.tp) or field.tp
        if kind in (Union, types.UnionType) and type(None) in get_args(field.tp):
            empty[field.name] = None
        elif kind is Mapping:
            empty[field.name] = {}
        elif kind is Sequence:
            empty[field.name] = ()
    return replace(body, empty).error_response(error)


class _Responder:
    """Sends the one response of ``request``; later attempts are dropped."""

    __slots__ = ("channel", "request", "sent")

    def __init__(self, channel: RequestChannel, request: Request) -> None:
        self.channel = channel
        self.request = request
        self.sent = False

    def __call__(self, body: ResponseBody) -> None:
        if self.sent:
            _logger.warning(
                "dropping a second response to correlation id %d (%s)",
                self.request.header.correlation_id,
                type(body).__name__,
            )
            return
        self.sent = True
        self.channel.send_response(self.request, body)


class _Responding:
    """``with`` context of one request's handling: gives its :class:`_Responder`; an
    ``Exception`` raised inside is logged, counted in ``unknown_server_errors`` and answered
    with UNKNOWN_SERVER_ERROR (unless a response was sent), and goes no further.

    A class rather than a generator-based context manager: one object per request, no
    generator, and compiled, its methods are native calls.
    """

    __slots__ = ("apis", "respond")

    def __init__(self, apis: KafkaApis, request: Request) -> None:
        self.apis = apis
        self.respond = _Responder(apis.request_channel, request)

    def __enter__(self) -> _Responder:
        return self.respond

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: object
    ) -> bool:
        if kind is None or not issubclass(kind, Exception):
            return False
        apis, respond = self.apis, self.respond
        request = respond.request
        apis.unknown_server_errors += 1
        _logger.error(
            "broker %d failed handling %s (correlation id %d)",
            apis.broker_id,
            type(request.body).__name__,
            request.header.correlation_id,
            exc_info=error,
        )
        if not respond.sent:
            respond(_error_response(request.body, Errors.UNKNOWN_SERVER_ERROR))
        return True


class KafkaApis:
    """Request handling of broker ``broker_id``.

    ``config`` is the broker's :class:`~apis.config.KafkaConfig`; responses go to
    ``request_channel``. ``unknown_server_errors`` counts requests answered with
    UNKNOWN_SERVER_ERROR because handling them raised.
    """

    def __init__(
        self,
        broker_id: int,
        replica_manager: ReplicaManager,
        group_coordinator: GroupCoordinator,
        metadata_cache: MetadataCache,
        config: KafkaConfig,
        request_channel: RequestChannel,
    ) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.group_coordinator = group_coordinator
        self.metadata_cache = metadata_cache
        self.config = config
        self.request_channel = request_channel
        self.unknown_server_errors = 0
        #: The broker's fetch sessions (KIP-227).
        self.fetch_manager = FetchManager(
            FetchSessionCache(
                config.max_incremental_fetch_session_cache_slots,
                config.min_incremental_fetch_session_eviction_ms,
            )
        )
        self._handlers: dict[type, Callable[[Request], None]] = {
            api.request: getattr(self, api.handler) for api in API_TABLE.values()
        }

    def __repr__(self) -> str:
        return f"KafkaApis(broker={self.broker_id})"

    def handle(self, request: Request) -> None:
        """Dispatch ``request`` to its ``handle_*`` method (by the type of its body, as
        :data:`~apis.api_table.API_TABLE` says); answer a malformed body (a field not of its
        declared type) with INVALID_REQUEST instead, touching nothing."""
        malformed = _malformed(request.body)
        if malformed:
            _logger.warning(
                "broker %d: %s (correlation id %d) is malformed: %s not of the declared type",
                self.broker_id,
                type(request.body).__name__,
                request.header.correlation_id,
                ", ".join(field.name for field in malformed),
            )
            _Responder(self.request_channel, request)(
                _error_response(request.body, Errors.INVALID_REQUEST)
            )
            return
        self._handlers[type(request.body)](request)

    def _responding(self, request: Request) -> _Responding:
        """The request's one-shot responder, as a context that turns an exception into
        UNKNOWN_SERVER_ERROR."""
        return _Responding(self, request)

    @staticmethod
    def _body(request: Request, kind: type[_Body]) -> _Body:
        body: RequestBody = request.body
        if not isinstance(body, kind):
            raise TypeError(f"expected a {kind.__name__}, got a {type(body).__name__}")
        return body

    # -- produce ----------------------------------------------------------------------------

    def handle_produce(self, request: Request) -> None:
        """Append through ``ReplicaManager.append_messages``.

        Whole request: acks not in {-1, 0, 1} -> INVALID_REQUIRED_ACKS (nothing appended).
        The timeout is not validated, as in Kafka: a negative one expires at once (an acks=-1
        produce waits for no replication). Per partition: not in the metadata cache ->
        UNKNOWN_TOPIC_OR_PARTITION; every other check (leadership, record size, internal
        topics, min.insync.replicas, an idempotent producer's sequence) is the
        ReplicaManager's.
        """
        with self._responding(request) as respond:
            body = self._body(request, ProduceRequest)
            if body.acks not in (-1, 0, 1):
                respond(body.error_response(Errors.INVALID_REQUIRED_ACKS))
                return
            rejected, valid = self._split_known(body.records)
            rejected_responses = {tp: PartitionResponse(error) for tp, error in rejected.items()}

            def send(responses: Mapping[TopicPartition, PartitionResponse]) -> None:
                merged = {**rejected_responses, **responses}
                respond(ProduceResponse({tp: merged[tp] for tp in body.records}))

            if not valid:
                send({})
                return
            self.replica_manager.append_messages(
                body.timeout_ms, body.acks, valid, send, producers=body.producers
            )

    # -- fetch ------------------------------------------------------------------------------

    def handle_fetch(self, request: Request) -> None:
        """Read through ``ReplicaManager.fetch_messages`` (long-polling there).

        Negative ``min_bytes`` or ``max_bytes`` -> INVALID_REQUEST for the whole request.
        ``max_wait_ms`` is not validated, as in Kafka: a negative one answers at once. Per
        partition: not in the metadata cache ->
        UNKNOWN_TOPIC_OR_PARTITION; offsets out of range, leadership and epochs are checked by
        the ReplicaManager. As in Kafka, the fetch's effective ``max_bytes`` is the request's
        capped at ``fetch.max.bytes`` (consumers and followers alike), and ``min_bytes`` is
        capped at that (KAFKA-9101): a fetch never waits for more than it may receive. A
        consumer's response does not carry the leader's log end offset.

        Fetch sessions (KIP-227) are resolved first by :attr:`fetch_manager` (see
        :mod:`apis.fetch_session`): an incremental fetch reads every partition of its session
        but the idle ones (unchanged since a read found nothing to send) and its response
        lists the partitions with news; a session error
        (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) is answered at once, at top
        level, with no partitions. A follower's session is privileged in the cache.
        """
        with self._responding(request) as respond:
            body = self._body(request, FetchRequest)
            if body.min_bytes < 0 or body.max_bytes < 0:
                respond(body.error_response(Errors.INVALID_REQUEST))
                return
            from_follower = body.replica_id >= 0
            fetch_manager = self.fetch_manager
            # The clock read through a local name: compiled, ``self.replica_manager.clock()``
            # (a property returning a callable, then called) raised "int object expected".
            clock = self.replica_manager.clock
            context = fetch_manager.new_context(
                FetchMetadata(body.session_id, body.session_epoch),
                body.fetch_data,
                body.forgotten,
                from_follower,
                clock(),
            )
            if context.error is not NO_ERROR:  # a session error: nothing is fetched
                respond(FetchResponse(context.error, {}))
                return
            fetch_data = context.fetch_data
            rejected, valid = self._split_known(fetch_data)
            rejected_data = {tp: fetch_error(error) for tp, error in rejected.items()}

            def send(data: Mapping[TopicPartition, FetchPartitionData]) -> None:
                # fetch_messages answers every partition it was given and the session's idle
                # ones it woke: with nothing rejected that is already the response.
                # (A consumer's data carries no log end offset: the ReplicaManager leaves it out.)
                responses = {**rejected_data, **data} if rejected_data else data
                session_id, responses = fetch_manager.response_data(context, responses, clock())
                respond(FetchResponse(NO_ERROR, responses, session_id=session_id))

            if not valid and not context.waits_on_idle:
                send({})
                return
            max_bytes = min(body.max_bytes, self.config.fetch_max_bytes)
            self.replica_manager.fetch_messages(
                body.replica_id,
                valid,
                min(body.min_bytes, max_bytes),
                body.max_wait_ms,
                max_bytes,
                body.isolation_level,
                send,
                session=context.fetch_partitions,
            )

    # -- list offsets -----------------------------------------------------------------------

    def handle_list_offsets(self, request: Request) -> None:
        """Look offsets up through ``ReplicaManager.fetch_offset_for_timestamp``.

        Per partition: not in the metadata cache -> UNKNOWN_TOPIC_OR_PARTITION; leadership,
        epochs and the timestamp's validity are the ReplicaManager's. A replica
        (``replica_id >= 0``) reads up to the log end offset, a consumer up to its isolation
        level's end.
        """
        with self._responding(request) as respond:
            body = self._body(request, ListOffsetsRequest)
            isolation = None if body.replica_id >= 0 else body.isolation_level
            responses: dict[TopicPartition, ListOffsetsPartitionResponse] = {}
            for tp, timestamp in body.timestamps.items():
                if self.metadata_cache.contains_partition(tp):
                    responses[tp] = self.replica_manager.fetch_offset_for_timestamp(
                        tp,
                        timestamp,
                        isolation=isolation,
                        current_leader_epoch=body.current_leader_epochs.get(tp),
                    )
                else:
                    responses[tp] = ListOffsetsPartitionResponse(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            respond(ListOffsetsResponse(responses))

    def handle_offset_for_leader_epoch(self, request: Request) -> None:
        """Look epochs up through ``ReplicaManager.last_offset_for_leader_epoch``.

        Per partition: not in the metadata cache -> UNKNOWN_TOPIC_OR_PARTITION; leadership
        and epochs are the ReplicaManager's. Only the leader answers, except a request from
        Kafka's debugging replica id, which any replica answers.
        """
        with self._responding(request) as respond:
            body = self._body(request, OffsetForLeaderEpochRequest)
            from_leader = body.replica_id != DEBUGGING_REPLICA_ID
            responses: dict[TopicPartition, OffsetForLeaderEpochResult] = {}
            for tp, asked in body.epochs.items():
                if self.metadata_cache.contains_partition(tp):
                    responses[tp] = self.replica_manager.last_offset_for_leader_epoch(
                        tp,
                        asked.leader_epoch,
                        current_leader_epoch=asked.current_leader_epoch,
                        fetch_only_from_leader=from_leader,
                    )
                else:
                    responses[tp] = OffsetForLeaderEpochResult(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            respond(OffsetForLeaderEpochResponse(responses))

    # -- metadata ---------------------------------------------------------------------------

    def handle_metadata(self, request: Request) -> None:
        """Answer from the metadata cache: live brokers, controller id, per-topic metadata
        (UNKNOWN_TOPIC_OR_PARTITION for unknown topics; topics are never auto-created)."""
        with self._responding(request) as respond:
            body = self._body(request, MetadataRequest)
            cache = self.metadata_cache
            respond(
                MetadataResponse(
                    brokers=cache.alive_brokers(),
                    controller_id=cache.controller_id,
                    topics=cache.topic_metadata(body.topics),
                )
            )

    def handle_find_coordinator(self, request: Request) -> None:
        """The leader of the group's ``__consumer_offsets`` partition, from the metadata cache.

        Empty key -> INVALID_GROUP_ID; no such partition, no leader or a leader that is not
        live -> COORDINATOR_NOT_AVAILABLE.
        """
        with self._responding(request) as respond:
            body = self._body(request, FindCoordinatorRequest)
            if not body.key:
                respond(body.error_response(Errors.INVALID_GROUP_ID))
                return
            partition = self.group_coordinator.partition_for(body.key)
            offsets_tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, partition)
            state = self.metadata_cache.partition_state(offsets_tp)
            endpoint = None if state is None else self.metadata_cache.alive_broker(state.leader)
            if endpoint is None:
                respond(body.error_response(Errors.COORDINATOR_NOT_AVAILABLE))
                return
            respond(FindCoordinatorResponse(Errors.NONE, endpoint))

    # -- offsets ----------------------------------------------------------------------------

    def handle_offset_commit(self, request: Request) -> None:
        """Commit through ``GroupCoordinator.handle_commit_offsets``.

        Per partition: topic partition not in the metadata cache ->
        UNKNOWN_TOPIC_OR_PARTITION; the group checks (NOT_COORDINATOR, ILLEGAL_GENERATION,
        UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, ...), metadata size and the replicated write
        are the coordinator's. The commit timestamp is the broker's time.
        """
        with self._responding(request) as respond:
            body = self._body(request, OffsetCommitRequest)
            rejected, valid = self._split_known(body.offsets)
            offsets = {
                tp: OffsetAndMetadata(
                    offset=p.committed_offset,
                    metadata=p.committed_metadata,
                    commit_timestamp=NO_TIMESTAMP,
                    leader_epoch=p.committed_leader_epoch,
                )
                for tp, p in valid.items()
            }

            def send(errors: Mapping[TopicPartition, Errors]) -> None:
                merged = {**rejected, **errors}
                respond(OffsetCommitResponse({tp: merged[tp] for tp in body.offsets}))

            if not offsets:
                send({})
                return
            self.group_coordinator.handle_commit_offsets(
                body.group_id, body.member_id, body.generation_id, offsets, send
            )

    def handle_offset_fetch(self, request: Request) -> None:
        """Answer from ``GroupCoordinator.handle_fetch_offsets`` (offset -1 where nothing is
        committed)."""
        with self._responding(request) as respond:
            body = self._body(request, OffsetFetchRequest)
            result = self.group_coordinator.handle_fetch_offsets(body.group_id, body.partitions)
            respond(
                OffsetFetchResponse(
                    result.error,
                    {
                        tp: OffsetFetchResponsePartition(v.offset, v.metadata, v.leader_epoch)
                        for tp, v in result.offsets.items()
                    },
                )
            )

    # -- group membership -------------------------------------------------------------------

    def handle_join_group(self, request: Request) -> None:
        """Join through ``GroupCoordinator.handle_join_group``; the response waits while the
        group rebalances. A new member must first get its member id (MEMBER_ID_REQUIRED) from
        version 4 of the request on, as in Kafka; a rebalance timeout of -1 (version 0) is the
        session timeout. Every check is the coordinator's."""
        with self._responding(request) as respond:
            body = self._body(request, JoinGroupRequest)

            def send(result: JoinGroupResult) -> None:
                respond(
                    JoinGroupResponse(
                        result.error,
                        result.generation_id,
                        result.protocol_type,
                        result.protocol_name,
                        result.leader_id,
                        result.member_id,
                        [JoinGroupResponseMember(m.member_id, m.metadata) for m in result.members],
                    )
                )

            rebalance_timeout_ms = body.rebalance_timeout_ms
            self.group_coordinator.handle_join_group(
                body.group_id,
                body.member_id,
                client_id=request.header.client_id,
                client_host=request.connection_id,
                rebalance_timeout_ms=(
                    body.session_timeout_ms if rebalance_timeout_ms == -1 else rebalance_timeout_ms
                ),
                session_timeout_ms=body.session_timeout_ms,
                protocol_type=body.protocol_type,
                protocols=[(p.name, p.metadata) for p in body.protocols],
                require_known_member_id=request.header.api_version >= 4,
                callback=send,
            )

    def handle_sync_group(self, request: Request) -> None:
        """Sync through ``GroupCoordinator.handle_sync_group``; the response waits for the
        leader's assignment to be stored."""
        with self._responding(request) as respond:
            body = self._body(request, SyncGroupRequest)

            def send(result: SyncGroupResult) -> None:
                respond(
                    SyncGroupResponse(
                        result.error, result.assignment, result.protocol_type, result.protocol_name
                    )
                )

            self.group_coordinator.handle_sync_group(
                body.group_id,
                body.generation_id,
                body.member_id,
                protocol_type=body.protocol_type,
                protocol_name=body.protocol_name,
                assignments=body.assignments,
                callback=send,
            )

    def handle_heartbeat(self, request: Request) -> None:
        """Answer from ``GroupCoordinator.handle_heartbeat``."""
        with self._responding(request) as respond:
            body = self._body(request, HeartbeatRequest)
            respond(
                HeartbeatResponse(
                    self.group_coordinator.handle_heartbeat(
                        body.group_id, body.member_id, body.generation_id
                    )
                )
            )

    def handle_leave_group(self, request: Request) -> None:
        """Answer from ``GroupCoordinator.handle_leave_group`` (one error per member)."""
        with self._responding(request) as respond:
            body = self._body(request, LeaveGroupRequest)
            result = self.group_coordinator.handle_leave_group(body.group_id, body.member_ids)
            respond(
                LeaveGroupResponse(
                    result.error,
                    [LeaveGroupResponseMember(member, error) for member, error in result.members],
                )
            )

    # -- controller requests ----------------------------------------------------------------

    def handle_leader_and_isr(self, request: Request) -> None:
        """Apply partition states through ``ReplicaManager.become_leader_or_follower``, then
        load (``on_election``: offsets and groups) or drop (``on_resignation``) the offsets
        partitions whose leadership changed. Stale controller epoch -> STALE_CONTROLLER_EPOCH,
        nothing applied."""
        with self._responding(request) as respond:
            body = self._body(request, LeaderAndIsrRequest)
            error = self.metadata_cache.check_controller_epoch(
                body.controller_id, body.controller_epoch
            )
            if error is not Errors.NONE:
                respond(body.error_response(error))
                return
            errors = self.replica_manager.become_leader_or_follower(
                body.partition_states, self._on_leadership_change
            )
            respond(LeaderAndIsrResponse(Errors.NONE, errors))

    def _on_leadership_change(
        self, new_leaders: list[TopicPartition], new_followers: list[TopicPartition]
    ) -> None:
        for tp in new_leaders:
            if tp.topic == GROUP_METADATA_TOPIC_NAME:
                self.group_coordinator.on_election(tp.partition)
        for tp in new_followers:
            if tp.topic == GROUP_METADATA_TOPIC_NAME:
                self.group_coordinator.on_resignation(tp.partition)

    def handle_stop_replica(self, request: Request) -> None:
        """Stop (and maybe delete) replicas through ``ReplicaManager.stop_replica``; offsets
        partitions among them are resigned. Stale controller epoch -> STALE_CONTROLLER_EPOCH."""
        with self._responding(request) as respond:
            body = self._body(request, StopReplicaRequest)
            error = self.metadata_cache.check_controller_epoch(
                body.controller_id, body.controller_epoch
            )
            if error is not Errors.NONE:
                respond(body.error_response(error))
                return
            errors: dict[TopicPartition, Errors] = {}
            for tp in body.partitions:
                errors[tp] = self.replica_manager.stop_replica(tp, body.delete_partitions)
                if tp.topic == GROUP_METADATA_TOPIC_NAME:
                    self.group_coordinator.on_resignation(tp.partition)
            respond(StopReplicaResponse(Errors.NONE, errors))

    def handle_update_metadata(self, request: Request) -> None:
        """Update the metadata cache (STALE_CONTROLLER_EPOCH: ignored)."""
        with self._responding(request) as respond:
            body = self._body(request, UpdateMetadataRequest)
            respond(UpdateMetadataResponse(self.metadata_cache.update_metadata(body)))

    # -- helpers ----------------------------------------------------------------------------

    def _split_known(
        self, per_partition: Mapping[TopicPartition, _V]
    ) -> tuple[dict[TopicPartition, Errors], dict[TopicPartition, _V]]:
        """Split a request's partitions into unknown ones (with their error) and known ones."""
        rejected: dict[TopicPartition, Errors] = {}
        valid: dict[TopicPartition, _V] = {}
        for tp, value in per_partition.items():
            if self.metadata_cache.contains_partition(tp):
                valid[tp] = value
            else:
                rejected[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
        return rejected, valid

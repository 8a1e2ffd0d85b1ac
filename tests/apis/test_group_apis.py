"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup and member-checked commits through KafkaApis."""

from __future__ import annotations

from apis import (
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.apis.single_broker import T0, SingleBroker

PROTOCOLS = [JoinGroupRequestProtocol("range", b"orders")]


def join(broker: SingleBroker, member_id: str = "", *, version: int = 4) -> JoinGroupResponse:
    """Send a JoinGroup and let the initial rebalance delay pass; returns its response."""
    request = broker.send(
        JoinGroupRequest("group-a", 10_000, PROTOCOLS, member_id, rebalance_timeout_ms=20_000),
        api_version=version,
    )
    responses = broker.responses()
    if not responses:
        broker.advance(3000)
        responses = broker.responses()
    assert [r.request for r in responses] == [request]
    body = responses[0].body
    assert isinstance(body, JoinGroupResponse)
    return body


def test_a_member_joins_syncs_heartbeats_commits_and_leaves() -> None:
    broker = SingleBroker()
    required = join(broker)
    assert required.error is Errors.MEMBER_ID_REQUIRED and required.generation_id == -1
    member = required.member_id
    assert member.startswith("client-")
    joined = join(broker, member)
    assert joined == JoinGroupResponse(
        Errors.NONE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=member,
        member_id=member,
        members=[JoinGroupResponseMember(member, b"orders")],
    )
    synced = broker.request(SyncGroupRequest("group-a", 1, member, {member: b"orders-0"})).body
    assert synced == SyncGroupResponse(Errors.NONE, b"orders-0", "consumer", "range")
    beat = broker.request(HeartbeatRequest("group-a", 1, member)).body
    assert beat == HeartbeatResponse(Errors.NONE)
    commit = OffsetCommitRequest(
        "group-a", {T0: OffsetCommitRequestPartition(3)}, generation_id=1, member_id=member
    )
    assert broker.request(commit).body == OffsetCommitResponse({T0: Errors.NONE})
    stale = OffsetCommitRequest(
        "group-a", {T0: OffsetCommitRequestPartition(4)}, generation_id=0, member_id=member
    )
    assert broker.request(stale).body == OffsetCommitResponse({T0: Errors.ILLEGAL_GENERATION})
    left = broker.request(LeaveGroupRequest("group-a", [member, "ghost"])).body
    assert left == LeaveGroupResponse(
        Errors.NONE,
        [
            LeaveGroupResponseMember(member, Errors.NONE),
            LeaveGroupResponseMember("ghost", Errors.UNKNOWN_MEMBER_ID),
        ],
    )
    assert broker.gc.group("group-a").state.value == "Empty"  # type: ignore[union-attr]


def test_before_version_4_a_new_member_joins_at_once() -> None:
    broker = SingleBroker()
    joined = join(broker, version=3)
    assert joined.error is Errors.NONE and joined.generation_id == 1


def test_a_session_timeout_out_of_bounds_and_an_empty_group_id() -> None:
    broker = SingleBroker()
    short = broker.request(JoinGroupRequest("group-a", 10, PROTOCOLS)).body
    assert isinstance(short, JoinGroupResponse)
    assert short.error is Errors.INVALID_SESSION_TIMEOUT
    empty = broker.request(HeartbeatRequest("", 1, "m")).body
    assert empty == HeartbeatResponse(Errors.INVALID_GROUP_ID)


def test_a_v0_join_rebalances_within_its_session_timeout() -> None:
    broker = SingleBroker()
    request = broker.send(JoinGroupRequest("group-a", 6000, PROTOCOLS))
    broker.advance(3000)
    first = broker.responses()
    assert [r.request for r in first] == [request]
    assert broker.gc.group("group-a").rebalance_timeout_ms == 6000  # type: ignore[union-attr]

"""A consumer group on 3 brokers: join, sync, heartbeat, a member's session ends, the group
rebalances, and the coordinator moves without losing the group."""

from __future__ import annotations

from apis import (
    Errors,
    HeartbeatResponse,
    JoinGroupResponse,
    KafkaConfig,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from cluster import Call, Client, Cluster
from coordinator import GroupState, OffsetConfig
from replica.types import TopicPartition

GROUP = "billing"
TP0 = TopicPartition("events", 0)
SESSION_MS = 10_000


def make_cluster() -> tuple[Cluster, Client]:
    config = KafkaConfig(offsets=OffsetConfig(offsets_topic_num_partitions=5))
    cluster = Cluster(3, config=config)
    cluster.create_topic("events", 2, 3)
    cluster.advance(config.broker.replica_fetch_wait_max_ms)
    return cluster, Client(cluster)


def joined(call: Call) -> JoinGroupResponse:
    response = call.result(JoinGroupResponse)
    assert response.error is Errors.NONE, response
    return response


def heartbeat(client: Client, generation: int, member: str) -> Errors:
    return client.heartbeat(GROUP, generation, member).result(HeartbeatResponse).error


def group_state(cluster: Cluster) -> GroupState | None:
    group = cluster.broker(cluster.coordinator(GROUP)).group_coordinator.group(GROUP)
    return None if group is None else group.state


def form_group(cluster: Cluster, client: Client) -> tuple[str, str]:
    """Two members join and sync generation 1; returns (leader, follower)."""
    first = client.join_group(GROUP, session_timeout_ms=SESSION_MS)
    second = client.join_group(GROUP, session_timeout_ms=SESSION_MS)
    assert not first.done and group_state(cluster) is GroupState.PREPARING_REBALANCE
    cluster.advance(6000)  # the initial delay, re-armed once for the second member
    a, b = joined(first), joined(second)
    assert a.generation_id == b.generation_id == 1 and a.leader == b.leader == a.member_id
    assert {m.member_id for m in a.members} == {a.member_id, b.member_id} and b.members == []
    follower_sync = client.sync_group(GROUP, 1, b.member_id)
    assert not follower_sync.done  # parked until the leader's assignment is stored
    plan = {a.member_id: b"events-0", b.member_id: b"events-1"}
    leader_sync = client.sync_group(GROUP, 1, a.member_id, plan)
    assert leader_sync.result(SyncGroupResponse).assignment == b"events-0"
    assert follower_sync.result(SyncGroupResponse).assignment == b"events-1"
    assert group_state(cluster) is GroupState.STABLE
    return a.member_id, b.member_id


def test_a_silent_member_is_removed_after_its_session_and_the_group_rebalances() -> None:
    cluster, client = make_cluster()
    leader, follower = form_group(cluster, client)
    for _ in range(4):  # both heartbeat for 12 s
        cluster.advance(3000)
        assert heartbeat(client, 1, leader) is Errors.NONE
        assert heartbeat(client, 1, follower) is Errors.NONE
    stopped_at = cluster.clock.now  # the follower stops heartbeating
    while cluster.clock.now < stopped_at + SESSION_MS - 3000:
        cluster.advance(3000)
        assert heartbeat(client, 1, leader) is Errors.NONE
    cluster.advance(stopped_at + SESSION_MS - 1 - cluster.clock.now)
    assert heartbeat(client, 1, leader) is Errors.NONE  # the follower is still a member
    cluster.advance(1)  # its session timeout: removed, the group rebalances
    assert heartbeat(client, 1, leader) is Errors.REBALANCE_IN_PROGRESS
    assert heartbeat(client, 1, follower) is Errors.UNKNOWN_MEMBER_ID
    rejoin = joined(client.join_group(GROUP, leader, session_timeout_ms=SESSION_MS))
    assert (rejoin.generation_id, [m.member_id for m in rejoin.members]) == (2, [leader])
    sync = client.sync_group(GROUP, 2, leader, {leader: b"events-0,events-1"})
    assert sync.result(SyncGroupResponse).assignment == b"events-0,events-1"
    commit = client.commit(GROUP, {TP0: 7}, generation_id=2, member_id=leader)
    assert commit.result(OffsetCommitResponse).errors == {TP0: Errors.NONE}
    stale = client.commit(GROUP, {TP0: 8}, generation_id=1, member_id=leader)
    assert stale.result(OffsetCommitResponse).errors == {TP0: Errors.ILLEGAL_GENERATION}


def test_the_group_survives_a_coordinator_move() -> None:
    cluster, client = make_cluster()
    leader, follower = form_group(cluster, client)
    old = cluster.coordinator(GROUP)
    cluster.stop_broker(old)
    new = cluster.coordinator(GROUP)
    assert new not in (old, -1)
    group = cluster.broker(new).group_coordinator.group(GROUP)
    assert group is not None and group.state is GroupState.STABLE
    assert (group.generation_id, group.leader_id) == (1, leader)
    assert {m.member_id: m.assignment for m in group.members} == {
        leader: b"events-0",
        follower: b"events-1",
    }
    # Both members find the new coordinator and carry on in generation 1.
    assert heartbeat(client, 1, leader) is Errors.NONE
    assert heartbeat(client, 1, follower) is Errors.NONE
    again = client.sync_group(GROUP, 1, follower).result(SyncGroupResponse)
    assert again.assignment == b"events-1"
    left = client.leave_group(GROUP, [follower]).result(LeaveGroupResponse)
    assert left.error is Errors.NONE and group.state is GroupState.PREPARING_REBALANCE
    cluster.restart_broker(old)  # back as a follower: it no longer holds the group
    assert cluster.broker(old).group_coordinator.group(GROUP) is None
    assert cluster.coordinator(GROUP) == new
    commit = client.commit(GROUP, {TP0: 3}, generation_id=1, member_id=leader)
    assert commit.result(OffsetCommitResponse).errors == {TP0: Errors.NONE}
    fetched = client.fetch_offsets(GROUP).result(OffsetFetchResponse)
    assert fetched.offsets[TP0].offset == 3


def test_a_member_that_never_heartbeats_after_the_move_expires_on_the_new_coordinator() -> None:
    cluster, client = make_cluster()
    leader, follower = form_group(cluster, client)
    cluster.stop_broker(cluster.coordinator(GROUP))
    moved_at = cluster.clock.now
    while cluster.clock.now < moved_at + SESSION_MS - 3000:
        cluster.advance(3000)
        assert heartbeat(client, 1, leader) is Errors.NONE
    cluster.advance(moved_at + SESSION_MS - cluster.clock.now)
    assert heartbeat(client, 1, follower) is Errors.UNKNOWN_MEMBER_ID
    assert heartbeat(client, 1, leader) is Errors.REBALANCE_IN_PROGRESS

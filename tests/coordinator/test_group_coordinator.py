"""GroupCoordinator: the classic group protocol on the Heartbeat and Rebalance purgatories."""

from __future__ import annotations

import pytest

from coordinator import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    GroupConfig,
    GroupCoordinator,
    GroupState,
    OffsetsPartitionStatus,
)
from replica.errors import Errors
from replica.types import TopicPartition
from tests.coordinator.group_harness import GROUP, Broker

T0 = TopicPartition("orders", 0)


def state(broker: Broker, group: str = GROUP) -> GroupState:
    found = broker.gc.group(group)
    assert found is not None
    return found.state


# -- joining ------------------------------------------------------------------------------


def test_member_id_required_then_join_with_the_generated_id() -> None:
    broker = Broker()
    first = broker.join(require_known_member_id=True, client_id="consumer-1")
    assert first.join.error is Errors.MEMBER_ID_REQUIRED
    member_id = first.join.member_id
    assert member_id.startswith("consumer-1-")
    assert broker.gc.group(GROUP).is_pending_member(member_id)  # type: ignore[union-attr]
    joined = broker.join(member_id, require_known_member_id=True)
    assert not joined.done  # parked for the initial delay
    broker.advance(3000)
    result = joined.join
    assert (result.error, result.generation_id, result.leader_id) == (Errors.NONE, 1, member_id)
    assert result.protocol_name == "range"
    assert [m.member_id for m in result.members] == [member_id]
    assert state(broker) is GroupState.COMPLETING_REBALANCE


def test_pending_member_expires_after_its_session_timeout() -> None:
    broker = Broker()
    member_id = broker.join(require_known_member_id=True, session_timeout_ms=7000).join.member_id
    broker.advance(6999)
    assert broker.gc.group(GROUP).is_pending_member(member_id)  # type: ignore[union-attr]
    broker.advance(1)
    assert not broker.gc.group(GROUP).is_pending_member(member_id)  # type: ignore[union-attr]
    assert broker.join(member_id).join.error is Errors.UNKNOWN_MEMBER_ID


def test_initial_delay_is_rearmed_while_members_arrive_within_the_rebalance_timeout() -> None:
    broker = Broker()
    a = broker.join(client_id="a", rebalance_timeout_ms=5000)
    broker.advance(1000)
    b = broker.join(client_id="b", rebalance_timeout_ms=5000)
    broker.advance(1999)  # t = 2999: the first delay (3000) has not run out
    assert not a.done
    broker.advance(1)  # t = 3000: b arrived meanwhile, wait min(3000, 5000 - 3000) more
    assert not a.done and state(broker) is GroupState.PREPARING_REBALANCE
    broker.advance(1999)
    assert not a.done
    broker.advance(1)  # t = 5000: the rebalance timeout bounds the wait
    assert a.join.generation_id == b.join.generation_id == 1
    assert len(a.join.members) == 2 and b.join.members == ()


def test_initial_delay_without_new_members_completes_once() -> None:
    broker = Broker(GroupConfig(group_initial_rebalance_delay_ms=100))
    a = broker.join()
    broker.advance(100)
    assert a.join.error is Errors.NONE


def test_session_timeout_bounds() -> None:
    broker = Broker()
    assert broker.join(session_timeout_ms=5999).join.error is Errors.INVALID_SESSION_TIMEOUT
    assert broker.join(session_timeout_ms=1_800_001).join.error is Errors.INVALID_SESSION_TIMEOUT
    assert broker.gc.group(GROUP) is None  # refused before the group is created
    assert not broker.join(session_timeout_ms=6000).done
    assert not broker.join(session_timeout_ms=1_800_000).done


def test_unknown_member_of_an_unknown_group() -> None:
    assert Broker().join("someone").join.error is Errors.UNKNOWN_MEMBER_ID


def test_inconsistent_protocols_are_refused() -> None:
    broker = Broker()
    broker.join(protocols=(("range", b""),))
    refused = broker.join(protocols=(("roundrobin", b""),))
    assert refused.join.error is Errors.INCONSISTENT_GROUP_PROTOCOL
    assert broker.join(protocol_type="connect").join.error is Errors.INCONSISTENT_GROUP_PROTOCOL
    assert broker.join(protocol_type="").join.error is Errors.INCONSISTENT_GROUP_PROTOCOL


def test_protocol_with_the_most_votes_among_those_all_support() -> None:
    broker = Broker()
    both = (("range", b"r"), ("roundrobin", b"rr"))
    answers = [
        broker.join(protocols=both),
        broker.join(protocols=(("roundrobin", b"rr"), ("range", b"r"))),
        broker.join(protocols=both),
    ]
    broker.advance(6000)
    assert {a.join.protocol_name for a in answers} == {"range"}
    assert [m.metadata for m in answers[0].join.members] == [b"r", b"r", b"r"]


def test_only_a_protocol_every_member_supports_is_selected() -> None:
    broker = Broker()
    answers = [
        broker.join(protocols=(("range", b""), ("sticky", b""))),
        broker.join(protocols=(("range", b""), ("sticky", b""))),
        broker.join(protocols=(("sticky", b""),)),
    ]
    broker.advance(6000)
    assert {a.join.protocol_name for a in answers} == {"sticky"}


# -- syncing ------------------------------------------------------------------------------


def test_leader_assignment_is_handed_out_by_sync_group() -> None:
    broker = Broker()
    a, b = broker.join(client_id="a"), broker.join(client_id="b")
    broker.advance(6000)
    leader, follower = a.join.member_id, b.join.member_id
    parked = broker.sync(follower, 1)
    assert not parked.done
    assignment = broker.sync(leader, 1, {leader: b"p0", follower: b"p1"})
    assert assignment.sync.assignment == b"p0" and parked.sync.assignment == b"p1"
    assert parked.sync.protocol_name == "range" and parked.sync.protocol_type == "consumer"
    assert state(broker) is GroupState.STABLE
    # A member that lost its answer syncs again in STABLE: the same assignment.
    assert broker.sync(follower, 1).sync.assignment == b"p1"


def test_members_left_out_by_the_leader_get_an_empty_assignment() -> None:
    broker = Broker()
    a, b = broker.join(client_id="a"), broker.join(client_id="b")
    broker.advance(6000)
    broker.sync(a.join.member_id, 1, {a.join.member_id: b"all"})
    assert broker.sync(b.join.member_id, 1).sync.assignment == b""


@pytest.mark.parametrize(
    ("generation", "protocol", "expected"),
    [(2, None, Errors.ILLEGAL_GENERATION), (1, "sticky", Errors.INCONSISTENT_GROUP_PROTOCOL)],
)
def test_sync_group_checks(generation: int, protocol: str | None, expected: Errors) -> None:
    broker = Broker()
    ids = broker.stable_group("a")
    answer = broker.sync(ids["a"], generation, protocol_name=protocol)
    assert answer.sync.error is expected
    assert broker.sync("nobody", 1).sync.error is Errors.UNKNOWN_MEMBER_ID
    assert broker.sync("x", 1, group="other").sync.error is Errors.UNKNOWN_MEMBER_ID


def test_members_that_never_sync_are_removed_and_the_group_rebalances() -> None:
    broker = Broker()
    a = broker.join(client_id="a", session_timeout_ms=30_000, rebalance_timeout_ms=20_000)
    b = broker.join(client_id="b", session_timeout_ms=30_000, rebalance_timeout_ms=20_000)
    broker.advance(6000)
    leader = a.join.member_id
    broker.sync(leader, 1, {leader: b"x"})
    broker.advance(19_999)
    assert broker.gc.group(GROUP).has(b.join.member_id)  # type: ignore[union-attr]
    broker.advance(1)
    assert not broker.gc.group(GROUP).has(b.join.member_id)  # type: ignore[union-attr]
    assert state(broker) is GroupState.PREPARING_REBALANCE
    assert broker.gc.heartbeat_purgatory.watchers((GROUP, b.join.member_id)) == []


# -- sessions -----------------------------------------------------------------------------


def test_heartbeats_keep_a_member_and_silence_removes_it_after_its_session_timeout() -> None:
    broker = Broker()
    ids = broker.stable_group("a", "b")
    for _ in range(5):  # 15 s of heartbeats, each within the 10 s session
        broker.advance(3000)
        assert broker.gc.handle_heartbeat(GROUP, ids["a"], 1) is Errors.NONE
        assert broker.gc.handle_heartbeat(GROUP, ids["b"], 1) is Errors.NONE
    broker.advance(3000)
    assert broker.gc.handle_heartbeat(GROUP, ids["a"], 1) is Errors.NONE  # b stops
    broker.advance(6999)  # b's last heartbeat was 9999 ms ago
    assert broker.gc.group(GROUP).has(ids["b"])  # type: ignore[union-attr]
    broker.advance(1)
    assert not broker.gc.group(GROUP).has(ids["b"])  # type: ignore[union-attr]
    assert state(broker) is GroupState.PREPARING_REBALANCE
    assert broker.gc.handle_heartbeat(GROUP, ids["a"], 1) is Errors.REBALANCE_IN_PROGRESS
    rejoin = broker.join(ids["a"])  # the only member left: the join completes at once
    assert (rejoin.join.generation_id, rejoin.join.leader_id) == (2, ids["a"])
    assert [m.member_id for m in rejoin.join.members] == [ids["a"]]


@pytest.mark.parametrize(
    ("member", "generation", "expected"),
    [("b", 1, Errors.UNKNOWN_MEMBER_ID), ("a", 0, Errors.ILLEGAL_GENERATION)],
)
def test_heartbeat_checks(member: str, generation: int, expected: Errors) -> None:
    broker = Broker()
    ids = broker.stable_group("a")
    assert broker.gc.handle_heartbeat(GROUP, ids.get(member, member), generation) is expected
    assert broker.gc.handle_heartbeat("other", "x", 1) is Errors.UNKNOWN_MEMBER_ID


def test_a_new_member_that_never_gets_its_answer_expires_after_the_join_timeout() -> None:
    broker = Broker()
    ids = broker.stable_group("a")
    # A new member starts a rebalance that a, alive but never rejoining, holds up for 10 min.
    parked = broker.join(client_id="new", rebalance_timeout_ms=600_000)
    for _ in range(NEW_MEMBER_JOIN_TIMEOUT_MS // 3000 - 1):
        broker.advance(3000)
        broker.gc.handle_heartbeat(GROUP, ids["a"], 1)
    broker.advance(2999)
    assert not parked.done
    broker.advance(1)
    assert parked.join.error is Errors.UNKNOWN_MEMBER_ID
    assert [m.member_id for m in broker.gc.group(GROUP).members] == [ids["a"]]  # type: ignore[union-attr]


def test_rebalance_timeout_removes_members_that_do_not_rejoin() -> None:
    broker = Broker()
    ids = broker.stable_group("a", "b")
    rejoin = broker.join(ids["a"], rebalance_timeout_ms=30_000)  # the leader asks to rebalance
    for _ in range(9):  # b keeps heartbeating but never rejoins
        broker.advance(3000)
        assert broker.gc.handle_heartbeat(GROUP, ids["b"], 1) is Errors.REBALANCE_IN_PROGRESS
    assert not rejoin.done
    broker.advance(3000)  # 30 s: the rebalance timeout
    assert (rejoin.join.generation_id, [m.member_id for m in rejoin.join.members]) == (
        2,
        [ids["a"]],
    )
    assert broker.gc.handle_heartbeat(GROUP, ids["b"], 1) is Errors.UNKNOWN_MEMBER_ID


def test_a_follower_rejoining_unchanged_in_a_stable_group_gets_the_current_generation() -> None:
    broker = Broker()
    ids = broker.stable_group("a", "b")
    answer = broker.join(ids["b"])
    assert (answer.join.generation_id, answer.join.members) == (1, ())
    assert state(broker) is GroupState.STABLE


def test_a_superseded_parked_join_is_answered() -> None:
    broker = Broker()
    ids = broker.stable_group("a", "b")
    first = broker.join(ids["a"])
    second = broker.join(ids["a"])
    assert first.join.error is Errors.REBALANCE_IN_PROGRESS
    assert not second.done


# -- leaving ------------------------------------------------------------------------------


def test_leave_group_in_a_batch() -> None:
    broker = Broker()
    ids = broker.stable_group("a", "b", "c")
    result = broker.gc.handle_leave_group(GROUP, [ids["b"], "nobody", ids["c"]])
    assert result.error is Errors.NONE
    assert result.members == (
        (ids["b"], Errors.NONE),
        ("nobody", Errors.UNKNOWN_MEMBER_ID),
        (ids["c"], Errors.NONE),
    )
    assert state(broker) is GroupState.PREPARING_REBALANCE
    assert broker.join(ids["a"]).join.generation_id == 2
    last = broker.gc.handle_leave_group(GROUP, [ids["a"]])
    assert last.members == ((ids["a"], Errors.NONE),)
    assert state(broker) is GroupState.EMPTY  # nobody left to wait for: the join completed
    assert broker.sync(ids["a"], 2).sync.error is Errors.UNKNOWN_MEMBER_ID


def test_leave_group_of_a_pending_member_and_of_an_unknown_group() -> None:
    broker = Broker()
    pending = broker.join(require_known_member_id=True).join.member_id
    assert broker.gc.handle_leave_group(GROUP, [pending]).members == ((pending, Errors.NONE),)
    assert broker.join(pending).join.error is Errors.UNKNOWN_MEMBER_ID
    unknown = broker.gc.handle_leave_group("other", ["x"])
    assert unknown.members == (("x", Errors.UNKNOWN_MEMBER_ID),)


def test_a_parked_sync_of_a_member_that_leaves_is_answered() -> None:
    broker = Broker()
    a, b = broker.join(client_id="a"), broker.join(client_id="b")
    broker.advance(6000)
    parked = broker.sync(b.join.member_id, 1)
    broker.gc.handle_leave_group(GROUP, [b.join.member_id])
    assert parked.sync.error is Errors.UNKNOWN_MEMBER_ID
    assert state(broker) is GroupState.PREPARING_REBALANCE
    assert a.join.error is Errors.NONE


# -- offset commits -----------------------------------------------------------------------


def test_simple_commits_without_membership() -> None:
    broker = Broker()
    assert broker.commit("", -1, group="simple") == {T0: Errors.NONE}
    assert broker.commit("", 3, group="simple") == {T0: Errors.ILLEGAL_GENERATION}
    assert broker.gc.handle_fetch_offsets("simple", [T0]).offsets[T0].offset == 5


def test_commits_are_checked_against_generation_and_member() -> None:
    broker = Broker()
    ids = broker.stable_group("a")
    assert broker.commit(ids["a"], 1) == {T0: Errors.NONE}
    assert broker.commit(ids["a"], 2) == {T0: Errors.ILLEGAL_GENERATION}
    assert broker.commit("nobody", 1) == {T0: Errors.UNKNOWN_MEMBER_ID}
    assert broker.commit("", -1) == {T0: Errors.UNKNOWN_MEMBER_ID}  # the group has members
    broker.join(client_id="b")  # PREPARING_REBALANCE: generation 1 still commits
    assert broker.commit(ids["a"], 1) == {T0: Errors.NONE}
    broker.join(ids["a"])  # every member joined: generation 2 starts at once
    assert state(broker) is GroupState.COMPLETING_REBALANCE
    assert broker.commit(ids["a"], 2) == {T0: Errors.REBALANCE_IN_PROGRESS}


def test_an_empty_group_takes_simple_commits() -> None:
    broker = Broker()
    ids = broker.stable_group("a")
    broker.gc.handle_leave_group(GROUP, [ids["a"]])
    assert state(broker) is GroupState.EMPTY
    assert broker.commit("", -1) == {T0: Errors.NONE}
    assert broker.commit(ids["a"], 1) == {T0: Errors.UNKNOWN_MEMBER_ID}


# -- coordinator status -------------------------------------------------------------------


def test_not_coordinator_and_shutdown() -> None:
    broker = Broker()
    ids = broker.stable_group("a")
    broker.lead(False)
    assert broker.join().join.error is Errors.NOT_COORDINATOR
    assert broker.gc.handle_heartbeat(GROUP, ids["a"], 1) is Errors.NOT_COORDINATOR
    assert broker.commit("", -1) == {T0: Errors.NOT_COORDINATOR}
    broker.gc.shutdown()
    assert broker.join().join.error is Errors.COORDINATOR_NOT_AVAILABLE
    assert broker.gc.handle_leave_group(GROUP, ["x"]).error is Errors.COORDINATOR_NOT_AVAILABLE
    assert broker.gc.handle_fetch_offsets(GROUP).error is Errors.COORDINATOR_NOT_AVAILABLE
    assert broker.gc.next_deadline() is None
    assert Broker().join(group="").join.error is Errors.INVALID_GROUP_ID


def test_while_loading() -> None:
    broker = Broker()
    ids = broker.stable_group("a")
    tasks: list[object] = []
    broker.om._scheduler = tasks.append  # the next load waits for its task
    broker.lead(False)
    broker.lead(True)
    assert broker.om.partition_status(broker.om.partition_for(GROUP)) is (
        OffsetsPartitionStatus.LOADING
    )
    assert broker.join().join.error is Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert broker.sync(ids["a"], 1).sync.error is Errors.REBALANCE_IN_PROGRESS
    assert broker.gc.handle_heartbeat(GROUP, ids["a"], 1) is Errors.NONE


# -- a coordinator move -------------------------------------------------------------------


def test_resignation_answers_parked_requests_and_election_reloads_the_group() -> None:
    broker = Broker()
    ids = broker.stable_group("a", "b")
    parked = broker.join(ids["a"])  # the leader starts a rebalance
    broker.lead(False)
    assert parked.join.error is Errors.NOT_COORDINATOR
    assert broker.gc.group(GROUP) is None
    broker.lead(True)  # the log still holds generation 1
    group = broker.gc.group(GROUP)
    assert group is not None and group.state is GroupState.STABLE
    assert (group.generation_id, group.leader_id, group.protocol_name) == (1, ids["a"], "range")
    assert {m.member_id: m.assignment for m in group.members} == {
        ids["a"]: b"a",
        ids["b"]: b"b",
    }
    assert broker.sync(ids["b"], 1).sync.assignment == b"b"
    assert broker.commit(ids["a"], 1) == {T0: Errors.NONE}
    # Loaded members start new sessions: a keeps heartbeating, b is silent and expires.
    for _ in range(3):
        broker.advance(3000)
        broker.gc.handle_heartbeat(GROUP, ids["a"], 1)
    broker.advance(1000)
    assert [m.member_id for m in group.members] == [ids["a"]]
    assert state(broker) is GroupState.PREPARING_REBALANCE


def test_an_empty_generation_is_stored_and_reloaded() -> None:
    broker = Broker()
    ids = broker.stable_group("a")
    broker.gc.handle_leave_group(GROUP, [ids["a"]])
    broker.lead(False)
    broker.lead(True)
    group = broker.gc.group(GROUP)
    assert group is not None
    assert (group.state, group.generation_id, group.members) == (GroupState.EMPTY, 2, [])


def test_a_fresh_coordinator_never_hands_out_an_id_its_group_already_has() -> None:
    broker = Broker()
    ids = broker.stable_group("c")
    # A fresh coordinator of the same broker (its id counter starts over) loads the group.
    broker.gc = GroupCoordinator(0, broker.om, GroupConfig(), broker.clock)
    broker.gc.on_election(broker.om.partition_for(GROUP))
    assert [m.member_id for m in broker.gc.group(GROUP).members] == [ids["c"]]  # type: ignore[union-attr]
    pending = broker.join(client_id="c", require_known_member_id=True).join
    assert pending.error is Errors.MEMBER_ID_REQUIRED and pending.member_id != ids["c"]


def test_heartbeats_leave_one_delayed_heartbeat_per_member() -> None:
    broker = Broker()
    ids = broker.stable_group("a", "b")
    for _ in range(100):
        for member in ids.values():
            assert broker.gc.handle_heartbeat(GROUP, member, 1) is Errors.NONE
    purgatory = broker.gc.heartbeat_purgatory
    assert (purgatory.watched, purgatory.num_delayed) == (2, 2)
    assert broker.gc.rebalance_purgatory.num_delayed == 0  # the sync phase is over

"""A stateful property test of the GroupCoordinator: whatever members do (join, rejoin, sync
with any generation, heartbeat, leave, commit) and however time passes, every request gets
exactly one answer (the parked ones at the latest once every timeout has run out), and the
group's bookkeeping stays consistent."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordinator import GroupState, JoinGroupResult
from replica.errors import Errors
from tests.coordinator.group_harness import GROUP, Answer, Broker

PROTOCOLS = st.sampled_from([(("range", b"a"),), (("range", b"b"),), (("sticky", b""),)])


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.broker = Broker()
        self.answers: list[Answer] = []
        self.member_ids: list[str] = []

    def _known(self, index: int) -> str:
        return self.member_ids[index % len(self.member_ids)]

    def _generation(self) -> int:
        group = self.broker.gc.group(GROUP)
        return 0 if group is None else group.generation_id

    @rule(protocols=PROTOCOLS, require_id=st.booleans(), session=st.sampled_from([6000, 9000]))
    def join_new(
        self, protocols: tuple[tuple[str, bytes], ...], require_id: bool, session: int
    ) -> None:
        answer = self.broker.join(
            protocols=protocols,
            require_known_member_id=require_id,
            session_timeout_ms=session,
            rebalance_timeout_ms=12_000,
        )
        self.answers.append(answer)
        if answer.done and answer.join.member_id:
            self.member_ids.append(answer.join.member_id)

    @precondition(lambda self: self.member_ids)
    @rule(index=st.integers(0, 50), protocols=PROTOCOLS)
    def rejoin(self, index: int, protocols: tuple[tuple[str, bytes], ...]) -> None:
        answer = self.broker.join(
            self._known(index), protocols=protocols, rebalance_timeout_ms=12_000
        )
        self.answers.append(answer)

    @precondition(lambda self: self.member_ids)
    @rule(index=st.integers(0, 50), offset=st.integers(-1, 1), assign=st.booleans())
    def sync(self, index: int, offset: int, assign: bool) -> None:
        member = self._known(index)
        assignments = {m: m.encode() for m in self.member_ids} if assign else {}
        self.answers.append(self.broker.sync(member, self._generation() + offset, assignments))

    @precondition(lambda self: self.member_ids)
    @rule(index=st.integers(0, 50))
    def heartbeat(self, index: int) -> None:
        error = self.broker.gc.handle_heartbeat(GROUP, self._known(index), self._generation())
        assert error in {
            Errors.NONE,
            Errors.REBALANCE_IN_PROGRESS,
            Errors.UNKNOWN_MEMBER_ID,
            Errors.ILLEGAL_GENERATION,
        }

    @precondition(lambda self: self.member_ids)
    @rule(index=st.integers(0, 50))
    def leave(self, index: int) -> None:
        result = self.broker.gc.handle_leave_group(GROUP, [self._known(index)])
        assert result.error is Errors.NONE and len(result.members) == 1

    @precondition(lambda self: self.member_ids)
    @rule(index=st.integers(0, 50))
    def commit(self, index: int) -> None:
        errors = self.broker.commit(self._known(index), self._generation())
        assert set(errors.values()) <= {
            Errors.NONE,
            Errors.UNKNOWN_MEMBER_ID,
            Errors.ILLEGAL_GENERATION,
            Errors.REBALANCE_IN_PROGRESS,
        }

    @rule(ms=st.integers(0, 15_000))
    def advance(self, ms: int) -> None:
        self.broker.advance(ms)

    @invariant()
    def answered_at_most_once(self) -> None:
        for answer in self.answers:
            assert len(answer.calls) <= 1, answer.calls
            result = answer.calls[0] if answer.calls else None
            if isinstance(result, JoinGroupResult) and result.member_id not in self.member_ids:
                self.member_ids.append(result.member_id)

    @invariant()
    def bookkeeping_is_consistent(self) -> None:
        group = self.broker.gc.group(GROUP)
        if group is None:
            return
        members = [m.member_id for m in group.members]
        if members:
            assert group.leader_id in members
        else:
            assert group.leader_id is None
            assert group.state in (GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
        assert set(group.pending_sync_members) <= set(members)
        if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            assert group.generation_id >= 1 and group.protocol_name is not None
            assert all(m.awaiting_join is None for m in group.members)
        if group.state is not GroupState.COMPLETING_REBALANCE:
            assert all(m.awaiting_sync is None for m in group.members)

    def teardown(self) -> None:
        self.broker.advance(20 * 60 * 1000)  # every session, join and sync timeout runs out
        for answer in self.answers:
            assert len(answer.calls) == 1, answer


TestGroupMachine = GroupMachine.TestCase
TestGroupMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)

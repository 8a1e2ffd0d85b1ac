"""A GroupCoordinator on one broker that leads every offsets partition (RF 1, so the group
metadata store completes at once), with recorders for the parked requests' answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from coordinator import (
    GroupConfig,
    GroupCoordinator,
    JoinGroupResult,
    OffsetAndMetadata,
    OffsetConfig,
    OffsetManager,
    SyncGroupResult,
)
from replica.config import BrokerConfig
from replica.errors import Errors
from replica.replica_manager import ReplicaManager
from replica.types import GROUP_METADATA_TOPIC_NAME, PartitionState, TopicPartition

NUM_PARTITIONS = 4
GROUP = "g"
PROTOCOLS = (("range", b"sub"),)


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


@attrs.define
class Answer:
    """The answers a request got (exactly one expected)."""

    calls: list[object] = attrs.field(factory=list)

    def __call__(self, result: object) -> None:
        self.calls.append(result)

    @property
    def done(self) -> bool:
        return bool(self.calls)

    @property
    def join(self) -> JoinGroupResult:
        assert len(self.calls) == 1, self.calls
        result = self.calls[0]
        assert isinstance(result, JoinGroupResult)
        return result

    @property
    def sync(self) -> SyncGroupResult:
        assert len(self.calls) == 1, self.calls
        result = self.calls[0]
        assert isinstance(result, SyncGroupResult)
        return result

    @property
    def commit(self) -> dict[TopicPartition, Errors]:
        assert len(self.calls) == 1, self.calls
        result = self.calls[0]
        assert isinstance(result, dict)
        return result


class Broker:
    """Broker 0 leading every offsets partition, with a group coordinator."""

    def __init__(self, config: GroupConfig | None = None) -> None:
        self.clock = Clock()
        self.rm = ReplicaManager(
            0,
            BrokerConfig(),
            self.clock,
            metadata_contains=lambda tp: tp.topic == GROUP_METADATA_TOPIC_NAME,
        )
        self.om = OffsetManager(
            0, self.rm, OffsetConfig(offsets_topic_num_partitions=NUM_PARTITIONS), self.clock
        )
        self.gc = GroupCoordinator(0, self.om, config or GroupConfig(), self.clock)
        self.epoch = 0
        self.lead(True)

    def lead(self, leader: bool) -> None:
        """Become leader (True) or follower of every offsets partition."""
        self.epoch += 1
        states = {
            TopicPartition(GROUP_METADATA_TOPIC_NAME, p): PartitionState(
                0 if leader else 1,
                self.epoch,
                (0, 1) if not leader else (0,),
                (0, 1) if not leader else (0,),
            )
            for p in range(NUM_PARTITIONS)
        }

        def on_change(leaders: list[TopicPartition], followers: list[TopicPartition]) -> None:
            for tp in leaders:
                self.gc.on_election(tp.partition)
            for tp in followers:
                self.gc.on_resignation(tp.partition)

        self.rm.become_leader_or_follower(states, on_change)

    def advance(self, ms: int) -> None:
        """Move time by ``ms``, stopping at every coordinator deadline on the way."""
        target = self.clock.now + ms
        while (due := self.gc.next_deadline()) is not None and due <= target:
            self.clock.now = max(due, self.clock.now)
            self.gc.advance_clock(self.clock.now)
            self.rm.advance_clock(self.clock.now)
        self.clock.now = target
        self.gc.advance_clock(target)
        self.rm.advance_clock(target)

    def join(
        self,
        member_id: str = "",
        *,
        group: str = GROUP,
        protocols: Sequence[tuple[str, bytes]] = PROTOCOLS,
        protocol_type: str = "consumer",
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 30_000,
        require_known_member_id: bool = False,
        client_id: str = "c",
    ) -> Answer:
        answer = Answer()
        self.gc.handle_join_group(
            group,
            member_id,
            client_id=client_id,
            client_host="/127.0.0.1",
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            require_known_member_id=require_known_member_id,
            callback=answer,
        )
        return answer

    def sync(
        self,
        member_id: str,
        generation_id: int,
        assignments: Mapping[str, bytes] | None = None,
        *,
        group: str = GROUP,
        protocol_name: str | None = None,
    ) -> Answer:
        answer = Answer()
        self.gc.handle_sync_group(
            group,
            generation_id,
            member_id,
            protocol_type=None,
            protocol_name=protocol_name,
            assignments=assignments or {},
            callback=answer,
        )
        return answer

    def commit(
        self, member_id: str, generation_id: int, offset: int = 5, *, group: str = GROUP
    ) -> dict[TopicPartition, Errors]:
        answer = Answer()
        self.gc.handle_commit_offsets(
            group,
            member_id,
            generation_id,
            {TopicPartition("orders", 0): OffsetAndMetadata(offset)},
            answer,
        )
        return answer.commit

    def stable_group(self, *members: str) -> dict[str, str]:
        """Form a stable generation-1 group of len(members) members named by client id;
        returns client id -> member id (the first is the leader)."""
        answers = {client: self.join(client_id=client) for client in members}
        while not all(a.done for a in answers.values()):  # the initial delay, maybe twice
            self.advance(self.gc.config.group_initial_rebalance_delay_ms)
        ids = {client: a.join.member_id for client, a in answers.items()}
        leader = answers[members[0]].join
        assert leader.leader_id == ids[members[0]]
        syncs = [self.sync(ids[c], 1, {m: c.encode() for c, m in ids.items()}) for c in members]
        assert all(s.sync.error is Errors.NONE for s in syncs)
        return ids

"""OffsetManager against a real ReplicaManager (one broker; a second replica is simulated by
follower fetches through ReplicaManager.fetch_messages)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordinator import (
    NO_OFFSET,
    CorruptOffsetRecordError,
    OffsetAndMetadata,
    OffsetConfig,
    OffsetManager,
    OffsetsPartitionStatus,
    commit_error_for_append_error,
    partition_for_group,
)
from replica.config import BrokerConfig
from replica.errors import Errors
from replica.records import Record
from replica.replica_manager import ReplicaManager
from replica.types import (
    GROUP_METADATA_TOPIC_NAME,
    FetchPartitionData,
    IsolationLevel,
    PartitionFetchInfo,
    PartitionState,
    TopicPartition,
)

NUM_PARTITIONS = 4
T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def group_on(partition: int) -> str:
    """A group id whose offsets live on ``partition``."""
    return next(
        g
        for g in (f"group-{i}" for i in range(100))
        if partition_for_group(g, NUM_PARTITIONS) == partition
    )


class Broker:
    """Broker 0 leading every offsets partition, with ``replicas`` and ``isr``."""

    def __init__(
        self,
        *,
        replicas: tuple[int, ...] = (0,),
        isr: tuple[int, ...] | None = None,
        min_insync_replicas: int = 1,
        scheduler: Callable[[Callable[[], None]], object] | None = None,
        load_buffer: int = 5 * 1024 * 1024,
    ) -> None:
        self.clock = Clock()
        self.rm = ReplicaManager(
            0,
            BrokerConfig(min_insync_replicas=min_insync_replicas),
            self.clock,
            metadata_contains=lambda tp: tp.topic == GROUP_METADATA_TOPIC_NAME,
        )
        self.config = OffsetConfig(
            offsets_topic_num_partitions=NUM_PARTITIONS, offsets_load_buffer_size=load_buffer
        )
        self.om = OffsetManager(0, self.rm, self.config, self.clock, scheduler=scheduler)
        self.replicas = replicas
        self.epoch = 0
        self.apply(leader=0, isr=isr or replicas)

    def apply(self, *, leader: int, isr: tuple[int, ...]) -> None:
        """A LeaderAndIsr for every offsets partition, wired like KafkaApis does."""
        self.epoch += 1
        states = {
            TopicPartition(GROUP_METADATA_TOPIC_NAME, p): PartitionState(
                leader, self.epoch, isr, self.replicas
            )
            for p in range(NUM_PARTITIONS)
        }

        def on_change(leaders: list[TopicPartition], followers: list[TopicPartition]) -> None:
            for tp in leaders:
                self.om.on_election(tp.partition)
            for tp in followers:
                self.om.on_resignation(tp.partition)

        self.rm.become_leader_or_follower(states, on_change)

    def follower_catches_up(self, group_id: str, follower: int = 1) -> None:
        """Follower ``follower`` fetches the group's partition up to the leader's end."""
        tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, self.om.partition_for(group_id))
        for _ in range(2):  # read the records, then confirm the new end offset
            leo = self.rm.log_end_offset(tp)
            assert leo is not None
            got: list[dict[TopicPartition, FetchPartitionData]] = []
            self.rm.fetch_messages(
                follower,
                {tp: PartitionFetchInfo(leo, 1 << 20)},
                0,
                0,
                1 << 20,
                IsolationLevel.READ_UNCOMMITTED,
                got.append,
            )
            assert got and got[0][tp].error is Errors.NONE

    def commit(self, group_id: str, offsets: dict[TopicPartition, OffsetAndMetadata]) -> Outcome:
        outcome = Outcome()
        self.om.put_offsets(group_id, offsets, outcome)
        return outcome

    def log_end(self, group_id: str) -> int | None:
        return self.rm.log_end_offset(
            TopicPartition(GROUP_METADATA_TOPIC_NAME, self.om.partition_for(group_id))
        )


class Outcome:
    """A commit callback that records every call."""

    def __init__(self) -> None:
        self.calls: list[dict[TopicPartition, Errors]] = []

    def __call__(self, errors: dict[TopicPartition, Errors]) -> None:
        self.calls.append(dict(errors))

    @property
    def errors(self) -> dict[TopicPartition, Errors]:
        assert len(self.calls) == 1, f"expected exactly one callback, got {self.calls}"
        return self.calls[0]


GROUP = group_on(2)


def test_commit_is_cached_and_fetched() -> None:
    broker = Broker()
    outcome = broker.commit(GROUP, {T0: OffsetAndMetadata(10, "m"), T1: OffsetAndMetadata(3)})
    assert outcome.errors == {T0: Errors.NONE, T1: Errors.NONE}
    result = broker.om.get_offsets(GROUP, [T0, T1, TopicPartition("other", 0)])
    assert result.error is Errors.NONE
    assert result.offsets[T0] == OffsetAndMetadata(10, "m", commit_timestamp=1_000)
    assert result.offsets[T1].offset == 3
    assert result.offsets[TopicPartition("other", 0)] is NO_OFFSET
    assert broker.log_end(GROUP) == 2  # one record per committed partition


def test_fetch_all_partitions_of_a_group_sorted() -> None:
    broker = Broker()
    broker.commit(GROUP, {T1: OffsetAndMetadata(1), T0: OffsetAndMetadata(0)})
    broker.commit("another-" + GROUP, {T0: OffsetAndMetadata(99)})
    assert list(broker.om.get_offsets(GROUP).offsets) == [T0, T1]


def test_explicit_commit_timestamp_is_kept() -> None:
    broker = Broker()
    broker.commit(GROUP, {T0: OffsetAndMetadata(1, commit_timestamp=5)})
    assert broker.om.get_offsets(GROUP, [T0]).offsets[T0].commit_timestamp == 5


def test_metadata_too_large_fails_only_that_partition() -> None:
    broker = Broker()
    limit = broker.config.offset_metadata_max_bytes
    outcome = broker.commit(
        GROUP,
        {T0: OffsetAndMetadata(1, "x" * (limit + 1)), T1: OffsetAndMetadata(2, "y" * limit)},
    )
    assert outcome.errors == {T0: Errors.OFFSET_METADATA_TOO_LARGE, T1: Errors.NONE}
    offsets = broker.om.get_offsets(GROUP, [T0, T1]).offsets
    assert offsets[T0] is NO_OFFSET
    assert offsets[T1].offset == 2
    assert broker.log_end(GROUP) == 1


def test_metadata_length_counts_utf16_code_units_like_java() -> None:
    broker = Broker()
    limit = broker.config.offset_metadata_max_bytes
    emoji = "\U0001f600"  # two UTF-16 code units
    outcome = broker.commit(GROUP, {T0: OffsetAndMetadata(1, emoji * (limit // 2) + "z")})
    assert outcome.errors == {T0: Errors.OFFSET_METADATA_TOO_LARGE}
    assert broker.log_end(GROUP) == 0


def test_all_partitions_too_large_writes_nothing() -> None:
    broker = Broker()
    outcome = broker.commit(GROUP, {T0: OffsetAndMetadata(1, "x" * 5000)})
    assert outcome.errors == {T0: Errors.OFFSET_METADATA_TOO_LARGE}
    assert broker.log_end(GROUP) == 0


def test_group_not_led_here_gets_not_coordinator() -> None:
    broker = Broker()
    broker.om.on_resignation(broker.om.partition_for(GROUP))
    outcome = broker.commit(GROUP, {T0: OffsetAndMetadata(1)})
    assert outcome.errors == {T0: Errors.NOT_COORDINATOR}
    assert broker.om.get_offsets(GROUP).error is Errors.NOT_COORDINATOR
    assert broker.log_end(GROUP) == 0


def test_empty_group_id_is_invalid() -> None:
    broker = Broker()
    assert broker.commit("", {T0: OffsetAndMetadata(1)}).errors == {T0: Errors.INVALID_GROUP_ID}
    assert broker.om.get_offsets("").error is Errors.INVALID_GROUP_ID


def test_commit_waits_for_replication_then_caches() -> None:
    broker = Broker(replicas=(0, 1))
    broker.commit(GROUP, {T0: OffsetAndMetadata(1)})
    broker.follower_catches_up(GROUP)
    pending = broker.commit(GROUP, {T0: OffsetAndMetadata(2)})
    assert pending.calls == []
    assert broker.om.get_offsets(GROUP, [T0]).offsets[T0].offset == 1  # not visible yet
    broker.follower_catches_up(GROUP)
    assert pending.errors == {T0: Errors.NONE}
    assert broker.om.get_offsets(GROUP, [T0]).offsets[T0].offset == 2


def test_commit_that_cannot_replicate_times_out_and_leaves_cache() -> None:
    broker = Broker(replicas=(0, 1))
    broker.commit(GROUP, {T0: OffsetAndMetadata(1)})
    broker.follower_catches_up(GROUP)
    pending = broker.commit(GROUP, {T0: OffsetAndMetadata(2)})
    timeout = broker.config.offsets_commit_timeout_ms
    broker.clock.now += timeout - 1
    broker.rm.advance_clock(broker.clock.now)
    assert pending.calls == []
    broker.clock.now += 1
    broker.rm.advance_clock(broker.clock.now)
    assert pending.errors == {T0: Errors.REQUEST_TIMED_OUT}
    assert broker.om.get_offsets(GROUP, [T0]).offsets[T0].offset == 1


def test_not_enough_replicas_maps_to_coordinator_not_available() -> None:
    broker = Broker(replicas=(0, 1), isr=(0,), min_insync_replicas=2)
    outcome = broker.commit(GROUP, {T0: OffsetAndMetadata(7)})
    assert outcome.errors == {T0: Errors.COORDINATOR_NOT_AVAILABLE}
    assert broker.om.get_offsets(GROUP, [T0]).offsets[T0] is NO_OFFSET
    assert broker.log_end(GROUP) == 0


def test_losing_leadership_while_pending_gives_not_coordinator() -> None:
    broker = Broker(replicas=(0, 1))
    pending = broker.commit(GROUP, {T0: OffsetAndMetadata(7)})
    broker.apply(leader=1, isr=(0, 1))
    assert pending.errors == {T0: Errors.NOT_COORDINATOR}
    assert broker.om.get_offsets(GROUP).error is Errors.NOT_COORDINATOR
    partition = broker.om.partition_for(GROUP)
    assert broker.om.partition_status(partition) is OffsetsPartitionStatus.NOT_OWNED


@pytest.mark.parametrize("error", list(Errors))
def test_append_error_mapping(error: Errors) -> None:
    mapping = {
        Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
        Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
        Errors.MESSAGE_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
        Errors.RECORD_LIST_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
        Errors.INVALID_FETCH_SIZE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    }
    assert commit_error_for_append_error(error) is mapping.get(error, error)


def test_a_new_coordinator_loads_the_latest_commit_per_partition() -> None:
    broker = Broker(load_buffer=64)  # tiny reads: the load loops over many batches
    for offset in range(20):
        broker.commit(
            GROUP, {T0: OffsetAndMetadata(offset, f"m{offset}"), T1: OffsetAndMetadata(1)}
        )
    broker.commit("other-" + GROUP, {T0: OffsetAndMetadata(500)})
    fresh = OffsetManager(0, broker.rm, broker.config, broker.clock)
    assert fresh.get_offsets(GROUP).error is Errors.NOT_COORDINATOR
    fresh.on_election(fresh.partition_for(GROUP))
    loaded = fresh.get_offsets(GROUP)
    assert loaded.error is Errors.NONE
    assert loaded.offsets == broker.om.get_offsets(GROUP).offsets
    assert loaded.offsets[T0] == OffsetAndMetadata(19, "m19", commit_timestamp=1_000)


def test_scheduled_load_answers_load_in_progress_until_it_runs() -> None:
    tasks: list[Callable[[], None]] = []
    broker = Broker(scheduler=tasks.append)
    partition = broker.om.partition_for(GROUP)
    assert broker.om.partition_status(partition) is OffsetsPartitionStatus.LOADING
    assert broker.commit(GROUP, {T0: OffsetAndMetadata(1)}).errors == {
        T0: Errors.COORDINATOR_LOAD_IN_PROGRESS
    }
    assert broker.om.get_offsets(GROUP).error is Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert broker.log_end(GROUP) == 0
    for task in tasks:
        task()
    assert broker.om.partition_status(partition) is OffsetsPartitionStatus.ACTIVE
    assert broker.commit(GROUP, {T0: OffsetAndMetadata(1)}).errors == {T0: Errors.NONE}


def test_stale_load_task_does_nothing() -> None:
    tasks: list[Callable[[], None]] = []
    broker = Broker(scheduler=tasks.append)
    partition = broker.om.partition_for(GROUP)
    stale = tasks[partition]
    broker.om.on_resignation(partition)
    stale()
    assert broker.om.partition_status(partition) is OffsetsPartitionStatus.NOT_OWNED
    broker.om.on_election(partition)  # re-elected: only the new task may finish the load
    stale()
    assert broker.om.partition_status(partition) is OffsetsPartitionStatus.LOADING
    tasks[-1]()
    assert broker.om.partition_status(partition) is OffsetsPartitionStatus.ACTIVE


def test_resignation_drops_the_partitions_groups() -> None:
    broker = Broker()
    broker.commit(GROUP, {T0: OffsetAndMetadata(4)})
    partition = broker.om.partition_for(GROUP)
    broker.om.on_resignation(partition)
    broker.om.on_election(partition)  # reload from the log: the commit is still there
    assert broker.om.get_offsets(GROUP, [T0]).offsets[T0].offset == 4


def test_corrupt_record_in_the_log_fails_the_load() -> None:
    broker = Broker()
    tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, broker.om.partition_for(GROUP))
    broker.rm.append_messages(
        1000, 1, {tp: [Record(b"junk", b"junk")]}, lambda _: None, internal_topics_allowed=True
    )
    with pytest.raises(CorruptOffsetRecordError):
        broker.om.on_election(tp.partition)


def test_deleting_the_offsets_partition_while_pending_gives_not_coordinator() -> None:
    # The partition still exists in the metadata: the append fails NOT_LEADER_OR_FOLLOWER
    # (Kafka's getPartitionOrError), which a commit maps to NOT_COORDINATOR, so the client
    # looks the coordinator up again.
    broker = Broker(replicas=(0, 1))
    pending = broker.commit(GROUP, {T0: OffsetAndMetadata(7)})
    tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, broker.om.partition_for(GROUP))
    broker.rm.stop_replica(tp, delete=True)
    assert pending.errors == {T0: Errors.NOT_COORDINATOR}

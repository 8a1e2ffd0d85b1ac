"""ReplicaManager workflows: three brokers wired by direct calls, one manual clock."""

from __future__ import annotations

import pytest

from replica import (
    GROUP_METADATA_TOPIC_NAME,
    BrokerConfig,
    Errors,
    FetchIsolation,
    FetchParams,
    IsolationLevel,
    PartitionFetchInfo,
    PartitionState,
    Record,
    TopicPartition,
)
from replica.records import batch_size_in_bytes
from replica.replica_manager import ReplicaManager
from tests.replica.harness import Cluster, ManualClock, Recorder, records

TP = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.elect(TP, leader=0)
    c.pump()  # followers park a long-poll fetch at the leader
    return c


# -- produce --------------------------------------------------------------------------------


def test_acks_all_completes_only_after_followers_fetch(cluster: Cluster) -> None:
    produce = cluster.produce(0, TP, [b"a", b"b"])
    # The followers' parked fetches completed with the data on append...
    assert cluster.brokers[1].log_end_offset(TP) == 2
    assert cluster.brokers[2].log_end_offset(TP) == 2
    # ...but the leader learns their positions only from their next fetch.
    assert not produce.done
    assert cluster.brokers[0].high_watermark(TP) == 0
    assert cluster.brokers[0].produce_purgatory.num_delayed == 1
    cluster.pump()
    response = produce.produce(TP)
    assert (response.error, response.base_offset) == (Errors.NONE, 0)
    assert cluster.brokers[0].high_watermark(TP) == 2
    assert cluster.brokers[0].produce_purgatory.num_delayed == 0


def test_acks_all_waits_for_every_isr_member(cluster: Cluster) -> None:
    produce = cluster.produce(0, TP, [b"a"])
    fetcher = cluster.brokers[1].replica_fetchers[0]
    request = fetcher.build_fetch_request(cluster.clock.now)
    assert request is not None
    cluster.brokers[0].fetch_messages(
        1,
        request.fetch_infos,
        1,
        0,
        1 << 20,
        IsolationLevel.READ_UNCOMMITTED,
        lambda r: fetcher.handle_fetch_response(r, cluster.clock.now),
    )
    assert not produce.done  # broker 2 has not reported yet
    cluster.pump()
    assert produce.produce(TP).error is Errors.NONE


def test_acks_one_and_zero_respond_after_the_local_append(cluster: Cluster) -> None:
    for acks in (1, 0):
        produce = cluster.produce(0, TP, [b"x"], acks=acks)
        assert produce.produce(TP).error is Errors.NONE
    assert cluster.brokers[0].log_end_offset(TP) == 2
    assert cluster.brokers[0].high_watermark(TP) == 0
    assert cluster.brokers[0].produce_purgatory.num_delayed == 0


def test_invalid_required_acks_rejects_every_partition(cluster: Cluster) -> None:
    recorder = Recorder()
    cluster.brokers[0].append_messages(1000, 2, {TP: records(b"a"), TP1: records(b"b")}, recorder)
    assert {tp: r.error for tp, r in recorder.response.items()} == {  # type: ignore[attr-defined]
        TP: Errors.INVALID_REQUIRED_ACKS,
        TP1: Errors.INVALID_REQUIRED_ACKS,
    }
    assert cluster.brokers[0].log_end_offset(TP) == 0


def test_produce_expires_with_request_timed_out(cluster: Cluster) -> None:
    cluster.brokers[1].stop_replica(TP, delete=False)
    cluster.brokers[2].stop_replica(TP, delete=False)
    produce = cluster.produce(0, TP, [b"a"], timeout_ms=300)
    cluster.advance(299)
    assert not produce.done
    cluster.advance(1)
    response = produce.produce(TP)
    assert (response.error, response.base_offset) == (Errors.REQUEST_TIMED_OUT, 0)
    cluster.advance(10_000)
    assert len(produce.calls) == 1


def test_per_partition_errors_in_one_request(cluster: Cluster) -> None:
    config = BrokerConfig(message_max_bytes=200)
    c = Cluster(config=config)
    c.elect(TP, leader=0, replicas=(0,))
    c.elect(TP1, leader=1, replicas=(0, 1))
    internal = TopicPartition(GROUP_METADATA_TOPIC_NAME, 0)
    c.elect(internal, leader=0, replicas=(0,))
    unknown = TopicPartition("nope", 0)
    recorder = Recorder()
    c.brokers[0].append_messages(
        1000,
        -1,
        {
            TP: records(b"ok"),
            TP1: records(b"follower"),
            unknown: records(b"x"),
            internal: records(b"x"),
        },
        recorder,
    )
    errors = {tp: r.error for tp, r in recorder.response.items()}  # type: ignore[attr-defined]
    assert errors == {
        TP: Errors.NONE,
        TP1: Errors.NOT_LEADER_OR_FOLLOWER,
        unknown: Errors.UNKNOWN_TOPIC_OR_PARTITION,
        internal: Errors.INVALID_TOPIC_EXCEPTION,
    }
    big = Recorder()
    c.brokers[0].append_messages(1000, 1, {TP: [Record(None, bytes(300))], TP1: []}, big)
    assert big.produce(TP).error is Errors.MESSAGE_TOO_LARGE
    assert big.produce(TP1).error is Errors.INVALID_RECORD  # request validation comes first
    empty = Recorder()
    c.brokers[0].append_messages(1000, 1, {TP: []}, empty)
    assert empty.produce(TP).error is Errors.INVALID_RECORD
    coordinator = Recorder()
    c.brokers[0].append_messages(
        1000, -1, {internal: records(b"offset")}, coordinator, internal_topics_allowed=True
    )
    assert coordinator.produce(internal).error is Errors.NONE


def test_acks_all_with_no_successful_append_responds_at_once(cluster: Cluster) -> None:
    recorder = Recorder()
    cluster.brokers[0].append_messages(
        1000, -1, {TopicPartition("nope", 0): records(b"a")}, recorder
    )
    assert recorder.done
    assert cluster.brokers[0].produce_purgatory.num_delayed == 0


def test_not_enough_replicas_when_isr_below_min_insync() -> None:
    c = Cluster(
        config=BrokerConfig(
            min_insync_replicas=2, replica_lag_time_max_ms=1000, replica_fetch_wait_max_ms=500
        )
    )
    c.elect(TP, leader=0)
    c.brokers[1].stop_replica(TP, delete=False)
    c.brokers[2].stop_replica(TP, delete=False)
    c.advance(1001)  # the ISR check drops both silent followers
    assert c.brokers[0].isr(TP) == (0,)
    rejected = c.produce(0, TP, [b"a"])
    assert rejected.produce(TP).error is Errors.NOT_ENOUGH_REPLICAS
    assert c.brokers[0].log_end_offset(TP) == 0
    assert c.produce(0, TP, [b"a"], acks=1).produce(TP).error is Errors.NONE


def test_acks_all_times_out_when_the_isr_shrinks_below_min_insync_while_waiting() -> None:
    # KIP-966 / KAFKA-15583 (3.7+): the ISR check drops both followers, but below
    # min.insync.replicas the high watermark stays, so the produce is never replicated enough
    # and times out (before 3.7: NOT_ENOUGH_REPLICAS_AFTER_APPEND at the ISR check). A
    # consumer does not see the record either.
    c = Cluster(
        config=BrokerConfig(
            min_insync_replicas=2, replica_lag_time_max_ms=1000, replica_fetch_wait_max_ms=500
        )
    )
    c.elect(TP, leader=0)
    c.brokers[1].stop_replica(TP, delete=False)
    c.brokers[2].stop_replica(TP, delete=False)
    produce = c.produce(0, TP, [b"a"], timeout_ms=5000)
    c.advance(1200)  # ISR check at 1000: both out
    assert c.brokers[0].isr(TP) == (0,)
    assert not produce.done and c.brokers[0].high_watermark(TP) == 0
    assert c.consume(0, TP, 0, max_wait_ms=0).fetch(TP).records == ()
    c.advance(3800)
    assert produce.produce(TP).error is Errors.REQUEST_TIMED_OUT


def test_min_insync_replicas_above_the_replication_factor_is_capped() -> None:
    c = Cluster(broker_ids=(0,), config=BrokerConfig(min_insync_replicas=2))
    c.elect(TP, leader=0)
    assert c.produce(0, TP, [b"a"]).produce(TP).error is Errors.NONE


def test_log_append_time_is_returned_when_configured() -> None:
    c = Cluster(broker_ids=(0,), config=BrokerConfig(log_message_timestamp_type="LogAppendTime"))
    c.elect(TP, leader=0)
    c.clock.now = 1234
    response = c.produce(0, TP, [b"a"]).produce(TP)
    assert (response.error, response.log_append_time) == (Errors.NONE, 1234)
    assert c.produce(0, TP, [b"b"], acks=1).produce(TP).base_offset == 1


# -- consumer fetch -------------------------------------------------------------------------


def test_consumer_fetch_long_polls_until_data_reaches_the_high_watermark(cluster: Cluster) -> None:
    fetch = cluster.consume(0, TP, 0, max_wait_ms=500)
    assert not fetch.done
    cluster.produce(0, TP, [b"a"], acks=1)
    assert not fetch.done  # appended, but not committed yet
    cluster.pump()  # followers report: HW moves, the consumer's fetch completes
    data = fetch.fetch(TP)
    assert data.error is Errors.NONE
    assert [b.base_offset for b in data.records] == [0]
    assert (data.high_watermark, data.log_start_offset, data.last_stable_offset) == (1, 0, 1)


def test_consumer_fetch_expires_after_max_wait_with_no_data(cluster: Cluster) -> None:
    fetch = cluster.consume(0, TP, 0, max_wait_ms=500)
    cluster.advance(499)
    assert not fetch.done
    cluster.advance(1)
    data = fetch.fetch(TP)
    assert (data.error, len(data.records)) == (Errors.NONE, 0)


def test_consumer_fetch_answers_at_once_when_it_can(cluster: Cluster) -> None:
    assert cluster.consume(0, TP, 0, max_wait_ms=0).done
    assert cluster.consume(0, TP, 5).fetch(TP).error is Errors.OFFSET_OUT_OF_RANGE
    assert cluster.consume(1, TP, 0).fetch(TP).error is Errors.NOT_LEADER_OR_FOLLOWER
    empty = Recorder()
    cluster.brokers[0].fetch_messages(-1, {}, 1, 500, 100, IsolationLevel.READ_UNCOMMITTED, empty)
    assert empty.response == {}
    cluster.produce(0, TP, [b"a"])
    cluster.pump()
    assert len(cluster.consume(0, TP, 0).fetch(TP).records) == 1


def test_consumer_fetch_waits_for_min_bytes(cluster: Cluster) -> None:
    batch = batch_size_in_bytes(records(b"a"))
    fetch = cluster.consume(0, TP, 0, min_bytes=2 * batch, max_wait_ms=1000)
    cluster.produce(0, TP, [b"a"])
    cluster.pump()
    assert not fetch.done  # one batch committed, not enough
    cluster.produce(0, TP, [b"b"])
    cluster.pump()
    assert [b.base_offset for b in fetch.fetch(TP).records] == [0, 1]


def test_partition_max_bytes_caps_what_counts_toward_min_bytes(cluster: Cluster) -> None:
    batch = batch_size_in_bytes(records(b"a"))
    fetch = cluster.consume(0, TP, 0, min_bytes=2 * batch, max_bytes=batch, max_wait_ms=1000)
    for value in (b"a", b"b", b"c"):
        cluster.produce(0, TP, [value])
    cluster.pump()
    assert not fetch.done
    cluster.advance(1000)
    assert len(fetch.fetch(TP).records) == 1


def test_a_delayed_fetch_sums_min_bytes_over_partitions_checked_one_at_a_time() -> None:
    # Each check re-examines only the partition whose state changed (try_complete_for_key):
    # a partition's new share replaces its old one, capped at its max_bytes, and the shares of
    # the partitions not checked still count.
    batch = batch_size_in_bytes(records(b"a"))
    c = Cluster()
    for tp in (TP, TP1):
        c.elect(tp, leader=0)
    c.pump()
    fetch = Recorder()
    c.brokers[0].fetch_messages(
        -1,
        {TP: PartitionFetchInfo(0, batch), TP1: PartitionFetchInfo(0, batch)},
        2 * batch,
        1000,
        1 << 20,
        IsolationLevel.READ_UNCOMMITTED,
        fetch,
    )
    for value in (b"a", b"b", b"c"):  # TP's share stays capped at one batch
        c.produce(0, TP, [value])
        c.pump()
    assert not fetch.done
    c.produce(0, TP1, [b"x"])
    c.pump()
    assert [len(fetch.fetch(tp).records) for tp in (TP, TP1)] == [1, 1]


def test_delayed_fetch_completes_when_the_end_moves_to_a_new_segment() -> None:
    size = batch_size_in_bytes(records(b"a"))
    c = Cluster(broker_ids=(0,), config=BrokerConfig(log_segment_bytes=size))
    c.elect(TP, leader=0)
    c.produce(0, TP, [b"a"])
    # At the end of segment 0, waiting for far more bytes than will come.
    fetch = c.consume(0, TP, 1, min_bytes=10 * size, max_wait_ms=1000)
    assert not fetch.done
    c.produce(0, TP, [b"b"])  # rolls segment 1: the fetch position is on an older segment
    assert [b.base_offset for b in fetch.fetch(TP).records] == [1]


def test_a_consumer_fetch_beyond_the_high_watermark_completes_at_once(cluster: Cluster) -> None:
    # DelayedFetch case F (Kafka 3.8+, KAFKA-16452): a fetch offset beyond the end offset its
    # fetcher may read (a consumer between the high watermark and the log end) completes at
    # once, empty, instead of waiting for the high watermark to pass it.
    cluster.produce(0, TP, [b"a"], acks=1)  # the followers have not reported it yet
    leader = cluster.brokers[0]
    assert (leader.high_watermark(TP), leader.log_end_offset(TP)) == (0, 1)
    data = cluster.consume(0, TP, 1, max_wait_ms=500).fetch(TP)
    assert (data.error, data.records, data.high_watermark) == (Errors.NONE, (), 0)
    assert leader.fetch_purgatory.num_delayed == 0


def test_fetch_response_max_bytes_and_min_one_message() -> None:
    c = Cluster(broker_ids=(0,))
    c.elect(TP, leader=0)
    c.elect(TP1, leader=0)
    for tp in (TP, TP1):
        c.produce(0, tp, [b"a" * 50])
        c.produce(0, tp, [b"b" * 50])
    size = batch_size_in_bytes(records(b"a" * 50))
    recorder = Recorder()
    c.brokers[0].fetch_messages(
        -1,
        {TP: PartitionFetchInfo(0, 10), TP1: PartitionFetchInfo(0, 10)},
        1,
        0,
        10,
        IsolationLevel.READ_UNCOMMITTED,
        recorder,
    )
    # The first partition returns one batch despite the limits; the second nothing.
    assert [len(recorder.fetch(tp).records) for tp in (TP, TP1)] == [1, 0]
    recorder2 = Recorder()
    c.brokers[0].fetch_messages(
        -1,
        {TP: PartitionFetchInfo(0, 10 * size), TP1: PartitionFetchInfo(0, 10 * size)},
        1,
        0,
        3 * size,
        IsolationLevel.READ_COMMITTED,
        recorder2,
    )
    assert [len(recorder2.fetch(tp).records) for tp in (TP, TP1)] == [2, 1]


def test_fetch_leader_epoch_checks_and_bad_max_bytes(cluster: Cluster) -> None:
    def one(info: PartitionFetchInfo) -> Errors:
        recorder = Recorder()
        cluster.brokers[0].fetch_messages(
            -1, {TP: info}, 1, 0, 100, IsolationLevel.READ_UNCOMMITTED, recorder
        )
        return recorder.fetch(TP).error

    assert one(PartitionFetchInfo(0, 100, current_leader_epoch=0)) is Errors.NONE
    assert one(PartitionFetchInfo(0, 100, current_leader_epoch=1)) is Errors.UNKNOWN_LEADER_EPOCH
    cluster.elect(TP, leader=0)
    assert one(PartitionFetchInfo(0, 100, current_leader_epoch=0)) is Errors.FENCED_LEADER_EPOCH
    assert one(PartitionFetchInfo(0, -1)) is Errors.INVALID_REQUEST


@pytest.mark.parametrize(
    ("epoch", "error"), [(None, Errors.NOT_LEADER_OR_FOLLOWER), (0, Errors.UNKNOWN_LEADER_EPOCH)]
)
def test_a_fetch_from_a_broker_that_is_not_a_replica_is_answered_at_once_with_an_error(
    cluster: Cluster, epoch: int | None, error: Errors
) -> None:
    # Kafka 3.3+ (Partition.followerReplicaOrThrow, KAFKA-13837): checked before the read, so
    # the fetch is not parked; UNKNOWN_LEADER_EPOCH when it names the leader's epoch (the
    # leader may not know of the new replica yet: retry), else NOT_LEADER_OR_FOLLOWER.
    cluster.produce(0, TP, [b"a"], acks=1)
    leader = cluster.brokers[0]
    recorder = Recorder()
    leader.fetch_messages(
        9,
        {TP: PartitionFetchInfo(1, 100, current_leader_epoch=epoch, last_fetched_epoch=0)},
        1,
        500,
        100,
        IsolationLevel.READ_UNCOMMITTED,
        recorder,
    )
    data = recorder.fetch(TP)
    assert (data.error, data.records, data.diverging_epoch) == (error, (), None)
    partition = leader.get_partition(TP)
    assert partition is not None and partition.remote_replicas.keys() == {1, 2}


def test_read_from_local_log_for_the_coordinator(cluster: Cluster) -> None:
    cluster.produce(0, TP, [b"a", b"b"], acks=1)
    params = FetchParams(-1, 0, 0, 1 << 20, FetchIsolation.LOG_END)
    result = cluster.brokers[0].read_from_local_log(params, {TP: PartitionFetchInfo(0, 1 << 20)})[
        TP
    ]
    assert result.error is Errors.NONE
    assert [r.value for b in result.info.records for r in b.records] == [b"a", b"b"]
    assert (result.high_watermark, result.leader_log_end_offset) == (0, 2)


# -- leadership changes ---------------------------------------------------------------------


def test_leadership_loss_completes_delayed_operations_with_not_leader(cluster: Cluster) -> None:
    produce = cluster.produce(0, TP, [b"a"])
    consumer = cluster.consume(0, TP, 0, max_wait_ms=10_000)  # at the high watermark
    assert not produce.done and not consumer.done
    changes: list[tuple[list[TopicPartition], list[TopicPartition]]] = []
    epoch = cluster.epochs[TP] + 1
    cluster.epochs[TP] = epoch
    errors = cluster.brokers[0].become_leader_or_follower(
        {TP: PartitionState(1, epoch, (1, 2), (0, 1, 2))},
        lambda leaders, followers: changes.append((leaders, followers)),
    )
    assert errors == {TP: Errors.NONE}
    assert changes == [([], [TP])]
    assert produce.produce(TP).error is Errors.NOT_LEADER_OR_FOLLOWER
    assert consumer.fetch(TP).error is Errors.NOT_LEADER_OR_FOLLOWER
    # The followers' parked fetches were answered too: the old leader's purgatories are empty.
    assert cluster.brokers[0].fetch_purgatory.num_delayed == 0
    assert cluster.brokers[0].produce_purgatory.num_delayed == 0
    cluster.advance(100_000)
    assert len(produce.calls) == 1 and len(consumer.calls) == 1


def test_a_new_leader_epoch_completes_fetches_waiting_in_the_old_one(cluster: Cluster) -> None:
    leader = cluster.brokers[0]
    assert leader.fetch_purgatory.num_delayed == 2  # the followers' fetches, in epoch 0
    cluster.elect(TP, leader=0, brokers=[0])  # epoch 1, same leader; followers not told yet
    assert leader.fetch_purgatory.num_delayed == 0
    for follower in (1, 2):  # answered FENCED_LEADER_EPOCH: they stop fetching the partition
        assert TP not in cluster.brokers[follower].replica_fetchers[0].partition_states


def test_deleting_a_replica_completes_its_operations(cluster: Cluster) -> None:
    # The partition still exists in the metadata: its waiting operations, and later requests,
    # get NOT_LEADER_OR_FOLLOWER (Kafka's getPartitionOrError), so clients look it up again.
    produce = cluster.produce(0, TP, [b"a"])
    consumer = cluster.consume(0, TP, 0, max_wait_ms=10_000)
    assert not consumer.done
    assert cluster.brokers[0].stop_replica(TP, delete=True) is Errors.NONE
    assert produce.produce(TP).error is Errors.NOT_LEADER_OR_FOLLOWER
    assert consumer.fetch(TP).error is Errors.NOT_LEADER_OR_FOLLOWER
    again = cluster.produce(0, TP, [b"b"], acks=1)
    assert again.produce(TP).error is Errors.NOT_LEADER_OR_FOLLOWER
    assert cluster.brokers[0].get_partition(TP) is None
    assert cluster.brokers[0].stop_replica(TP, delete=True) is Errors.NONE


def test_a_partition_in_the_metadata_but_not_hosted_is_not_leader_or_follower() -> None:
    # Kafka's ReplicaManager.getPartitionOrError: known to the metadata but without a replica
    # here -> NOT_LEADER_OR_FOLLOWER; unknown to the metadata too -> UNKNOWN_TOPIC_OR_PARTITION.
    c = Cluster()
    c.elect(TP, leader=1, replicas=(1, 2))  # broker 0 is not a replica: only its metadata knows
    broker = c.brokers[0]
    unknown = TopicPartition("nope", 0)
    produce = Recorder()
    broker.append_messages(1000, -1, {TP: records(b"a"), unknown: records(b"a")}, produce)
    fetch = Recorder()
    broker.fetch_messages(
        -1,
        {TP: PartitionFetchInfo(0, 100), unknown: PartitionFetchInfo(0, 100)},
        1,
        500,
        100,
        IsolationLevel.READ_UNCOMMITTED,
        fetch,
    )
    expected = {TP: Errors.NOT_LEADER_OR_FOLLOWER, unknown: Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert {tp: produce.produce(tp).error for tp in expected} == expected
    assert {tp: fetch.fetch(tp).error for tp in expected} == expected
    for tp, error in expected.items():
        found = broker.fetch_offset_for_timestamp(tp, -1, isolation=IsolationLevel.READ_UNCOMMITTED)
        assert found.error is error


def test_without_metadata_only_hosted_partitions_are_known() -> None:
    broker = ReplicaManager(0, BrokerConfig(), ManualClock())
    produce = Recorder()
    broker.append_messages(1000, 1, {TP: records(b"a")}, produce)
    assert produce.produce(TP).error is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_state_changes_with_stale_epochs_or_foreign_replicas_are_ignored(cluster: Cluster) -> None:
    broker = cluster.brokers[0]
    stale = broker.become_leader_or_follower({TP: PartitionState(1, 0, (0, 1, 2), (0, 1, 2))})
    assert stale == {TP: Errors.STALE_CONTROLLER_EPOCH}
    assert broker.is_leader(TP)
    other = TopicPartition("other", 0)
    foreign = broker.become_leader_or_follower({other: PartitionState(1, 0, (1,), (1, 2))})
    assert foreign == {other: Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.get_partition(other) is None


def test_failover_keeps_committed_data_and_truncates_the_diverging_tail(cluster: Cluster) -> None:
    cluster.produce(0, TP, [b"a", b"b"])
    cluster.pump()
    # A follower learns the new HW from its next response: here when its long poll expires.
    assert cluster.brokers[1].high_watermark(TP) == 0
    cluster.advance(500)
    cluster.pump()
    assert [cluster.brokers[b].high_watermark(TP) for b in (0, 1, 2)] == [2, 2, 2]
    # Broker 0 appends more that only broker 1 gets, then broker 0 "dies".
    cluster.brokers[2].stop_replica(TP, delete=False)
    cluster.produce(0, TP, [b"c"], acks=1)
    assert cluster.brokers[1].log_end_offset(TP) == 3
    assert cluster.brokers[2].log_end_offset(TP) == 2
    cluster.brokers[0].stop_replica(TP, delete=False)
    # The controller elects 2. Becoming its follower does not truncate broker 1...
    cluster.elect(TP, leader=2, isr=(1, 2), brokers=(2, 1))
    assert cluster.brokers[2].is_leader(TP)
    assert cluster.brokers[1].log_end_offset(TP) == 3
    # ...its first fetch does: epoch 0 ends at offset 2 on the new leader.
    assert cluster.send_fetches(1) == 1
    assert cluster.brokers[1].log_end_offset(TP) == 2
    produce = cluster.produce(2, TP, [b"d"])
    cluster.pump()
    assert produce.produce(TP).base_offset == 2
    assert cluster.brokers[2].high_watermark(TP) == 3
    # The old leader comes back as a follower: truncated by its first fetch, then catches up.
    state = PartitionState(2, cluster.epochs[TP], (1, 2), (0, 1, 2))
    assert cluster.brokers[0].become_leader_or_follower({TP: state}) == {TP: Errors.NONE}
    assert cluster.brokers[0].log_end_offset(TP) == 3
    cluster.pump()
    assert cluster.brokers[0].log_end_offset(TP) == 3
    assert cluster.brokers[2].isr(TP) == (1, 2, 0)
    values = [
        r.value
        for s in cluster.brokers[0].get_partition(TP).log.segments  # type: ignore[union-attr]
        for b in s.batches
        for r in b.records
    ]
    assert values == [b"a", b"b", b"d"]


# -- time, metrics --------------------------------------------------------------------------


def test_next_deadline_and_metrics(cluster: Cluster) -> None:
    broker = cluster.brokers[0]
    # Parked follower fetches wait replica.fetch.wait.max.ms; the ISR check is at 15 s.
    assert broker.next_deadline() == 500
    assert broker.fetch_purgatory.num_delayed == 2
    assert broker.fetch_purgatory.watched == 2
    cluster.consume(0, TP, 0, max_wait_ms=100)
    assert broker.next_deadline() == 100
    cluster.advance(100)
    assert broker.next_deadline() == 500
    cluster.advance(400)  # the followers' fetches expire; they fetch again
    cluster.pump()
    assert broker.next_deadline() == 1000
    follower = cluster.brokers[1]
    # No leaderships, no delayed operations: only the log retention check.
    assert follower.next_deadline() == 300_000


def test_replica_fetchers_are_in_leader_id_order() -> None:
    c = Cluster()
    c.elect(TP1, leader=2)  # broker 1's first fetcher is the one from broker 2
    c.elect(TP, leader=0)
    c.elect(TopicPartition("t", 2), leader=2)  # an existing fetcher keeps its place
    fetchers = c.brokers[1].replica_fetchers
    assert list(fetchers) == [0, 2]
    assert [f.leader_id for f in fetchers.values()] == [0, 2]
    assert set(fetchers[2].partition_states) == {TP1, TopicPartition("t", 2)}


def test_shutdown_drops_pending_operations(cluster: Cluster) -> None:
    produce = cluster.produce(0, TP, [b"a"])
    cluster.brokers[0].shutdown()
    cluster.advance(10_000)
    assert not produce.done
    assert cluster.brokers[0].fetch_purgatory.num_delayed == 0


def test_a_new_epoch_with_a_smaller_isr_completes_waiting_produces(cluster: Cluster) -> None:
    produce = cluster.produce(0, TP, [b"a"])
    assert not produce.done
    cluster.elect(TP, leader=0, isr=(0,), brokers=(0,))
    assert produce.produce(TP).error is Errors.NONE
    assert cluster.brokers[0].high_watermark(TP) == 1

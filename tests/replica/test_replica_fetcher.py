"""ReplicaFetcher: request building and response/error handling, driven by hand."""

from __future__ import annotations

import pytest

from replica import (
    BrokerConfig,
    EpochEndOffset,
    Errors,
    FetchPartitionData,
    InitialFetchState,
    PartitionState,
    Record,
    RecordBatch,
    ReplicaArgumentError,
    ReplicaFetcher,
    ReplicaManager,
    TopicPartition,
)
from replica.fetch_session_handler import FetchSessionHandler
from replica.records import batch_size_in_bytes
from tests.replica.harness import Cluster, ManualClock

TP = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
CONFIG = BrokerConfig(
    replica_fetch_wait_max_ms=250,
    replica_fetch_min_bytes=7,
    replica_fetch_max_bytes=4096,
    replica_fetch_response_max_bytes=65536,
    replica_fetch_backoff_ms=300,
)


def batch(base_offset: int, count: int = 1, epoch: int = 0) -> RecordBatch:
    recs = tuple(Record(None, b"v", 0) for _ in range(count))
    return RecordBatch(base_offset, recs, batch_size_in_bytes(recs), epoch)


def data(
    error: Errors = Errors.NONE,
    batches: tuple[RecordBatch, ...] = (),
    hw: int = 0,
    start: int = 0,
    end: int = 0,
    diverging: EpochEndOffset | None = None,
) -> FetchPartitionData:
    size = sum(b.size_in_bytes for b in batches)
    return FetchPartitionData(error, hw, start, hw, batches, size, end, diverging)


@pytest.fixture
def follower() -> tuple[ReplicaManager, ReplicaFetcher, ManualClock]:
    clock = ManualClock()
    broker = ReplicaManager(1, CONFIG, clock)
    broker.become_leader_or_follower({tp: PartitionState(0, 0, (0, 1), (0, 1)) for tp in (TP, TP1)})
    return broker, broker.replica_fetchers[0], clock


def test_request_uses_replica_fetch_settings(follower) -> None:  # type: ignore[no-untyped-def]
    _broker, fetcher, _ = follower
    request = fetcher.build_fetch_request(0)
    assert request is not None
    assert (request.replica_id, request.max_wait_ms, request.min_bytes, request.max_bytes) == (
        1,
        250,
        7,
        65536,
    )
    info = request.fetch_infos[TP]
    assert (info.fetch_offset, info.max_bytes, info.current_leader_epoch) == (0, 4096, 0)
    assert fetcher.build_fetch_request(0) is None  # one fetch in flight at a time
    assert fetcher.next_fetch_time_ms() is None


def test_applying_data_appends_and_takes_the_leader_high_watermark(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response(
        {TP: data(batches=(batch(0, 2), batch(2)), hw=5, end=5), TP1: data(hw=0)}, 0
    )
    assert broker.log_end_offset(TP) == 3
    assert broker.high_watermark(TP) == 3  # min(leader HW 5, local LEO 3)
    assert fetcher.partition_states[TP].fetch_offset == 3
    request = fetcher.build_fetch_request(0)
    assert request is not None and request.fetch_infos[TP].fetch_offset == 3
    fetcher.handle_fetch_response({TP: data(batches=(batch(3),), hw=2, end=4)}, 0)
    assert broker.high_watermark(TP) == 2


def test_not_leader_backs_off_until_backoff_or_metadata_change(follower) -> None:  # type: ignore[no-untyped-def]
    _broker, fetcher, _ = follower
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response(
        {TP: data(Errors.NOT_LEADER_OR_FOLLOWER), TP1: data(Errors.UNKNOWN_LEADER_EPOCH)}, 100
    )
    assert fetcher.build_fetch_request(399) is None
    assert fetcher.next_fetch_time_ms() == 400
    request = fetcher.build_fetch_request(400)
    assert request is not None and set(request.fetch_infos) == {TP, TP1}
    fetcher.handle_fetch_response({TP: data(Errors.NOT_LEADER_OR_FOLLOWER)}, 500)
    # A metadata change re-adds the partition and clears the back-off.
    fetcher.add_partitions({TP: InitialFetchState(0, 1)})
    request = fetcher.build_fetch_request(500)
    assert request is not None and request.fetch_infos[TP].current_leader_epoch == 1


def test_fenced_leader_epoch_stops_fetching_the_partition(follower) -> None:  # type: ignore[no-untyped-def]
    _, fetcher, _ = follower
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response({TP: data(Errors.FENCED_LEADER_EPOCH)}, 0)
    assert set(fetcher.partition_states) == {TP1}


def test_offset_out_of_range_ahead_of_the_leader_truncates(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response({TP: data(batches=(batch(0, 3), batch(3, 3)), hw=0, end=6)}, 0)
    assert broker.log_end_offset(TP) == 6
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response({TP: data(Errors.OFFSET_OUT_OF_RANGE, hw=3, end=3)}, 0)
    assert broker.log_end_offset(TP) == 3
    assert fetcher.partition_states[TP].fetch_offset == 3


def test_offset_out_of_range_behind_the_leader_restarts_at_its_log_start(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response({TP: data(batches=(batch(0, 2),), hw=2, end=2)}, 0)
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response(
        {TP: data(Errors.OFFSET_OUT_OF_RANGE, hw=120, start=100, end=150)}, 0
    )
    assert (broker.log_start_offset(TP), broker.log_end_offset(TP)) == (100, 100)
    assert fetcher.partition_states[TP].fetch_offset == 100
    request = fetcher.build_fetch_request(0)
    assert request is not None and request.fetch_infos[TP].log_start_offset == 100


def test_stale_responses_are_ignored(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fetcher.build_fetch_request(0)
    fetcher.add_partitions({TP: InitialFetchState(0, 1)})  # epoch changed meanwhile
    fetcher.remove_partitions([TP1])
    fetcher.handle_fetch_response(
        {TP: data(batches=(batch(0),), hw=1, end=1), TP1: data(batches=(batch(0),), hw=1, end=1)}, 0
    )
    assert broker.log_end_offset(TP) == 0 and broker.log_end_offset(TP1) == 0


def test_fetch_failure_backs_off_and_unsolicited_responses_raise(follower) -> None:  # type: ignore[no-untyped-def]
    _, fetcher, _ = follower
    with pytest.raises(ReplicaArgumentError, match="no fetch in flight"):
        fetcher.handle_fetch_response({}, 0)
    fetcher.build_fetch_request(10)
    fetcher.handle_fetch_failure(10)
    assert fetcher.build_fetch_request(309) is None
    assert fetcher.build_fetch_request(310) is not None
    fetcher.handle_fetch_failure(310)
    with pytest.raises(ReplicaArgumentError):
        fetcher.handle_fetch_failure(310)


def test_follower_with_a_newer_epoch_than_the_leader_backs_off_then_recovers() -> None:
    c = Cluster(broker_ids=(0, 1), config=BrokerConfig(replica_fetch_backoff_ms=100))
    c.elect(TP, leader=0, replicas=(0, 1))
    c.pump()
    c.produce(0, TP, [b"a"], acks=1)
    # Broker 1 hears of epoch 1 before the leader does.
    c.brokers[1].become_leader_or_follower({TP: PartitionState(0, 1, (0, 1), (0, 1))})
    c.pump()
    fetcher = c.brokers[1].replica_fetchers[0]
    assert fetcher.next_fetch_time_ms() == 100  # UNKNOWN_LEADER_EPOCH: backing off
    c.brokers[0].become_leader_or_follower({TP: PartitionState(0, 1, (0, 1), (0, 1))})
    c.advance(100)
    c.pump()
    assert c.brokers[1].log_end_offset(TP) == 1


# -- epoch-based truncation ------------------------------------------------------------------


def fill(fetcher: ReplicaFetcher, *batches: RecordBatch, hw: int = 0) -> None:
    """Apply a response carrying ``batches`` for TP."""
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response(
        {TP: data(batches=batches, hw=hw, end=batches[-1].next_offset)}, 0
    )


def diverge(fetcher: ReplicaFetcher, epoch: int, end_offset: int, hw: int = 0) -> None:
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response(
        {TP: data(hw=hw, end=end_offset, diverging=EpochEndOffset(epoch, end_offset))}, 0
    )


def test_requests_carry_the_latest_epoch_of_the_log(follower) -> None:  # type: ignore[no-untyped-def]
    _broker, fetcher, _ = follower
    request = fetcher.build_fetch_request(0)
    assert request is not None and request.fetch_infos[TP].last_fetched_epoch is None
    fetcher.handle_fetch_response(
        {TP: data(batches=(batch(0, 2, epoch=0), batch(2, 1, epoch=3)))}, 0
    )
    request = fetcher.build_fetch_request(0)
    assert request is not None
    assert request.fetch_infos[TP].last_fetched_epoch == 3
    assert request.fetch_infos[TP1].last_fetched_epoch is None


def test_diverging_epoch_known_to_the_follower_truncates_to_the_smaller_end(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fill(fetcher, batch(0, 2, epoch=0), batch(2, 3, epoch=1), batch(5, 2, epoch=2), hw=2)
    assert broker.high_watermark(TP) == 2
    # The leader's epoch 1 ends at 4; here it ends at 5 (epoch 2 starts there): truncate to 4.
    diverge(fetcher, 1, 4, hw=9)
    assert broker.log_end_offset(TP) == 2  # the batch 2..4 holding offset 4 goes whole
    assert fetcher.partition_states[TP].fetch_offset == 2
    assert broker.high_watermark(TP) == 2  # not taken from a diverging response
    partition = broker.get_partition(TP)
    assert partition is not None and partition.log.leader_epoch_cache.entries == ((0, 0),)
    request = fetcher.build_fetch_request(0)
    assert request is not None
    assert (request.fetch_infos[TP].fetch_offset, request.fetch_infos[TP].last_fetched_epoch) == (
        2,
        0,
    )


def test_diverging_epoch_ending_past_the_local_epoch_truncates_to_the_local_end(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fill(fetcher, batch(0, 2, epoch=0), batch(2, 2, epoch=2))
    # The leader's epoch 0 ends at 3, ours at 2: offsets 2..3 were written in epoch 2 here.
    diverge(fetcher, 0, 3)
    assert broker.log_end_offset(TP) == 2


def test_diverging_epoch_unknown_to_the_follower_truncates_in_steps(follower) -> None:  # type: ignore[no-untyped-def]
    """KIP-279: the follower does not have the leader's epoch 2; it truncates to the end of its
    own largest epoch below 2 (epoch 1 ends at 4) and asks again with that epoch."""
    broker, fetcher, _ = follower
    fill(fetcher, batch(0, 2, epoch=0), batch(2, 2, epoch=1), batch(4, 3, epoch=3))
    diverge(fetcher, 2, 6)
    assert broker.log_end_offset(TP) == 4
    request = fetcher.build_fetch_request(0)
    assert request is not None and request.fetch_infos[TP].last_fetched_epoch == 1
    fetcher.handle_fetch_response({TP: data(end=6, diverging=EpochEndOffset(1, 3))}, 0)
    assert broker.log_end_offset(TP) == 2  # the batch 2..3 holding offset 3 goes whole


def test_diverging_epoch_below_every_local_epoch(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fill(fetcher, batch(0, 3, epoch=4), batch(3, 3, epoch=5))
    # The leader knows nothing before epoch 2 ending at 3; epoch 2 is older than ours.
    diverge(fetcher, 2, 3)
    assert broker.log_end_offset(TP) == 0  # our epoch 4 started at 0: nothing of epoch 2 here


def test_diverging_epoch_newer_than_every_local_epoch(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fill(fetcher, batch(0, 3, epoch=1), batch(3, 3, epoch=1))
    diverge(fetcher, 7, 4)  # no local epoch <= 7 is 7 and none is newer: the leader's end
    assert broker.log_end_offset(TP) == 3


def test_diverging_epoch_values_are_validated() -> None:
    with pytest.raises(ReplicaArgumentError, match="end_offset must be >= 0"):
        EpochEndOffset(0, -1)
    with pytest.raises(ReplicaArgumentError, match="leader_epoch must be >= 0"):
        EpochEndOffset(-1, 0)


def test_incremental_requests_are_those_a_full_diff_builds(follower) -> None:  # type: ignore[no-untyped-def]
    """The change feed: every request's session part is what diffing its whole fetch data
    against the last one's finds, through responses with news, errors and back-offs, leader
    changes, removals, re-adds, a session that fails and one the leader evicted."""
    broker, fetcher, _ = follower
    tp2 = TopicPartition("t", 2)
    broker.become_leader_or_follower({tp2: PartitionState(0, 0, (0, 1), (0, 1))})
    shadow = FetchSessionHandler()
    now = 0

    def fetch(response: dict[TopicPartition, FetchPartitionData], **kw: object) -> None:
        request = fetcher.build_fetch_request(now)
        assert request is not None
        expected = shadow.build(dict(request.fetch_infos))
        got = request.session
        assert (got.metadata, got.forgotten) == (expected.metadata, expected.forgotten)
        assert list(got.to_send.items()) == list(expected.to_send.items())
        fetcher.handle_fetch_response(response, now, session_id=5, **kw)  # type: ignore[arg-type]
        shadow.handle_response(5, kw.get("error", Errors.NONE))  # type: ignore[arg-type]

    fetch({})
    fetch({TP1: data(batches=(batch(0, 2),), hw=2, end=2)})
    fetch({})  # nothing changed: nothing sent
    fetch({TP: data(batches=(batch(0),), hw=1, end=1), tp2: data(batches=(batch(0),), end=1)})
    fetch({TP1: data(Errors.NOT_LEADER_OR_FOLLOWER)})  # TP1 backs off: forgotten
    now = 300
    fetch({TP: data(batches=(batch(1, 1, epoch=0),), hw=2, end=2)})  # TP1 back in its place
    fetcher.add_partitions({TP: InitialFetchState(2, 1)})  # a leader change
    fetch({tp2: data(Errors.FENCED_LEADER_EPOCH)})  # tp2 dropped
    fetcher.remove_partitions([TP])
    fetch({}, error=Errors.INVALID_FETCH_SESSION_EPOCH)
    fetcher.add_partitions({TP: InitialFetchState(2, 1)})
    fetch({TP1: data(batches=(batch(2),), hw=3, end=3)})
    fetch({}, error=Errors.FETCH_SESSION_ID_NOT_FOUND)  # the leader evicted the session
    fetch({TP: data(batches=(batch(2, 1, epoch=1),), hw=3, end=3)})
    fetch({})
    request = fetcher.build_fetch_request(now)
    assert request is not None and request.session.metadata.epoch > 1
    assert dict(request.session.to_send) == {}


def test_a_log_changed_behind_the_fetcher_is_sent_once_told(follower) -> None:  # type: ignore[no-untyped-def]
    broker, fetcher, _ = follower
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response({TP: data(batches=(batch(0, 3),), hw=3, end=3)}, 0, session_id=5)
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response({}, 0, session_id=5)
    partition = broker.get_partition(TP)
    assert partition is not None and partition.log.maybe_increment_log_start_offset(2)
    fetcher.log_changed([TP, TopicPartition("t", 9)])  # what retention does (unknown: ignored)
    request = fetcher.build_fetch_request(0)
    assert request is not None and request.fetch_infos[TP].log_start_offset == 2
    assert list(request.session.to_send) == [TP]


def test_retention_tells_the_fetchers_of_followed_logs() -> None:
    clock = ManualClock()
    size = batch(0).size_in_bytes
    config = BrokerConfig(
        log_segment_bytes=size, log_retention_bytes=size, log_retention_check_interval_ms=10
    )
    broker = ReplicaManager(1, config, clock)
    broker.become_leader_or_follower({TP: PartitionState(0, 0, (0, 1), (0, 1))})
    fetcher = broker.replica_fetchers[0]
    fetcher.build_fetch_request(0)
    response = {TP: data(batches=(batch(0), batch(1), batch(2)), hw=3, end=3)}
    fetcher.handle_fetch_response(response, 0, session_id=5)
    fetcher.build_fetch_request(0)
    fetcher.handle_fetch_response({}, 0, session_id=5)
    clock.advance_to(10)
    broker.advance_clock(10)
    assert broker.log_start_offset(TP) == 2
    request = fetcher.build_fetch_request(10)
    assert request is not None and list(request.session.to_send) == [TP]
    assert request.fetch_infos[TP].log_start_offset == 2

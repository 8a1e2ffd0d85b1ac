"""Idempotent producers: a retried batch is appended once, out-of-sequence batches are refused,
the state follows the log through replication, truncation and expiry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replica.config import BrokerConfig
from replica.errors import Errors
from replica.exceptions import ApiError
from replica.log import Log
from replica.producer_state import NUM_BATCHES_TO_RETAIN
from replica.records import NO_TIMESTAMP, ProducerBatchInfo, Record, increment_sequence
from replica.testing import DirectCluster
from replica.types import PartitionResponse, TopicPartition

TP = TopicPartition("t", 0)
MAX_SEQ = 2**31 - 1


def _log() -> Log:
    return Log(TP, segment_bytes=1 << 30, max_message_bytes=1 << 20)


def _records(n: int, timestamp: int = 1000) -> list[Record]:
    return [Record(None, b"v%d" % i, timestamp) for i in range(n)]


def _append(log: Log, producer: ProducerBatchInfo, n: int = 1) -> tuple[int, int]:
    info = log.append_as_leader(_records(n), 0, NO_TIMESTAMP, producer)
    return info.first_offset, info.last_offset


def test_a_retried_batch_gets_its_first_offsets_and_is_not_appended_again() -> None:
    log = _log()
    assert _append(log, ProducerBatchInfo(7, 0, 0), 3) == (0, 2)
    assert _append(log, ProducerBatchInfo(7, 0, 3), 2) == (3, 4)
    assert _append(log, ProducerBatchInfo(7, 0, 0), 3) == (0, 2)  # the first, again
    assert _append(log, ProducerBatchInfo(7, 0, 3), 2) == (3, 4)
    assert log.log_end_offset == 5
    batches = [b for s in log.segments for b in s.batches]
    assert [(b.producer_id, b.producer_epoch, b.base_sequence) for b in batches] == [
        (7, 0, 0),
        (7, 0, 3),
    ]
    assert batches[1].last_sequence == 4


def test_a_duplicate_answers_the_log_append_time_it_got() -> None:
    log = _log()
    first = log.append_as_leader(_records(1), 0, 5000, ProducerBatchInfo(1, 0, 0))
    again = log.append_as_leader(_records(1), 0, 9000, ProducerBatchInfo(1, 0, 0))
    assert (again.first_offset, again.log_append_time) == (first.first_offset, 5000)


@pytest.mark.parametrize(
    ("producer", "error"),
    [
        (ProducerBatchInfo(7, 1, 4), Errors.OUT_OF_ORDER_SEQUENCE_NUMBER),  # a gap
        (ProducerBatchInfo(7, 1, 2), Errors.OUT_OF_ORDER_SEQUENCE_NUMBER),  # overlaps, not equal
        (ProducerBatchInfo(7, 0, 3), Errors.INVALID_PRODUCER_EPOCH),  # a fenced epoch
        (ProducerBatchInfo(7, 2, 5), Errors.OUT_OF_ORDER_SEQUENCE_NUMBER),  # new epoch not at 0
        (ProducerBatchInfo(7, 1, -3), Errors.INVALID_RECORD),
    ],
)
def test_out_of_sequence_batches_are_refused_and_not_appended(
    producer: ProducerBatchInfo, error: Errors
) -> None:
    log = _log()
    _append(log, ProducerBatchInfo(7, 1, 0), 3)
    with pytest.raises(ApiError) as refused:
        _append(log, producer, 2)
    assert refused.value.error is error
    assert log.log_end_offset == 3


def test_a_new_epoch_starts_at_zero_and_forgets_the_old_batches() -> None:
    log = _log()
    _append(log, ProducerBatchInfo(7, 0, 0), 2)
    assert _append(log, ProducerBatchInfo(7, 1, 0), 2) == (2, 3)
    # the old epoch's batch is no duplicate any more: a fenced producer
    with pytest.raises(ApiError, match="INVALID_PRODUCER_EPOCH"):
        _append(log, ProducerBatchInfo(7, 0, 0), 2)


def test_an_unknown_producer_may_start_anywhere_and_sequences_wrap() -> None:
    log = _log()
    assert _append(log, ProducerBatchInfo(3, 5, MAX_SEQ - 1), 2) == (0, 1)
    assert _append(log, ProducerBatchInfo(3, 5, 0), 1) == (2, 2)  # MAX_SEQ wraps to 0
    assert increment_sequence(MAX_SEQ - 1, 3) == 1


def test_only_the_last_five_batches_are_recognised() -> None:
    log = _log()
    for seq in range(NUM_BATCHES_TO_RETAIN + 1):
        _append(log, ProducerBatchInfo(9, 0, seq))
    assert _append(log, ProducerBatchInfo(9, 0, 1)) == (1, 1)
    with pytest.raises(ApiError, match="OUT_OF_ORDER_SEQUENCE_NUMBER"):
        _append(log, ProducerBatchInfo(9, 0, 0))  # the sixth from the end is forgotten


def test_batches_without_a_producer_are_not_tracked() -> None:
    log = _log()
    log.append_as_leader(_records(2), 0)
    log.append_as_leader(_records(2), 0, NO_TIMESTAMP, ProducerBatchInfo(-1, -1, -1))
    assert log.log_end_offset == 4 and len(log.producer_state) == 0


def test_truncation_forgets_removed_batches_and_rebuilds_from_the_log() -> None:
    log = _log()
    _append(log, ProducerBatchInfo(1, 0, 0), 2)  # offsets 0-1
    _append(log, ProducerBatchInfo(2, 0, 0), 1)  # 2
    _append(log, ProducerBatchInfo(1, 0, 2), 2)  # 3-4
    _append(log, ProducerBatchInfo(2, 1, 0), 1)  # 5: producer 2's new epoch
    log.truncate_to(3)
    entry1, entry2 = log.producer_state.entry(1), log.producer_state.entry(2)
    assert entry1 is not None and entry1.last_seq == 1
    assert entry2 is not None and (entry2.producer_epoch, entry2.last_seq) == (0, 0)
    # the batch cut off is new again for producer 1; producer 2's old epoch is current again
    assert _append(log, ProducerBatchInfo(1, 0, 2), 2) == (3, 4)
    assert _append(log, ProducerBatchInfo(2, 0, 1), 1) == (5, 5)
    log.truncate_to(0)
    assert len(log.producer_state) == 0


def test_retention_keeps_producer_state_and_expiry_removes_it() -> None:
    log = _log()
    log.append_as_leader(_records(1, timestamp=1000), 0, NO_TIMESTAMP, ProducerBatchInfo(1, 0, 0))
    log.append_as_leader(_records(1, timestamp=5000), 0, NO_TIMESTAMP, ProducerBatchInfo(2, 0, 0))
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    log.maybe_increment_log_start_offset(2)
    assert len(log.producer_state) == 2
    assert log.remove_expired_producers(now_ms=10_999, expiration_ms=10_000) == 0
    assert log.remove_expired_producers(now_ms=11_000, expiration_ms=10_000) == 1
    assert log.producer_state.entry(1) is None and log.producer_state.entry(2) is not None


def _produce(
    cluster: DirectCluster, leader: int, producer: ProducerBatchInfo, n: int
) -> PartitionResponse:
    answers: list[PartitionResponse] = []
    cluster.brokers[leader].append_messages(
        30_000,
        -1,
        {TP: _records(n)},
        lambda responses: answers.append(responses[TP]),
        producers={TP: producer},
    )
    cluster.pump()
    [answer] = answers
    return answer


def test_followers_know_the_producers_so_a_retry_to_the_new_leader_is_not_duplicated() -> None:
    cluster = DirectCluster()
    cluster.elect(TP, leader=0)
    cluster.pump()
    assert _produce(cluster, 0, ProducerBatchInfo(5, 0, 0), 3).base_offset == 0
    assert _produce(cluster, 0, ProducerBatchInfo(5, 0, 3), 3).base_offset == 3
    cluster.elect(TP, leader=1, isr=(1, 2), replicas=(0, 1, 2), brokers=(1, 2))
    cluster.pump(brokers=(1, 2))
    # the producer did not hear back about its second batch and sends it again
    retried = _produce(cluster, 1, ProducerBatchInfo(5, 0, 3), 3)
    assert (retried.error, retried.base_offset) == (Errors.NONE, 3)
    assert _produce(cluster, 1, ProducerBatchInfo(5, 0, 6), 1).base_offset == 6
    assert cluster.brokers[1].partitions[TP].log.log_end_offset == 7


def test_the_broker_expires_producer_state_periodically_and_then_parks() -> None:
    config = BrokerConfig(
        producer_id_expiration_ms=60_000, producer_id_expiration_check_interval_ms=10_000
    )
    cluster = DirectCluster(config=config)
    cluster.elect(TP, leader=0)
    cluster.pump()
    cluster.clock.now = 1000
    _produce(cluster, 0, ProducerBatchInfo(5, 0, 0), 1)  # record timestamps are 1000
    logs = [b.partitions[TP].log for b in cluster.brokers.values()]
    assert all(len(log.producer_state) == 1 for log in logs)
    follower = cluster.brokers[2].scheduler  # wakes a follower for nothing else
    assert follower.next_deadline() == 10_000  # the check, activated by the fetched batch
    for _ in range(5):  # checks at 11,000 .. 51,000: the batch is younger than 60,000 ms
        cluster.advance(10_000)
    assert all(len(log.producer_state) == 1 for log in logs)
    cluster.advance(10_000)  # at 61,000 it is 60,000 ms old
    assert all(len(log.producer_state) == 0 for log in logs)
    # nothing left to expire: the check is parked, log retention's is the next wake-up
    assert follower.next_deadline() == config.log_retention_check_interval_ms


@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.booleans(), st.integers(1, 4)), min_size=1, max_size=40
    )
)
def test_whatever_is_retried_each_batch_is_in_the_log_once_in_order(
    sends: list[tuple[int, bool, int]],
) -> None:
    """Producers send batches and retry some of their recent ones (at most five back, as a
    producer with five requests in flight may): every batch is in the log once, each
    producer's in sequence order, and a retry gets the offsets of the first append."""
    log = _log()
    next_seq: dict[int, int] = {}
    sent: dict[int, list[tuple[ProducerBatchInfo, int, tuple[int, int]]]] = {}
    for producer_id, retry, count in sends:
        history = sent.setdefault(producer_id, [])
        if retry and history:
            producer, n, offsets = history[-min(len(history), NUM_BATCHES_TO_RETAIN)]
            assert _append(log, producer, n) == offsets
            continue
        producer = ProducerBatchInfo(producer_id, 0, next_seq.get(producer_id, 0))
        next_seq[producer_id] = producer.base_sequence + count
        history.append((producer, count, _append(log, producer, count)))
    batches = [b for s in log.segments for b in s.batches]
    assert len(batches) == sum(len(h) for h in sent.values())
    for producer_id, history in sent.items():
        mine = [b.base_sequence for b in batches if b.producer_id == producer_id]
        assert mine == [p.base_sequence for p, _, _ in history]

"""Errors, BrokerConfig validation, record sizes and the small value types."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replica import (
    BrokerConfig,
    Errors,
    InvalidConfigError,
    LogOffsetMetadata,
    PartitionState,
    Record,
    ReplicaArgumentError,
    TopicPartition,
)
from replica.records import RECORD_BATCH_OVERHEAD, batch_size_in_bytes, record_size_in_bytes
from replica.types import canonical_partition


def test_error_codes_are_kafkas() -> None:
    assert int(Errors.NONE) == 0
    assert int(Errors.UNKNOWN_SERVER_ERROR) == -1
    assert int(Errors.NOT_LEADER_OR_FOLLOWER) == 6
    assert int(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND) == 20
    assert int(Errors.INVALID_COMMIT_OFFSET_SIZE) == 28
    assert int(Errors.KAFKA_STORAGE_ERROR) == 56
    assert int(Errors.FENCED_LEADER_EPOCH) == 74
    assert Errors.NOT_ENOUGH_REPLICAS.is_retriable
    assert Errors.REQUEST_TIMED_OUT.is_retriable
    assert not Errors.MESSAGE_TOO_LARGE.is_retriable
    assert not Errors.OFFSET_OUT_OF_RANGE.is_retriable


def test_broker_config_defaults_are_kafkas() -> None:
    config = BrokerConfig()
    assert config.replica_fetch_wait_max_ms == 500
    assert config.replica_fetch_min_bytes == 1
    assert config.replica_lag_time_max_ms == 30_000
    assert config.replica_fetch_max_bytes == 1 << 20
    assert config.min_insync_replicas == 1
    assert config.message_max_bytes == 1_048_588
    assert config.log_segment_bytes == 1 << 30
    assert config.producer_purgatory_purge_interval_requests == 1000
    assert config.fetch_purgatory_purge_interval_requests == 1000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_insync_replicas": 0}, "min.insync.replicas must be >= 1, got 0"),
        ({"replica_fetch_wait_max_ms": -1}, "replica.fetch.wait.max.ms must be >= 0"),
        ({"log_segment_bytes": 13}, "log.segment.bytes must be >= 14"),
        ({"replica_lag_time_max_ms": 1.5}, "replica.lag.time.max.ms must be an integer"),
        ({"message_max_bytes": True}, "message.max.bytes must be an integer"),
        ({"log_message_timestamp_type": "Now"}, "log.message.timestamp.type must be"),
        (
            {"replica_fetch_wait_max_ms": 600, "replica_lag_time_max_ms": 500},
            "replica.fetch.wait.max.ms must be <= replica.lag.time.max.ms",
        ),
    ],
)
def test_broker_config_rejects_bad_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message.replace(".", r"\.")):
        BrokerConfig(**kwargs)  # type: ignore[arg-type]


def test_record_sizes_follow_the_v2_format() -> None:
    # attributes 1 + timestamp delta 1 + offset delta 1 + null key 1 + value (1 + 1) +
    # headers count 1 = 7 bytes of body, plus a 1-byte length prefix.
    assert record_size_in_bytes(Record(None, b"v"), 0, 0) == 8
    assert record_size_in_bytes(Record(b"k", None), 0, 0) == 8
    # Larger deltas and values take more varint bytes.
    assert record_size_in_bytes(Record(None, b"v"), 64, 0) == 9
    assert record_size_in_bytes(Record(None, bytes(200)), 0, 0) == 1 + 2 + 200 + 5 + 1
    with_header = Record(None, b"v", headers=(("h", b"1"),))
    assert record_size_in_bytes(with_header, 0, 0) == 8 + 4
    records = [Record(None, b"v", 1000), Record(None, b"v", 1100)]
    # The second record's timestamp delta (100) takes two varint bytes.
    assert batch_size_in_bytes(records) == RECORD_BATCH_OVERHEAD + 8 + 9
    assert batch_size_in_bytes([]) == RECORD_BATCH_OVERHEAD


def test_topic_partition_is_hashable_and_ordered() -> None:
    a, b, c = TopicPartition("a", 1), TopicPartition("a", 2), TopicPartition("b", 0)
    assert sorted([c, b, a]) == [a, b, c]
    assert {TopicPartition("a", 1): 1}[a] == 1
    assert str(c) == "b-0"
    assert repr(a) == "TopicPartition(topic='a', partition=1)"
    assert TopicPartition(topic="a", partition=1) == a != b and a != ("a", 1)
    assert hash(TopicPartition("a", 1)) == hash(a)
    assert pickle.loads(pickle.dumps(c)) == c


def test_log_offset_metadata_position_diff_needs_one_segment() -> None:
    assert LogOffsetMetadata(5, 0, 300).position_diff(LogOffsetMetadata(2, 0, 100)) == 200
    with pytest.raises(ReplicaArgumentError, match="same segment"):
        LogOffsetMetadata(5, 4, 300).position_diff(LogOffsetMetadata(2, 0, 100))
    assert LogOffsetMetadata(1, 0, 0).on_older_segment(LogOffsetMetadata(9, 4, 0))


@pytest.mark.parametrize(
    ("leader", "epoch", "isr", "replicas", "message"),
    [
        (0, -1, (0,), (0,), "leader_epoch must be >= 0"),
        (0, 0, (0,), (), "replicas must be non-empty"),
        (0, 0, (0,), (0, 0), "replicas must be non-empty and distinct"),
        (0, 0, (), (0,), "isr must be a non-empty subset"),
        (0, 0, (1,), (0,), "isr must be a non-empty subset"),
        (5, 0, (0,), (0,), "leader must be one of replicas"),
    ],
)
def test_partition_state_validation(
    leader: int, epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...], message: str
) -> None:
    with pytest.raises(ReplicaArgumentError, match=message):
        PartitionState(leader, epoch, isr, replicas)
    assert PartitionState(-1, 0, [0], [0, 1]).replicas == (0, 1)


@given(
    st.lists(
        st.builds(
            Record,
            st.none() | st.binary(max_size=200),
            st.none() | st.binary(max_size=9000),
            st.integers(-(10**13), 10**13),
            st.lists(
                st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=3
            ).map(tuple),
        ),
        max_size=70,
    )
)
def test_batch_size_fast_path_matches_the_record_sizes(records: list[Record]) -> None:
    expected = RECORD_BATCH_OVERHEAD + sum(
        record_size_in_bytes(r, i, r.timestamp - records[0].timestamp)
        for i, r in enumerate(records)
    )
    assert batch_size_in_bytes(records) == expected


def test_canonical_partition_is_one_object_per_partition() -> None:
    tp = canonical_partition("canonical", 3)
    assert tp == TopicPartition("canonical", 3) and type(tp) is TopicPartition
    assert canonical_partition("canonical", 3) is tp
    assert canonical_partition("canonical", 4) is not tp

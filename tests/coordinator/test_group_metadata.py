"""GroupMetadata's lifecycle table, the group metadata record and GroupConfig."""

from __future__ import annotations

import pytest

from coordinator import (
    VALID_PREVIOUS_STATES,
    CorruptOffsetRecordError,
    GroupConfig,
    GroupMemberValue,
    GroupMetadata,
    GroupMetadataValue,
    GroupState,
    IllegalGroupStateError,
    InvalidGroupConfigError,
    MemberMetadata,
    decode_group_record,
    encode_group_record,
)
from coordinator.group_record import is_group_record
from coordinator.offset_record import OffsetAndMetadata, OffsetCommitKey, encode_offset_record
from replica.records import Record
from replica.types import TopicPartition

S = GroupState


def test_the_transition_table_is_kafkas() -> None:
    assert {
        S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
        S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
        S.STABLE: {S.COMPLETING_REBALANCE},
        S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
        S.EMPTY: {S.PREPARING_REBALANCE},
    } == VALID_PREVIOUS_STATES


@pytest.mark.parametrize("start", list(GroupState))
@pytest.mark.parametrize("target", list(GroupState))
def test_transitions_follow_the_table(start: GroupState, target: GroupState) -> None:
    group = GroupMetadata("g", lambda: 7, start)
    if start in VALID_PREVIOUS_STATES[target]:
        group.transition_to(target)
        assert group.state is target
    else:
        with pytest.raises(IllegalGroupStateError, match=f"from {start.value} to {target.value}"):
            group.transition_to(target)
        assert group.state is start


def member(member_id: str, *protocols: str) -> MemberMetadata:
    return MemberMetadata(
        member_id, "c", "h", 1000, 6000, "consumer", tuple((p, p.encode()) for p in protocols)
    )


def test_a_vote_tie_goes_to_the_earliest_members_choice() -> None:
    group = GroupMetadata("g", lambda: 0)
    group.add(member("m1", "roundrobin", "range"))
    group.add(member("m2", "range", "roundrobin"))
    assert group.select_protocol() == "roundrobin"


def test_the_leader_moves_to_the_first_remaining_member() -> None:
    group = GroupMetadata("g", lambda: 0)
    for name in ("m1", "m2", "m3"):
        group.add(member(name, "range"))
    group.remove("m1")
    assert group.leader_id == "m2"
    group.remove("m2")
    group.remove("m3")
    assert group.leader_id is None


def value() -> GroupMetadataValue:
    return GroupMetadataValue(
        "consumer",
        3,
        "range",
        "m1",
        1234,
        (
            GroupMemberValue("m1", "c1", "/10.0.0.1", 30_000, 10_000, b"sub", b"\x00\x01"),
            GroupMemberValue("m2", "c2", "/10.0.0.2", 30_000, 10_000, b"", b""),
        ),
    )


def test_group_record_round_trip() -> None:
    record = encode_group_record("group-é", value())
    assert record.timestamp == 1234 and is_group_record(record)
    assert decode_group_record(record) == ("group-é", value())
    empty = GroupMetadataValue("consumer", 4, None, None, 9)
    assert decode_group_record(encode_group_record("g", empty)) == ("g", empty)


def test_offset_records_are_not_group_records() -> None:
    offset = encode_offset_record(
        OffsetCommitKey("g", TopicPartition("t", 0)), OffsetAndMetadata(1)
    )
    assert not is_group_record(offset)
    assert not is_group_record(Record(None, b"x", 0))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (Record(b"\x00\x02\x00\x01g", None, 0), "needs both a key and a value"),
        (Record(b"\x00\x02\x00\x05g", b"", 0), "group metadata key is truncated"),
        (Record(b"\x00\x02\x00\x01g", b"\x00\x09", 0), "value has version 9"),
        (
            Record(b"\x00\x02\x00\x01g", (encode_group_record("g", value()).value or b"")[:-1], 0),
            "group metadata value is truncated",
        ),
        (
            Record(
                b"\x00\x02\x00\x01g", (encode_group_record("g", value()).value or b"") + b"!", 0
            ),
            "1 trailing bytes",
        ),
    ],
)
def test_corrupt_group_records(record: Record, message: str) -> None:
    with pytest.raises(CorruptOffsetRecordError, match=message):
        decode_group_record(record)


def test_group_config_defaults_and_bounds() -> None:
    config = GroupConfig()
    assert (
        config.group_min_session_timeout_ms,
        config.group_max_session_timeout_ms,
        config.group_initial_rebalance_delay_ms,
    ) == (6000, 1_800_000, 3000)
    assert GroupConfig(group_initial_rebalance_delay_ms=0).group_initial_rebalance_delay_ms == 0
    with pytest.raises(InvalidGroupConfigError, match="group_min_session_timeout_ms"):
        GroupConfig(group_min_session_timeout_ms=0)
    with pytest.raises(InvalidGroupConfigError, match="group_max_session_timeout_ms must be >="):
        GroupConfig(group_min_session_timeout_ms=10, group_max_session_timeout_ms=9)
    with pytest.raises(InvalidGroupConfigError, match="group_initial_rebalance_delay_ms"):
        GroupConfig(group_initial_rebalance_delay_ms=-1)

"""The group metadata records of ``__consumer_offsets``: a group's generation, members and
assignment, written when a generation's assignment is stored and read back on a coordinator
move.

As in Kafka's ``GroupMetadataManager``, the record is keyed by the group alone, so the latest
record of a group is its state; it lives in the group's offsets partition beside the offset
commits, told apart by the key's version (Kafka's: 0 and 1 are offset commits, 2 is group
metadata). One record is one :class:`~replica.records.Record`:

* key   = version ``int16`` (2), group id (``int16`` length + UTF-8);
* value = version ``int16`` (1), protocol type, generation ``int32``, protocol, leader (each
  string ``int16`` length + UTF-8, an empty string for none), state timestamp ``int64``,
  member count ``int32``, then per member: member id, client id, client host (strings),
  rebalance timeout ``int32``, session timeout ``int32``, subscription and assignment (each
  ``int32`` length + bytes);
* the record's timestamp is the time it was written.

This is the project's own encoding of the fields of Kafka's ``GroupMetadataValue`` (without
static membership's group instance ids). Encoding is deterministic; decoding checks every
length and raises :class:`~coordinator.errors.CorruptOffsetRecordError` on anything malformed.
"""

from __future__ import annotations

import struct
from typing import Final

import attrs

from coordinator.errors import CorruptOffsetRecordError
from coordinator.offset_record import RecordReader, short_string
from replica.records import Record

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "GroupMemberValue",
    "GroupMetadataValue",
    "decode_group_record",
    "encode_group_record",
    "is_group_record",
]

#: The key version of a group metadata record (Kafka's ``GroupMetadataKey`` version).
GROUP_METADATA_KEY_VERSION: Final = 2
_VALUE_VERSION: Final = 1
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")


@attrs.define(frozen=True)
class GroupMemberValue:
    """One member as stored: what a new coordinator needs to keep it in the group."""

    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@attrs.define(frozen=True)
class GroupMetadataValue:
    """A group's stored state: no members for an EMPTY group, else the members of a
    generation and their assignment (the group is STABLE once loaded)."""

    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    state_timestamp: int
    members: tuple[GroupMemberValue, ...] = ()


def is_group_record(record: Record) -> bool:
    """True if ``record``'s key has the group metadata key version (else it is taken for an
    offset commit)."""
    key = record.key
    return key is not None and key[:2] == _INT16.pack(GROUP_METADATA_KEY_VERSION)


def encode_group_record(group_id: str, value: GroupMetadataValue) -> Record:
    """Encode ``group_id``'s state as a record of ``__consumer_offsets``."""
    key = _INT16.pack(GROUP_METADATA_KEY_VERSION) + short_string(group_id)
    parts = [
        _INT16.pack(_VALUE_VERSION),
        short_string(value.protocol_type),
        _INT32.pack(value.generation_id),
        short_string(value.protocol_name or ""),
        short_string(value.leader_id or ""),
        _INT64.pack(value.state_timestamp),
        _INT32.pack(len(value.members)),
    ]
    for member in value.members:
        parts += [
            short_string(member.member_id),
            short_string(member.client_id),
            short_string(member.client_host),
            _INT32.pack(member.rebalance_timeout_ms),
            _INT32.pack(member.session_timeout_ms),
            _INT32.pack(len(member.subscription)),
            member.subscription,
            _INT32.pack(len(member.assignment)),
            member.assignment,
        ]
    return Record(key=key, value=b"".join(parts), timestamp=value.state_timestamp)


def decode_group_record(record: Record) -> tuple[str, GroupMetadataValue]:
    """Decode a record written by :func:`encode_group_record` into its group id and value.

    Raises:
        CorruptOffsetRecordError: a missing key or value, an unknown version, a length that
            runs past the end, trailing bytes, or invalid UTF-8.
    """
    if record.key is None or record.value is None:
        raise CorruptOffsetRecordError("a group metadata record needs both a key and a value")
    key = RecordReader(record.key, "group metadata key")
    key.expect_version(GROUP_METADATA_KEY_VERSION)
    group_id = key.read_string(_INT16)
    key.expect_end()
    value = RecordReader(record.value, "group metadata value")
    value.expect_version(_VALUE_VERSION)
    protocol_type = value.read_string(_INT16)
    generation_id = value.read_int(_INT32)
    protocol_name = value.read_string(_INT16) or None
    leader_id = value.read_string(_INT16) or None
    state_timestamp = value.read_int(_INT64)
    count = value.read_int(_INT32)
    if count < 0:
        raise CorruptOffsetRecordError(f"group metadata value has {count} members")
    members = tuple(
        GroupMemberValue(
            member_id=value.read_string(_INT16),
            client_id=value.read_string(_INT16),
            client_host=value.read_string(_INT16),
            rebalance_timeout_ms=value.read_int(_INT32),
            session_timeout_ms=value.read_int(_INT32),
            subscription=value.read_bytes(_INT32),
            assignment=value.read_bytes(_INT32),
        )
        for _ in range(count)
    )
    value.expect_end()
    return group_id, GroupMetadataValue(
        protocol_type, generation_id, protocol_name, leader_id, state_timestamp, members
    )

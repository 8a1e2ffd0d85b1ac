"""The records of ``__consumer_offsets``: how a committed offset is written to the log.

One commit of one partition is one :class:`~replica.records.Record`:

* key   = version ``int16`` (1), group id, topic (each ``int16`` length + UTF-8), partition
  ``int32``;
* value = version ``int16`` (1), offset ``int64``, leader epoch ``int32`` (-1 for none),
  metadata (``int32`` length + UTF-8), commit timestamp ``int64``;
* the record's timestamp is the commit timestamp.

This is the project's own simple encoding (Kafka's ``OffsetCommitKey``/``OffsetCommitValue``
schemas carry the same fields). Encoding is deterministic; decoding checks every length and
raises :class:`~coordinator.errors.CorruptOffsetRecordError` on anything malformed. The
reader (:class:`RecordReader`) and :func:`short_string` also serve the group metadata records
of :mod:`coordinator.group_record`.
"""

from __future__ import annotations

import struct
from typing import Final

import attrs

from coordinator.errors import CorruptOffsetRecordError
from replica.records import Record
from replica.types import TopicPartition

__all__ = [
    "OffsetAndMetadata",
    "OffsetCommitKey",
    "decode_offset_record",
    "encode_offset_record",
]

_KEY_VERSION: Final = 1
_VALUE_VERSION: Final = 1
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")


@attrs.define(frozen=True)
class OffsetAndMetadata:
    """A committed offset (Kafka's ``OffsetAndMetadata``).

    ``offset`` is the next offset the group will consume; ``leader_epoch`` the leader epoch of
    the last consumed record, if the client knew it; ``metadata`` free text from the client;
    ``commit_timestamp`` the broker time (ms) the commit was received.
    """

    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int | None = None


@attrs.define(frozen=True)
class OffsetCommitKey:
    """Whose offset a record holds: a group and one of the partitions it consumes."""

    group_id: str
    topic_partition: TopicPartition


def encode_offset_record(key: OffsetCommitKey, value: OffsetAndMetadata) -> Record:
    """Encode one commit as a record of ``__consumer_offsets``."""
    key_bytes = b"".join(
        (
            _INT16.pack(_KEY_VERSION),
            short_string(key.group_id),
            short_string(key.topic_partition.topic),
            _INT32.pack(key.topic_partition.partition),
        )
    )
    metadata = value.metadata.encode("utf-8")
    value_bytes = b"".join(
        (
            _INT16.pack(_VALUE_VERSION),
            _INT64.pack(value.offset),
            _INT32.pack(-1 if value.leader_epoch is None else value.leader_epoch),
            _INT32.pack(len(metadata)),
            metadata,
            _INT64.pack(value.commit_timestamp),
        )
    )
    return Record(key=key_bytes, value=value_bytes, timestamp=value.commit_timestamp)


def decode_offset_record(record: Record) -> tuple[OffsetCommitKey, OffsetAndMetadata]:
    """Decode a record written by :func:`encode_offset_record`.

    Raises:
        CorruptOffsetRecordError: a missing key or value, an unknown version, a length that
            runs past the end, trailing bytes, or invalid UTF-8.
    """
    if record.key is None or record.value is None:
        raise CorruptOffsetRecordError("an offset commit record needs both a key and a value")
    key = RecordReader(record.key, "offset commit key")
    key.expect_version(_KEY_VERSION)
    group_id = key.read_string(_INT16)
    topic = key.read_string(_INT16)
    partition = key.read_int(_INT32)
    key.expect_end()
    value = RecordReader(record.value, "offset commit value")
    value.expect_version(_VALUE_VERSION)
    offset = value.read_int(_INT64)
    leader_epoch = value.read_int(_INT32)
    metadata = value.read_string(_INT32)
    commit_timestamp = value.read_int(_INT64)
    value.expect_end()
    return (
        OffsetCommitKey(group_id, TopicPartition(topic, partition)),
        OffsetAndMetadata(
            offset=offset,
            metadata=metadata,
            commit_timestamp=commit_timestamp,
            leader_epoch=None if leader_epoch == -1 else leader_epoch,
        ),
    )


def short_string(s: str) -> bytes:
    """``s`` as an ``int16`` length and its UTF-8 bytes (at most 32767 of them)."""
    data = s.encode("utf-8")
    if len(data) > 0x7FFF:
        raise CorruptOffsetRecordError(
            f"a string of a record (group id, topic, member id...) must encode to at most "
            f"32767 bytes, got {len(data)}"
        )
    return _INT16.pack(len(data)) + data


class RecordReader:
    """Reads big-endian fields from ``data``, failing with CorruptOffsetRecordError whose
    message starts with ``what`` (such as ``"offset commit key"``)."""

    __slots__ = ("data", "position", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.position = 0
        self.what = what

    def _take(self, size: int) -> bytes:
        end = self.position + size
        if size < 0 or end > len(self.data):
            raise CorruptOffsetRecordError(
                f"{self.what} is truncated: needs {size} bytes at position "
                f"{self.position}, has {len(self.data) - self.position}"
            )
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def read_int(self, layout: struct.Struct) -> int:
        (number,) = layout.unpack(self._take(layout.size))
        return int(number)

    def read_bytes(self, length_layout: struct.Struct) -> bytes:
        return self._take(self.read_int(length_layout))

    def read_string(self, length_layout: struct.Struct) -> str:
        raw = self.read_bytes(length_layout)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptOffsetRecordError(f"{self.what} holds invalid UTF-8: {exc}") from exc

    def expect_version(self, version: int) -> None:
        found = self.read_int(_INT16)
        if found != version:
            raise CorruptOffsetRecordError(
                f"{self.what} has version {found}, only {version} is known"
            )

    def expect_end(self) -> None:
        if self.position != len(self.data):
            raise CorruptOffsetRecordError(
                f"{self.what} has {len(self.data) - self.position} trailing bytes"
            )

"""Simulated messages as Kafka records: the message id rides in a record header.

The producer builds a :class:`replica.records.Record` whose value is ``value_size`` zero bytes
(shared between records of the same size, so large runs do not hold copies) and whose header
``sim-message-id`` holds the message id as 8 big-endian bytes. Brokers store and return the
record untouched, so a consumer can tell which produced message it received, and count
duplicates. The header adds 25 bytes to the record's size on the wire.

The producer sends a batch's records as one :class:`replica.records.RecordColumns` whose
header column is the message ids; :func:`message_ids_of` and :func:`message_ids_column` read
them back from any records without building a :class:`~replica.records.Record` when they are
columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from replica.records import NO_TIMESTAMP, Record, RecordColumns, record_size_in_bytes

__all__ = [
    "MESSAGE_ID_HEADER",
    "make_record",
    "message_id_of",
    "message_ids_column",
    "message_ids_of",
    "message_record_size",
    "message_record_sizes",
]

MESSAGE_ID_HEADER: Final = "sim-message-id"


@lru_cache(maxsize=4096)
def _zeros(size: int) -> bytes:
    return bytes(size)


def make_record(
    message_id: int, key: bytes | None, value_size: int, timestamp_ms: int = NO_TIMESTAMP
) -> Record:
    """A record for message ``message_id`` (an int in ``0 .. 2**63 - 1``).

    Raises ValueError if ``message_id`` or ``value_size`` is negative.
    """
    if message_id < 0 or value_size < 0:
        raise ValueError(
            f"message_id and value_size must be >= 0, got {message_id} and {value_size}"
        )
    header = (MESSAGE_ID_HEADER, message_id.to_bytes(8, "big"))
    return Record(key, _zeros(value_size), timestamp_ms, (header,))


def message_id_of(record: Record) -> int | None:
    """The message id carried by ``record``, or None if it has none (not made by a sim client)."""
    for name, value in record.headers:
        if name == MESSAGE_ID_HEADER and value is not None:
            return int.from_bytes(value, "big")
    return None


def message_ids_of(records: Sequence[Record]) -> Sequence[int | None]:
    """The message id of each record of ``records`` (None for a record without one)."""
    if isinstance(records, RecordColumns) and records.header_key == MESSAGE_ID_HEADER:
        return records.header_values
    return [message_id_of(record) for record in records]


@lru_cache(maxsize=4096)
def message_record_size(key: bytes | None, value_size: int) -> int:
    """Bytes of the record :func:`make_record` builds, at offset and timestamp delta 0 (what a
    producer counts against ``batch.size``)."""
    return record_size_in_bytes(make_record(0, key, value_size), 0, 0)


def message_record_sizes(keys: Sequence[bytes | None], value_sizes: Sequence[int]) -> list[int]:
    """:func:`message_record_size` of each message (``keys[i]``, ``value_sizes[i]``).

    Messages of one size without keys (what the workload driver hands over unless it draws
    keys or sizes) are sized once: calling the cached function costs a key tuple and its
    hash per message, ~1k instructions in the compiled build."""
    n = len(value_sizes)
    if n and keys.count(None) == n and value_sizes.count(value_sizes[0]) == n:
        return [message_record_size(None, value_sizes[0])] * n
    return list(map(message_record_size, keys, value_sizes))


def message_ids_column(records: Sequence[Record]) -> Sequence[int]:
    """The message id of each record of ``records``, -1 for a record without one (columns
    made by a sim producer are returned as they are: every record has one)."""
    if isinstance(records, RecordColumns) and records.header_key == MESSAGE_ID_HEADER:
        return records.header_values
    return [-1 if m is None else m for m in map(message_id_of, records)]

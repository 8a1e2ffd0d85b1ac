"""The state log's bytes: every entry survives encode then decode, and anything else is
refused with a LogFormatError naming what is wrong."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consume_proxy import (
    MAX_WRITER,
    LogEntry,
    LogEntryKind,
    LogFormatError,
    decode_entry,
    encode_entry,
)
from replica.types import TopicPartition


@st.composite
def entries(draw: st.DrawFn) -> LogEntry:
    kind = draw(st.sampled_from(LogEntryKind))
    return LogEntry(
        draw(st.integers(0, 2**62)),
        kind,
        TopicPartition(draw(st.text(min_size=1, max_size=20)), draw(st.integers(0, 2**31 - 1))),
        draw(st.integers(0, 2**62)),
        draw(st.integers(0, 2**31 - 1)),
        draw(st.integers(0, 2**62)) if kind is LogEntryKind.PENDING else None,
        draw(st.integers(0, MAX_WRITER)),
        draw(st.integers(0, 2**63 - 1)),
    )


@given(entries())
def test_an_entry_round_trips(entry: LogEntry) -> None:
    key, value = encode_entry(entry)
    assert len(value) == 38
    assert decode_entry(key, value, entry.position) == entry


def test_the_bytes_are_the_documented_ones() -> None:
    entry = LogEntry(7, LogEntryKind.PENDING, TopicPartition("jobs", 2), 5, 1, 30_000, 9, 4)
    key, value = encode_entry(entry)
    assert key == b"\x00\x00\x00\x00\x02jobs"
    fields = ["01", "00", "0000000000000005", "00000001", "0000000000007530"]
    assert value.hex() == "".join([*fields, "0000000000000009", "0000000000000004"])
    claim = LogEntry(0, LogEntryKind.CLAIM, TopicPartition("jobs", 2), 5, 0, None, 9, 5)
    assert encode_entry(claim)[1][:2] == b"\x01\x03"
    forwarded = LogEntry(0, LogEntryKind.REJECT_REQUEST, TopicPartition("jobs", 2), 5, 0)
    assert encode_entry(forwarded)[1][:2] == b"\x01\x06"


V1 = b"\x01" + b"\x00" * 37


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (None, b"x", "not a state-log entry"),
        (b"\x00\x00\x00\x00\x00t", b"", "not a state-log entry"),
        (b"\x00\x00\x00\x00\x00t", V1[:37], "a value of 37 bytes"),
        (b"\x01\x00\x00\x00\x00t", V1, "format version 1/1"),
        (b"\x00\x00\x00\x00\x00t", b"\x00" * 22, "format version 0/0"),  # version 0: gone
        (b"\x00\x00\x00\x00\x00t", b"\x01\x07" + b"\x00" * 36, "unknown kind 7"),
        (b"\x00\x00\x00\x00\x00\xff", V1, "not utf-8"),
    ],
)
def test_other_bytes_are_refused(key: bytes | None, value: bytes, reason: str) -> None:
    with pytest.raises(LogFormatError, match=reason):
        decode_entry(key, value, 3)

"""The state log's bytes: every entry survives encode then decode, and anything else is
refused with a LogFormatError naming what is wrong."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consume_proxy import LogEntry, LogEntryKind, LogFormatError, decode_entry, encode_entry
from replica.types import TopicPartition


@st.composite
def entries(draw: st.DrawFn) -> LogEntry:
    kind = draw(st.sampled_from(LogEntryKind))
    return LogEntry(
        draw(st.integers(0, 2**62)),
        kind,
        TopicPartition(draw(st.text(min_size=1, max_size=20)), draw(st.integers(0, 2**31 - 1))),
        draw(st.integers(0, 2**62)),
        draw(st.integers(1, 2**31 - 1)),
        draw(st.integers(0, 2**62)) if kind is LogEntryKind.PENDING else None,
    )


@given(entries())
def test_an_entry_round_trips(entry: LogEntry) -> None:
    key, value = encode_entry(entry)
    assert len(value) == 22
    assert decode_entry(key, value, entry.position) == entry


def test_the_bytes_are_the_documented_ones() -> None:
    entry = LogEntry(7, LogEntryKind.PENDING, TopicPartition("jobs", 2), 5, 1, 30_000)
    key, value = encode_entry(entry)
    assert key == b"\x00\x00\x00\x00\x02jobs"
    assert value.hex() == "00000000000000000005000000010000000000007530"


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (None, b"x", "not a state-log entry"),
        (b"\x00\x00\x00\x00\x00t", b"\x00" * 21, "not a state-log entry"),
        (b"\x01\x00\x00\x00\x00t", b"\x00" * 22, "format version 1/0"),
        (b"\x00\x00\x00\x00\x00t", b"\x00\x07" + b"\x00" * 20, "unknown kind 7"),
        (b"\x00\x00\x00\x00\x00\xff", b"\x00" * 22, "not utf-8"),
    ],
)
def test_other_bytes_are_refused(key: bytes | None, value: bytes, reason: str) -> None:
    with pytest.raises(LogFormatError, match=reason):
        decode_entry(key, value, 3)

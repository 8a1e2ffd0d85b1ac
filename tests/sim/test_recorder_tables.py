"""The messages table against a per-message reference, built whole or sliced, keeping or
releasing the recorder's columns (``tables`` / ``take_tables``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.output import MetricsRecorder
from sim.output import recorder as recorder_module

_IDS = st.integers(0, 12)
_TIMES = st.integers(0, 1000)
_EVENTS = st.lists(st.tuples(_IDS, _TIMES), max_size=20)
_ERRORS = st.sampled_from([0, 19])
_ACKS = st.tuples(_IDS, _TIMES, st.integers(0, 2), st.integers(-1, 50), _ERRORS)
_PURGATORY = st.none() | st.integers(0, 100)
_REQUESTS = st.tuples(st.sampled_from(["Produce", "Fetch"]), st.integers(0, 2), _TIMES, _PURGATORY)


@st.composite
def _recordings(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "sent": draw(st.lists(st.tuples(_IDS, _TIMES, st.sampled_from("ab")), max_size=15)),
        "acked": draw(st.lists(_ACKS, max_size=20)),
        "delivered": draw(_EVENTS),
        "processed": draw(_EVENTS),
        "committed": draw(_EVENTS),
        "requests": draw(st.lists(_REQUESTS, max_size=10)),
    }


def _record(recording: dict[str, Any]) -> MetricsRecorder:
    recorder = MetricsRecorder()
    recorder.producer_acks("a", -1)
    for message_id, t, producer in recording["sent"]:
        recorder.message_sent(message_id, t, producer, "t")
    for message_id, t, partition, offset, error in recording["acked"]:
        recorder.message_acked(message_id, t, partition, offset, error)
    for message_id, t in recording["delivered"]:
        recorder.message_delivered(message_id, t)
    for message_id, t in recording["processed"]:
        recorder.message_processed(message_id, t)
    for message_id, t in recording["committed"]:
        recorder.message_committed(message_id, t)
    for api, broker, sent, purgatory in recording["requests"]:
        recorder.request_completed(api, broker, "c", sent, sent + 7, produce_purgatory=purgatory)
    return recorder


def _first(events: list[tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    firsts: dict[int, tuple[Any, ...]] = {}
    for event in events:
        firsts.setdefault(event[0], event)
    return firsts


def _expected(recording: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per message, in the order of its first send, from the first of its events."""
    acked, delivered = _first(recording["acked"]), _first(recording["delivered"])
    processed, committed = _first(recording["processed"]), _first(recording["committed"])
    rows = []
    for message_id, sent, producer in _first(recording["sent"]).values():
        ack = acked.get(message_id)
        row = {
            "message_id": message_id, "producer": producer, "sent_us": sent,
            "acked_us": ack and ack[1], "partition": ack and ack[2],
            "offset": ack[3] if ack and ack[3] >= 0 else None, "ack_error": ack and ack[4],
            "delivered_us": delivered.get(message_id, (None, None))[1],
            "processed_us": processed.get(message_id, (None, None))[1],
            "committed_us": committed.get(message_id, (None, None))[1],
            "deliveries": sum(1 for event in recording["delivered"] if event[0] == message_id),
            "acks": -1 if producer == "a" else None,
        }  # fmt: skip
        rows.append(row)
    return rows


@settings(max_examples=150, deadline=None)
@given(_recordings(), st.sampled_from([1, 3, 1 << 16]))
def test_the_messages_table_is_the_first_of_each_event_per_message(
    recording: dict[str, Any], slice_events: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recorder_module, "_SLICE", slice_events)
        recorder = _record(recording)
        kept = recorder.tables()
        assert recorder.tables() == kept  # tables() keeps the columns
        taken = recorder.take_tables()
    assert taken == kept
    requests = kept[1].to_pylist()
    assert [(r["api"], r["broker"], r["sent_us"], r["round_trip_us"], r["produce_purgatory_us"])
            for r in requests] == [(api, broker, sent, 7, purgatory) for api, broker, sent,
                                   purgatory in recording["requests"]]  # fmt: skip
    rows = kept[0].to_pylist()
    expected = _expected(recording)
    assert [{key: row[key] for key in expected_row} for row, expected_row in
            zip(rows, expected, strict=True)] == expected  # fmt: skip
    for row in rows:
        assert row["duplicate"] == (row["deliveries"] > 1)
        assert row["produce_latency_us"] == (
            None if row["acked_us"] is None else row["acked_us"] - row["sent_us"]
        )
        assert row["commit_latency_us"] == (
            None if None in (row["committed_us"], row["processed_us"])
            else row["committed_us"] - row["processed_us"]
        )  # fmt: skip
    # take_tables let go of every measurement.
    empty = recorder.tables()
    assert [table.num_rows for table in empty] == [0, 0, 0]

"""The parts of the simulated proxy alone: the message-id table read off the fetches, the
proxy table built from events, a reader's lifecycle."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from replica.errors import Errors
from replica.records import Record, RecordBatch, RecordColumns
from replica.types import FetchPartitionData, TopicPartition
from sim.clients.records import MESSAGE_ID_HEADER, make_record
from sim.core.distributions import Constant
from sim.core.engine import Simulator
from sim.core.network import Network, NetworkConfig
from sim.output import MetricsRecorder
from sim.output.proxy_recorder import PROXY_SCHEMA, ProxyRecorder
from sim.output.proxy_summary import proxy_section
from sim.proxy import TRANSITIONS, Answer, Delivery, ProxyReader, ReaderState, ReaderStateError
from sim.proxy.connection import Connection
from sim.proxy.message_ids import UNKNOWN, MessageIds
from sim.scenario import ProxyReaders

TP = TopicPartition("jobs", 0)


def _answer(*batches: RecordBatch) -> FetchPartitionData:
    return FetchPartitionData(Errors.NONE, 100, 0, 100, batches, 0, 100)


def _batch(base: int, ids: list[int]) -> RecordBatch:
    records = RecordColumns(MESSAGE_ID_HEADER, ids, [10] * len(ids), [0] * len(ids))
    return RecordBatch(base, records, 0)


def test_message_ids_follow_the_fetched_offsets_and_leave_at_the_commit() -> None:
    ids = MessageIds()
    ids.assign(TP, 5)
    # A batch starting before the fetch offset: only offsets 5 and 6 are new.
    ids.fetched(TP, _answer(_batch(3, [30, 40, 50, 60])))
    # Fetched again (a retried fetch): nothing changes; then a gap at 7 and a record without id.
    ids.fetched(TP, _answer(_batch(3, [30, 40, 50, 60])))
    ids.fetched(TP, _answer(RecordBatch(8, [make_record(80, None, 1), Record(None, b"x")], 0)))
    assert [ids.message_id(TP, o) for o in range(4, 10)] == [UNKNOWN, 50, 60, UNKNOWN, 80, UNKNOWN]
    assert ids.message_id(TopicPartition("jobs", 1), 5) == UNKNOWN  # not served
    assert list(ids.committed(TP, 8)) == [50, 60]  # offset 7 held no message
    assert ids.message_id(TP, 6) == UNKNOWN and ids.message_id(TP, 8) == 80
    assert list(ids.committed(TP, 8)) == []  # nothing new


def _messages(rows: list[tuple[int, int | None, int]]) -> pa.Table:
    """A messages table of (message id, offset, sent) rows on jobs-0, plus one other topic."""
    return pa.table({
        "message_id": [m for m, _, _ in rows] + [99],
        "topic": ["jobs"] * len(rows) + ["other"],
        "partition": [None if o is None else 0 for _, o, _ in rows] + [0],
        "offset": [o for _, o, _ in rows] + [0],
        "sent_us": [t for _, _, t in rows] + [0],
    }, schema=pa.schema([
        ("message_id", pa.int64()), ("topic", pa.string()), ("partition", pa.int32()),
        ("offset", pa.int64()), ("sent_us", pa.int64()),
    ]))  # fmt: skip


def test_the_proxy_table_joins_the_events_to_the_messages() -> None:
    events = ProxyRecorder("jobs")
    # Message 1 (offset 0): forgotten once (expired), then acknowledged and committed.
    events.handed_out(1, 10)
    events.handed_out(1, 60)
    events.acknowledged(1, 80)
    events.committed([1], 90)
    # Message 2 (offset 1): cancelled, handed out again, pending at the end.
    events.handed_out(2, 20)
    events.cancelled(2, 30)
    events.handed_out(2, 40)
    # Message 3 (offset 2): handed out twice, archived at the limit; 4 (offset 3): unfetched.
    events.handed_out(3, 20)
    events.handed_out(3, 70)
    events.archived(3, 95)
    events.final_states(0, 1, 3, ["pending", "archived"])
    table = events.table(_messages([(1, 0, 0), (2, 1, 5), (3, 2, 5), (4, 3, 6), (5, None, 7)]))
    assert table.schema == PROXY_SCHEMA
    rows = table.to_pylist()
    assert [r["message_id"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["state"] for r in rows] == ["committed", "pending", "archived", "unfetched", None]
    assert [r["deliveries"] for r in rows] == [2, 2, 2, 0, 0]
    assert [r["expired"] for r in rows] == [1, 0, 2, 0, 0]
    assert [r["cancels"] for r in rows] == [0, 1, 0, 0, 0]
    assert [r["archived"] for r in rows] == [False, False, True, False, False]
    first = rows[0]
    assert (first["send_to_ack_latency_us"], first["ack_to_commit_latency_us"]) == (80, 10)
    assert first["send_to_commit_latency_us"] == 90 and rows[1]["acknowledged_us"] is None
    with pytest.raises(ValueError, match="2 states for offsets 0 to 3"):
        events.final_states(0, 0, 3, ["pending", "pending"])


def test_the_summary_section_of_an_empty_table_has_no_rates() -> None:
    section = proxy_section(ProxyRecorder("jobs").table(_messages([])), 0)
    assert section["records"] == 0
    assert section["redelivery_rate"] is None and section["duplicate_rate"] is None
    assert section["latency"]["send_to_ack"]["p99_ms"] is None


class _FakeServer:
    """Answers each request with the next scripted answer, at once."""

    name = "proxy-0"

    def __init__(self, reads: list[Delivery | None], answers: list[Answer]) -> None:
        self.reads = reads
        self.answers = answers
        self.calls: list[str] = []

    def read(self, timeout_ms: int, reply: Callable[[Delivery | None], None]) -> None:
        self.calls.append(f"read {timeout_ms}")
        if self.reads:
            reply(self.reads.pop(0))

    def acknowledge(self, delivery: Delivery, reply: Callable[[Answer], None]) -> None:
        self.calls.append(f"acknowledge {delivery.offset}/{delivery.delivery}")
        reply(self.answers.pop(0))

    def cancel(self, delivery: Delivery, reply: Callable[[Answer], None]) -> None:
        self.calls.append(f"cancel {delivery.offset}")
        reply(self.answers.pop(0))


def _reader(
    sim: Simulator, server: _FakeServer, **config: float
) -> tuple[ProxyReader, ProxyRecorder]:
    network = Network(sim, NetworkConfig(client_broker=Constant(value=100)))
    network.add_node("proxy-0", "client")
    network.add_node("reader-0", "client")
    events = ProxyRecorder("jobs")
    readers = ProxyReaders(
        count=1, read_timeout_ms=500, processing_time=Constant(value=1000), **config
    )  # type: ignore[arg-type]
    reader = ProxyReader(
        sim, Connection(network, "reader-0", server), readers, rng=sim.rng("reader-0"),
        recorder=MetricsRecorder(), proxy_events=events,
    )  # fmt: skip
    return reader, events


def test_a_reader_reads_works_and_acknowledges_one_record_at_a_time() -> None:
    sim = Simulator(1)
    first, second = Delivery(TP, 0, 1, 10), Delivery(TP, 1, 1, 11)
    server = _FakeServer([None, first, second], [Answer.ACCEPTED, Answer.ENDED])
    reader, events = _reader(sim, server)
    assert reader.state is ReaderState.IDLE
    reader.start()
    assert reader.state is ReaderState.READING
    sim.run_until(10_000)
    # An empty read, then each record: 200 us of network each way, 1 ms of work.
    assert server.calls == [
        "read 500",
        "read 500",
        "acknowledge 0/1",
        "read 500",
        "acknowledge 1/1",
        "read 500",
    ]
    assert reader.state is ReaderState.READING  # waiting on a read the script never answers
    table = events.table(_messages([(10, 0, 0), (11, 1, 0)])).to_pylist()
    assert [r["completions"] for r in table] == [1, 1]
    assert [r["late_answers"] for r in table] == [0, 1]  # the second acknowledgement was late


def test_a_reader_that_cancels_does_not_complete_and_one_that_forgets_reads_on() -> None:
    sim = Simulator(1)
    server = _FakeServer([Delivery(TP, 0, 1, 10)], [Answer.ACCEPTED])
    reader, events = _reader(sim, server, cancel_probability=1.0)
    reader.start()
    sim.run_until(10_000)
    assert server.calls == ["read 500", "cancel 0", "read 500"]
    assert events.table(_messages([(10, 0, 0)])).to_pylist()[0]["completions"] == 0
    sim = Simulator(1)
    server = _FakeServer([Delivery(TP, 0, 1, 10)], [])
    reader, events = _reader(sim, server, never_ack_probability=1.0)
    reader.start()
    sim.run_until(10_000)
    assert server.calls == ["read 500", "read 500"]
    assert events.table(_messages([(10, 0, 0)])).to_pylist()[0]["completions"] == 1


def test_a_reader_makes_only_the_moves_of_its_transition_table() -> None:
    assert TRANSITIONS[ReaderState.IDLE] == {ReaderState.READING}
    assert set(TRANSITIONS) == set(ReaderState)
    sim = Simulator(1)
    reader, _ = _reader(sim, _FakeServer([], []))
    with pytest.raises(ReaderStateError, match=r"cannot go from ReaderState\.IDLE"):
        reader._move(ReaderState.ANSWERING)

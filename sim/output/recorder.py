"""What a run measures: the recorder the cluster and clients report to.

Every method on the hot path appends to columns (``array('q')`` for integers, ``'Q'`` for
those never negative -- message ids, times, counts --; names -- producers, topics, APIs,
clients, time series -- as small integer codes), a batch method extends them in bulk; no
Python object is kept per message, request or sample, so the allocator's arenas are not
pinned by small long-lived objects while the brokers' logs come and go. The tables are built
once, at the end (:meth:`MetricsRecorder.tables`), one column at a time. Times are virtual
microseconds (``Simulator.now``).

What a batch shares is kept once per batch, not per message: an acknowledged batch is one row
of five integers (count, time, partition, base offset, error) beside the per-message id
column, and the producer and topic of sent messages one row per run of sends with the same
pair; the tables expand them (numpy) when they are built. So a batch costs a handful of
appends, whatever its size, and a row holding several values is appended in one call
(``array.fromlist``): in the compiled build a call on an ``array`` is the expensive part of
an append, not the copying.

Messages are identified by an integer ``message_id`` that the producer assigns and that
travels with the record, so a consumer can report it. Per message the recorder keeps the
first time of each event; ``message_delivered`` may be called again for the same message
(a redelivery after a restart, or a producer retry that appended it twice): that makes the
message a duplicate.

Loss is counted, not inferred. When the run ends (:meth:`MetricsRecorder.run_ended`), the
world reports each partition's final leader log: the message ids it holds and its log start
offset (:meth:`MetricsRecorder.final_log`). Each message then gets ``log_copies``, how many
times it is in that log (0: absent, 2 or more: duplicated in the log, e.g. a retried produce
appended twice), and ``retained_out``, absent because retention deleted it; a message
acknowledged, absent and not retained out was lost.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa

__all__ = ["MESSAGES_SCHEMA", "REQUESTS_SCHEMA", "TIMESERIES_SCHEMA", "MetricsRecorder"]

MESSAGES_SCHEMA: Final = pa.schema(
    [
        ("message_id", pa.int64()),
        ("producer", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("sent_us", pa.int64()),
        ("acked_us", pa.int64()),
        ("ack_error", pa.int16()),
        ("delivered_us", pa.int64()),
        ("processed_us", pa.int64()),
        ("committed_us", pa.int64()),
        ("produce_latency_us", pa.int64()),
        ("end_to_end_latency_us", pa.int64()),
        ("commit_latency_us", pa.int64()),
        ("send_to_commit_latency_us", pa.int64()),
        ("deliveries", pa.int32()),
        ("duplicate", pa.bool_()),
        ("acks", pa.int8()),
        ("log_copies", pa.int32()),
        ("retained_out", pa.bool_()),
    ]
)
"""One row per message sent, in sending order. Absent events are null.

produce latency = acked - sent (also for failed sends, whose ``ack_error`` is not 0);
end-to-end latency = first delivery to a consumer - sent; commit latency (processing to
commit) = committed - first processing finished; send-to-commit latency = committed - sent,
the time until the message's offset was durably committed; ``duplicate``: delivered more than
once. A message never committed has no commit latencies at all, so the latency columns alone
cannot show what never finished: count the nulls (the summary's ``unfinished`` section does).

The last three columns audit the logs (see the module docstring): ``acks`` is the producer's
setting (-1 for all; null for a producer never declared with :meth:`MetricsRecorder.producer_acks`);
``log_copies`` how many times the message is in its partition's final leader log;
``retained_out`` whether, absent from it, it lies below that log's start offset (deleted by
retention: not lost). Both are null when the run reported no final logs.
"""

REQUESTS_SCHEMA: Final = pa.schema(
    [
        ("api", pa.string()),
        ("broker", pa.int32()),
        ("client", pa.string()),
        ("sent_us", pa.int64()),
        ("completed_us", pa.int64()),
        ("round_trip_us", pa.int64()),
        ("queue_time_us", pa.int64()),
        ("produce_purgatory_us", pa.int64()),
        ("fetch_purgatory_us", pa.int64()),
        ("error", pa.int16()),
    ]
)
"""One row per request whose response reached its client, in completion order.

``queue_time_us``: time in the broker's request queue; ``*_purgatory_us``: time the request
(or, for OffsetCommit, its append) waited in that purgatory; null if it never entered it.
"""

TIMESERIES_SCHEMA: Final = pa.schema(
    [
        ("time_us", pa.int64()),
        ("source", pa.string()),
        ("metric", pa.string()),
        ("value", pa.float64()),
    ]
)
"""Samples in long format: one row per (time, source, metric), e.g. ``broker-0``,
``produce_purgatory_watched``. Sampled by the probes registered with ``add_probe``."""


class MetricsRecorder:
    """Collects per-message, per-request and time-series measurements of one run, and the
    message ids of the final leader logs."""

    def __init__(self) -> None:
        self._producers = _Names()
        self._topics = _Names()
        self._acks: dict[int, int] = {}  # producer code -> acks
        self._sent_ids = _counts()
        self._sent_times = _counts()
        # Runs of sends by one producer to one topic: rows of (count, producer, topic).
        self._sent_runs = _counts()
        self._acked_ids = _counts()
        # Acknowledged batches: rows of (count, time, partition, base offset, error).
        self._acked_batches = array("q")
        self._delivered = _EventColumns()
        self._processed = _EventColumns()
        self._committed = _EventColumns()
        self._requests = _RequestColumns()
        self._series = _Names()  # "source\\0metric"
        self._sample_times = array("q")
        self._sample_series = array("i")
        self._sample_values = array("d")
        self._request_errors: dict[tuple[str, str], int] = {}
        self._warnings: list[str] = []
        self._probes: list[tuple[int, Callable[[], float]]] = []
        self._final_logs: dict[tuple[int, int], tuple[int, array[int]]] = {}
        self._at_end: list[Callable[[], None]] = []
        self._more_tables: dict[str, Callable[[pa.Table], pa.Table]] = {}

    # -- messages (hot path) -----------------------------------------------------------------

    def message_sent(self, message_id: int, t: int, producer: str, topic: str) -> None:
        """The application handed message ``message_id`` to ``producer`` at ``t``."""
        self._sent_ids.append(message_id)
        self._sent_times.append(t)
        self._sent_run(1, producer, topic)

    def messages_sent(
        self, message_ids: Sequence[int], times: Sequence[int], producer: str, topic: str
    ) -> None:
        """:meth:`message_sent` for many messages: ``message_ids[i]`` at ``times[i]``."""
        if len(message_ids) != len(times):
            raise ValueError(f"{len(message_ids)} message ids but {len(times)} times")
        _extend(self._sent_ids, message_ids)
        _extend(self._sent_times, times)
        self._sent_run(len(message_ids), producer, topic)

    def _sent_run(self, count: int, producer: str, topic: str) -> None:
        """``count`` more messages sent by ``producer`` to ``topic``: the last run grows, or a
        new one starts."""
        runs = self._sent_runs
        producer_code = self._producers.code(producer)
        topic_code = self._topics.code(topic)
        if len(runs) and runs[-2] == producer_code and runs[-1] == topic_code:
            runs[-3] += count
        else:
            runs.fromlist([count, producer_code, topic_code])

    def message_acked(
        self, message_id: int, t: int, partition: int, offset: int, error: int = 0
    ) -> None:
        """The producer got the final outcome of the message at ``t`` (``error`` 0: success).

        ``offset`` is -1 when the send failed.
        """
        self._acked_ids.append(message_id)
        self._acked_batches.fromlist([1, t, partition, offset, error])

    def messages_acked(
        self, message_ids: Sequence[int], t: int, partition: int, base_offset: int, error: int
    ) -> None:
        """:meth:`message_acked` for a batch: message ``message_ids[i]`` at offset
        ``base_offset + i`` (every offset -1 when ``base_offset`` is -1)."""
        _extend(self._acked_ids, message_ids)
        self._acked_batches.fromlist(
            [len(message_ids), t, partition, -1 if base_offset < 0 else base_offset, error]
        )

    def message_delivered(self, message_id: int, t: int) -> None:
        """A consumer received the message (again, if called before for it)."""
        self._delivered.add(message_id, t)

    def message_processed(self, message_id: int, t: int) -> None:
        """A consumer finished processing the message."""
        self._processed.add(message_id, t)

    def message_committed(self, message_id: int, t: int) -> None:
        """An offset commit covering the message succeeded (its response arrived at ``t``)."""
        self._committed.add(message_id, t)

    def messages_delivered(self, message_ids: Sequence[int], t: int) -> None:
        """:meth:`message_delivered` for each of ``message_ids``, all at ``t``."""
        self._delivered.add_at(message_ids, t)

    def messages_processed(self, message_ids: Sequence[int], times: Sequence[int]) -> None:
        """:meth:`message_processed` for each of ``message_ids``, at ``times`` (a column)."""
        self._processed.add_columns(message_ids, times)

    def messages_committed(self, message_ids: Sequence[int], t: int) -> None:
        """:meth:`message_committed` for each of ``message_ids``, all at ``t``."""
        self._committed.add_at(message_ids, t)

    # -- requests and samples ----------------------------------------------------------------

    def request_completed(
        self,
        api: str,
        broker: int,
        client: str,
        sent: int,
        completed: int,
        *,
        queue_time: int = 0,
        produce_purgatory: int | None = None,
        fetch_purgatory: int | None = None,
        error: int = 0,
    ) -> None:
        """A response to an ``api`` request (Kafka's name: Produce, Fetch, OffsetCommit...)
        sent at ``sent`` by ``client`` to ``broker`` reached the client at ``completed``."""
        self._requests.add(
            api, broker, client, sent, completed, queue_time, produce_purgatory,
            fetch_purgatory, error,
        )  # fmt: skip
        if error:
            key = (client, api)
            self._request_errors[key] = self._request_errors.get(key, 0) + 1

    def request_errors(self, client: str, api: str) -> int:
        """How many ``api`` responses that reached ``client`` so far carried an error."""
        return self._request_errors.get((client, api), 0)

    def sample(self, t: int, source: str, metric: str, value: float) -> None:
        """One time-series point."""
        self._sample_times.append(t)
        self._sample_series.append(self._series.code(f"{source}\0{metric}"))
        self._sample_values.append(float(value))

    def add_probe(self, source: str, metric: str, probe: Callable[[], float]) -> None:
        """Sample ``probe()`` as (``source``, ``metric``) at every :meth:`sample_probes`."""
        self._probes.append((self._series.code(f"{source}\0{metric}"), probe))

    def sample_probes(self, t: int) -> None:
        """Record every probe's current value at time ``t`` (the runner calls this)."""
        for series, probe in self._probes:
            self._sample_times.append(t)
            self._sample_series.append(series)
            self._sample_values.append(float(probe()))

    def warn(self, message: str) -> None:
        """Something about the run its reader must know (e.g. a fault that matched nothing);
        the summary lists the warnings in the order given."""
        self._warnings.append(message)

    @property
    def warnings(self) -> list[str]:
        """The warnings given so far (a copy)."""
        return list(self._warnings)

    # -- the end of the run: the final logs ----------------------------------------------------

    def producer_acks(self, producer: str, acks: int) -> None:
        """Producer ``producer`` sends with ``acks`` (-1 for all, 0 or 1): the ``acks`` of
        its messages."""
        self._acks[self._producers.code(producer)] = acks

    def at_run_end(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` when the run ends (:meth:`run_ended`), e.g. to report the final
        logs; callbacks run in the order given."""
        self._at_end.append(callback)

    def run_ended(self) -> None:
        """The engine stopped: call the :meth:`at_run_end` callbacks, then let go of them and
        of the probes, so that the simulated world can be freed before the tables are built
        (the runner calls this once, before :meth:`tables`)."""
        for callback in self._at_end:
            callback()
        self._at_end.clear()
        self._probes.clear()

    def final_log(
        self, topic: str, partition: int, log_start_offset: int, message_ids: Sequence[int]
    ) -> None:
        """The final leader log of ``topic``-``partition`` holds ``message_ids`` (in offset
        order, a message appended twice twice) from ``log_start_offset`` on; what lies below
        it was deleted by retention. Reported once per partition of the producers' topics."""
        self._final_logs[(self._topics.code(topic), partition)] = (
            log_start_offset,
            array("q", message_ids),
        )

    # -- tables --------------------------------------------------------------------------------

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """The (messages, requests, timeseries) tables; see the schemas for their columns.
        The recorder keeps its columns: a second call gives equal tables."""
        return self._messages_table(False), self._requests.table(), self._timeseries_table()

    def add_table(self, name: str, build: Callable[[pa.Table], pa.Table]) -> None:
        """A table besides the three, built at the end from the messages table by
        ``build(messages)`` (e.g. the consume proxy's, :mod:`sim.output.proxy_recorder`)."""
        self._more_tables[name] = build

    def more_tables(self, messages: pa.Table) -> dict[str, pa.Table]:
        """The tables given to :meth:`add_table`, by name, built from ``messages`` (the
        messages table of :meth:`tables`)."""
        return {name: build(messages) for name, build in self._more_tables.items()}

    def take_tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """:meth:`tables`, letting go of each of the recorder's columns as soon as the tables
        no longer need it, so that building them costs little memory beyond the tables
        themselves; the recorder holds no measurements afterwards (the runner's way: it has
        no use for the recorder once the tables exist)."""
        messages = self._messages_table(True)
        return messages, self._requests.table(release=True), self._timeseries_table()

    def _messages_table(self, release: bool) -> pa.Table:
        """The messages table, built from the columns with numpy, one column at a time and
        each event column in slices of :data:`_SLICE` events: besides the finished Arrow
        columns it holds a few arrays of 8 bytes per message at once, never a Python object
        per message and field, and (with ``release``) the recorder's columns go as they are
        used."""
        sent_ids = _taken(self, "_sent_ids", np.int64, release)
        order: np.ndarray[Any, Any] | None = None
        if np.all(sent_ids[1:] > sent_ids[:-1]):  # the usual case: sent once, in id order
            ids, sorter = sent_ids, None
        else:
            _, first_sends = np.unique(sent_ids, return_index=True)
            order = np.sort(first_sends)  # one row per message, in sending order
            ids = sent_ids[order]
            sorter = np.argsort(ids, kind="stable")
        del sent_ids
        n = len(ids)

        def rows_of(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
            return values if order is None else values[order]

        sent = rows_of(_taken(self, "_sent_times", np.int64, release))
        runs = _taken(self, "_sent_runs", np.int64, release).reshape(-1, 3)
        topics = rows_of(np.repeat(runs[:, 2].astype(np.int32), runs[:, 0]))
        producers = rows_of(np.repeat(runs[:, 1].astype(np.int32), runs[:, 0]))
        del runs
        never = np.zeros(n, np.bool_)
        # The acks first: the recorder's largest columns go before the first Arrow columns
        # are built (the peak of a long run's build is its start).
        columns: dict[str, pa.Array] = {}
        first = _first_event_index(ids, sorter, _taken(self, "_acked_ids", np.int64, release))
        batches = _taken(self, "_acked_batches", np.int64, release).reshape(-1, 5)
        batch, position = _batch_of(first, batches[:, 0])
        del first
        acked = _gather(batch, batches[:, 1])
        columns["acked_us"] = _arrow(acked, pa.int64())
        columns["produce_latency_us"] = _arrow(_difference(acked, (sent, never)), pa.int64())
        del acked
        ack_error = _gather(batch, batches[:, 4])
        columns["ack_error"] = _arrow(ack_error, pa.int16())
        del ack_error
        partition = _gather(batch, batches[:, 2])
        columns["partition"] = _arrow(partition, pa.int32())
        base, no_ack = _gather(batch, batches[:, 3])
        del batch, batches
        # A batch's message i is at base + i; a failed send has none (base -1).
        offset = np.where(base < 0, base, base + position), no_ack | (base < 0)
        del base, position
        columns["offset"] = _arrow(offset, pa.int64())
        acks = np.array([self._acks.get(code, 127) for code in range(len(self._producers))])
        acks_of = acks[producers] if len(acks) else np.zeros(n, np.int64)
        columns["acks"] = _owned(acks_of, pa.int8(), acks_of == 127)
        del acks_of
        columns["message_id"] = _owned(ids)
        columns["producer"] = self._producers.column(producers)
        columns["sent_us"] = _owned(sent)
        del producers
        copies, retained_out = self._log_audit(ids, sorter, sent, topics, partition, offset)
        if release:
            self._final_logs = {}
        columns["topic"] = self._topics.column(topics)
        del topics, partition, offset  # the audit was their last use
        columns["log_copies"] = _arrow(copies, pa.int32())
        columns["retained_out"] = _owned(retained_out[0], pa.bool_(), retained_out[1])
        del copies, retained_out
        delivered, deliveries = self._delivered.first_times(ids, sorter, release)
        columns["delivered_us"] = _arrow(delivered, pa.int64())
        columns["end_to_end_latency_us"] = _arrow(_difference(delivered, (sent, never)), pa.int64())
        columns["deliveries"] = _owned(deliveries, pa.int32())
        columns["duplicate"] = _owned(deliveries > 1)
        del delivered, deliveries
        processed, _ = self._processed.first_times(ids, sorter, release)
        columns["processed_us"] = _arrow(processed, pa.int64())
        committed, _ = self._committed.first_times(ids, sorter, release)
        columns["committed_us"] = _arrow(committed, pa.int64())
        columns["commit_latency_us"] = _arrow(_difference(committed, processed), pa.int64())
        del processed
        columns["send_to_commit_latency_us"] = _arrow(
            _difference(committed, (sent, never)), pa.int64()
        )
        del committed
        return pa.Table.from_pydict(
            {field.name: columns[field.name] for field in MESSAGES_SCHEMA}, schema=MESSAGES_SCHEMA
        )

    def _log_audit(
        self,
        ids: np.ndarray[Any, np.dtype[np.int64]],
        sorter: np.ndarray[Any, np.dtype[np.intp]] | None,
        sent: np.ndarray[Any, np.dtype[np.int64]],
        topics: np.ndarray[Any, np.dtype[np.int32]],
        partition: Column,
        offset: Column,
    ) -> tuple[Column, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
        """The ``log_copies`` and ``retained_out`` columns (all null without final logs).

        A message absent from its partition's final leader log was deleted by retention when
        its offset lies below the log start offset. A message sent with acks=0 has no known
        offset: it counts as deleted by retention when the log start offset moved and it was
        sent before every message the log still holds (deleted or lost cannot be told apart
        there, and retention deletes the oldest)."""
        n = len(ids)
        if not self._final_logs:
            nulls = np.ones(n, np.bool_)
            return (np.zeros(n, np.int64), nulls), (np.zeros(n, np.bool_), nulls)
        logged = np.concatenate(
            [np.frombuffer(log_ids, np.int64) for _, log_ids in self._final_logs.values()]
        )
        _, rows = _event_rows(ids, sorter, logged)
        copies = np.bincount(rows, minlength=n).astype(np.int64, copy=False)
        del logged, rows
        retained_out = np.zeros(n, np.bool_)
        absent = (copies == 0) & ~partition[1]
        for (topic, number), (start, _) in self._final_logs.items():
            if start == 0:
                continue
            in_log = (topics == topic) & (partition[0] == number) & ~partition[1]
            below = offset[0] < start
            present_sent = sent[in_log & (copies > 0)]
            first_present = int(present_sent.min()) if len(present_sent) else _NEVER
            unknown = offset[1] & (sent < first_present)
            retained_out |= in_log & absent & np.where(offset[1], unknown, below)
        return (copies, np.zeros(n, np.bool_)), (retained_out, np.zeros(n, np.bool_))

    def _timeseries_table(self) -> pa.Table:
        series = np.frombuffer(self._sample_series, np.int32)
        names = [name.split("\0") for name in self._series.names]
        return pa.Table.from_pydict(
            {
                "time_us": _owned(np.frombuffer(self._sample_times, np.int64)),
                "source": pa.array([s for s, _ in names], pa.string()).take(series),
                "metric": pa.array([m for _, m in names], pa.string()).take(series),
                "value": _owned(np.frombuffer(self._sample_values, np.float64)),
            },
            schema=TIMESERIES_SCHEMA,
        )


_NEVER: Final = 2**63 - 1


class _Names:
    """Interned names (producers, topics, series): each name's code is its index."""

    __slots__ = ("codes", "names")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.codes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.names)

    def code(self, name: str) -> int:
        code = self.codes.get(name)
        if code is None:
            code = self.codes[name] = len(self.names)
            self.names.append(name)
        return code

    def column(self, codes: np.ndarray[Any, Any]) -> pa.Array:
        """The string column of ``codes``."""
        return pa.array(self.names, pa.string()).take(pa.array(codes))


class _RequestColumns:
    """The requests table's inputs as columns: no Python object per request. A request is
    two rows appended in one call each: its codes (api, broker, client, error) and its times
    (sent, completed, queue time, produce and fetch purgatory; -1: never in that purgatory)."""

    __slots__ = ("api_names", "client_names", "codes", "times")

    def __init__(self) -> None:
        self.api_names = _Names()
        self.client_names = _Names()
        self.codes = array("i")
        self.times = array("q")

    def add(
        self,
        api: str,
        broker: int,
        client: str,
        sent: int,
        completed: int,
        queue_time: int,
        produce_purgatory: int | None,
        fetch_purgatory: int | None,
        error: int,
    ) -> None:
        self.codes.fromlist(
            [self.api_names.code(api), broker, self.client_names.code(client), error]
        )
        self.times.fromlist([
            sent, completed, queue_time,
            -1 if produce_purgatory is None else produce_purgatory,
            -1 if fetch_purgatory is None else fetch_purgatory,
        ])  # fmt: skip

    def table(self, *, release: bool = False) -> pa.Table:
        """The requests table; with ``release`` the columns are emptied (their memory goes
        as soon as this returns)."""
        codes = _taken(self, "codes", np.int32, release).reshape(-1, 4)
        times = _taken(self, "times", np.int64, release).reshape(-1, 5)

        def code(i: int) -> np.ndarray[Any, Any]:
            return np.ascontiguousarray(codes[:, i])

        def time(i: int) -> np.ndarray[Any, Any]:
            return np.ascontiguousarray(times[:, i])

        columns = {
            "api": self.api_names.column(code(0)),
            "broker": _owned(code(1)),
            "client": self.client_names.column(code(2)),
            "error": _owned(code(3), pa.int16()),
            "queue_time_us": _owned(time(2)),
        }
        for i, name in ((3, "produce_purgatory_us"), (4, "fetch_purgatory_us")):
            purgatory = time(i)  # -1: never in it
            columns[name] = _owned(purgatory, nulls=purgatory < 0)
            del purgatory
        sent, completed = time(0), time(1)
        columns["sent_us"], columns["completed_us"] = _owned(sent), _owned(completed)
        columns["round_trip_us"] = _owned(completed - sent)
        del sent, completed
        return pa.Table.from_pydict(
            {field.name: columns[field.name] for field in REQUESTS_SCHEMA}, schema=REQUESTS_SCHEMA
        )


class _EventColumns:
    """One kind of per-message event (delivered, processed, committed) as two columns."""

    __slots__ = ("ids", "times")

    def __init__(self) -> None:
        self.ids = _counts()
        self.times = _counts()

    def add(self, message_id: int, t: int) -> None:
        self.ids.append(message_id)
        self.times.append(t)

    def add_at(self, message_ids: Sequence[int], t: int) -> None:
        """Many messages, all at ``t``."""
        _extend(self.ids, message_ids)
        self.times.fromlist([t] * len(message_ids))

    def first_times(
        self,
        ids: np.ndarray[Any, np.dtype[np.int64]],
        sorter: np.ndarray[Any, np.dtype[np.intp]] | None,
        release: bool = False,
    ) -> tuple[Column, np.ndarray[Any, np.dtype[np.int64]]]:
        """Per row of ``ids`` (see :func:`_event_rows`): the time of its first event (in
        the order recorded; null without one) and how many events it had. With ``release``
        the columns are emptied (their memory goes as soon as this returns)."""
        event_ids = _taken(self, "ids", np.int64, release)
        times = _taken(self, "times", np.int64, release)
        counts = np.zeros(len(ids), np.int64)
        first = _first_event_index(ids, sorter, event_ids, counts)
        return _gather(first, times), counts

    def add_columns(self, message_ids: Sequence[int], times: Sequence[int]) -> None:
        """``message_ids[i]`` at ``times[i]``."""
        if len(message_ids) != len(times):
            raise ValueError(f"{len(message_ids)} message ids but {len(times)} times")
        _extend(self.ids, message_ids)
        _extend(self.times, times)


def _counts() -> array[int]:
    """A column of ints never negative (message ids, times, counts, codes): ``array('Q')``,
    read back as int64 (:func:`_taken`). CPython stores an item of an unsigned array with
    ``PyLong_AsUnsignedLongLong``, one of a signed array through ``PyArg_Parse`` (about four
    times the instructions); a negative value raises OverflowError."""
    return array("Q")


def _extend(column: array[int], values: Sequence[int]) -> None:
    """Append ``values`` to ``column``; from a list in one pass (``fromlist`` sizes the
    column once, where ``extend`` grows it per item), any other sequence item by item (an
    ``array`` only extends one of its own type code)."""
    if isinstance(values, list):
        column.fromlist(values)
    else:
        column.extend(iter(values))


def _taken(owner: object, name: str, kind: type[np.generic], release: bool) -> np.ndarray[Any, Any]:
    """``owner``'s ``array`` attribute ``name`` as a numpy view; with ``release`` the owner
    gets an empty array instead (the memory goes when the view does)."""
    column: array[Any] = getattr(owner, name)
    if release:
        setattr(owner, name, array(column.typecode))
    return np.frombuffer(column, kind)


Column = tuple["np.ndarray[Any, np.dtype[np.int64]]", "np.ndarray[Any, np.dtype[np.bool_]]"]
"""A nullable integer column: (values, null mask)."""


def _event_rows(
    ids: np.ndarray[Any, np.dtype[np.int64]],
    sorter: np.ndarray[Any, np.dtype[np.intp]] | None,
    events: np.ndarray[Any, np.dtype[np.int64]],
) -> tuple[np.ndarray[Any, np.dtype[np.intp]], np.ndarray[Any, np.dtype[np.intp]]]:
    """The events (message ids) of ``events`` whose message has a row in ``ids`` (``sorter``
    sorts ``ids``; None when they are sorted): their indices, in recorded order, and their
    rows."""
    if len(ids) == 0 or len(events) == 0:
        empty = np.zeros(0, np.intp)
        return empty, empty
    found = np.searchsorted(ids, events, sorter=sorter).clip(max=len(ids) - 1)
    rows = found if sorter is None else sorter[found]
    known = np.flatnonzero(ids[rows] == events)
    return known, rows[known]


_SLICE = 1 << 16
"""Events matched to their messages at once when the messages table is built."""


def _first_event_index(
    ids: np.ndarray[Any, np.dtype[np.int64]],
    sorter: np.ndarray[Any, np.dtype[np.intp]] | None,
    events: np.ndarray[Any, np.dtype[np.int64]],
    counts: np.ndarray[Any, np.dtype[np.int64]] | None = None,
) -> np.ndarray[Any, np.dtype[np.intp]]:
    """Per row of ``ids``, the index in ``events`` (message ids, in recorded order) of its
    first event, -1 without one; with ``counts``, each row's number of events is added to it.
    Works through ``events`` in slices of :data:`_SLICE`, so that its temporaries do not
    grow with the run."""
    first = np.full(len(ids), -1, np.intp)
    for start in range(0, len(events), _SLICE):
        known, rows = _event_rows(ids, sorter, events[start : start + _SLICE])
        if counts is not None:
            np.add.at(counts, rows, 1)
        unique_rows, at = np.unique(rows, return_index=True)
        fresh = first[unique_rows] < 0
        first[unique_rows[fresh]] = start + known[at[fresh]]
    return first


def _batch_of(
    first: np.ndarray[Any, np.dtype[np.intp]], counts: np.ndarray[Any, np.dtype[np.int64]]
) -> tuple[np.ndarray[Any, np.dtype[np.intp]], np.ndarray[Any, np.dtype[np.int64]]]:
    """Per row, the batch (of ``counts`` consecutive events each) holding event ``first``
    and the event's position in it; -1 and 0 where ``first`` is -1."""
    ends = np.cumsum(counts)
    batch = np.searchsorted(ends, first, side="right")
    batch[first < 0] = -1
    position = first - (ends - counts)[batch] if len(counts) else np.zeros(len(first), np.int64)
    position[first < 0] = 0
    return batch, position


def _gather(
    first: np.ndarray[Any, np.dtype[np.intp]], values: np.ndarray[Any, np.dtype[np.int64]]
) -> Column:
    """Per row, ``values`` at its :func:`_first_event_index` entry; null where it is -1."""
    nulls = first < 0
    column = values[np.where(nulls, 0, first)] if len(values) else np.zeros(len(first), np.int64)
    column[nulls] = 0
    return column, nulls


def _difference(later: Column, earlier: Column) -> Column:
    return later[0] - earlier[0], later[1] | earlier[1]


def _arrow(column: Column, kind: pa.DataType) -> pa.Array:
    values, nulls = column
    return _owned(values, kind, nulls)


def _owned(
    values: np.ndarray[Any, Any], kind: pa.DataType | None = None, nulls: Any = None
) -> pa.Array:
    """``values`` (with ``nulls`` masked) as an Arrow array in Arrow's own memory: a copy.

    ``pa.array`` would share the numpy buffer, and the Parquet writer then costs memory that
    grows with the table's length, not with a row group's (measured: writing 320,000 rows of
    shared int64 columns peaked 36 MiB above the table, of owned ones 13 MiB); a long run's
    tables must be cheap to write."""
    return pa.concat_arrays([pa.array(values, type=kind, mask=nulls)])

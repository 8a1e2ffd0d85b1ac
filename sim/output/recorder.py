"""What a run measures: the recorder the cluster and clients report to.

Every method on the hot path appends to columns (``array('q')`` for integers, lists for names),
a batch method extends them in bulk; no per-message object is kept. The tables are built once,
at the end (:meth:`MetricsRecorder.tables`). Times are virtual microseconds
(``Simulator.now``).

Messages are identified by an integer ``message_id`` that the producer assigns and that
travels with the record, so a consumer can report it. Per message the recorder keeps the
first time of each event; ``message_delivered`` may be called again for the same message
(a redelivery after a restart, or a producer retry that appended it twice): that makes the
message a duplicate.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["MESSAGES_SCHEMA", "REQUESTS_SCHEMA", "TIMESERIES_SCHEMA", "MetricsRecorder"]

MESSAGES_SCHEMA = pa.schema(
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
    ]
)
"""One row per message sent, in sending order. Absent events are null.

produce latency = acked - sent (also for failed sends, whose ``ack_error`` is not 0);
end-to-end latency = first delivery to a consumer - sent; commit latency (processing to
commit) = committed - first processing finished; send-to-commit latency = committed - sent,
the time until the message's offset was durably committed; ``duplicate``: delivered more than
once. A message never committed has no commit latencies at all, so the latency columns alone
cannot show what never finished: count the nulls (the summary's ``unfinished`` section does).
"""

REQUESTS_SCHEMA = pa.schema(
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

TIMESERIES_SCHEMA = pa.schema(
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
    """Collects per-message, per-request and time-series measurements of one run."""

    def __init__(self) -> None:
        self._sent_ids = array("q")
        self._sent_times = array("q")
        self._sent_producers: list[str] = []
        self._sent_topics: list[str] = []
        self._acked_ids = array("q")
        self._acked_times = array("q")
        self._acked_partitions = array("q")
        self._acked_offsets = array("q")
        self._acked_errors = array("q")
        self._delivered = _EventColumns()
        self._processed = _EventColumns()
        self._committed = _EventColumns()
        self._requests: list[tuple[str, int, str, int, int, int, int | None, int | None, int]] = []
        self._samples: list[tuple[int, str, str, float]] = []
        self._request_errors: dict[tuple[str, str], int] = {}
        self._warnings: list[str] = []
        self._probes: list[tuple[str, str, Callable[[], float]]] = []

    # -- messages (hot path) -----------------------------------------------------------------

    def message_sent(self, message_id: int, t: int, producer: str, topic: str) -> None:
        """The application handed message ``message_id`` to ``producer`` at ``t``."""
        self._sent_ids.append(message_id)
        self._sent_times.append(t)
        self._sent_producers.append(producer)
        self._sent_topics.append(topic)

    def messages_sent(
        self, message_ids: Sequence[int], times: Sequence[int], producer: str, topic: str
    ) -> None:
        """:meth:`message_sent` for many messages: ``message_ids[i]`` at ``times[i]``."""
        n = len(message_ids)
        self._sent_ids.extend(message_ids)
        self._sent_times.extend(times)
        self._sent_producers.extend([producer] * n)
        self._sent_topics.extend([topic] * n)

    def message_acked(
        self, message_id: int, t: int, partition: int, offset: int, error: int = 0
    ) -> None:
        """The producer got the final outcome of the message at ``t`` (``error`` 0: success).

        ``offset`` is -1 when the send failed.
        """
        self._acked_ids.append(message_id)
        self._acked_times.append(t)
        self._acked_partitions.append(partition)
        self._acked_offsets.append(offset)
        self._acked_errors.append(error)

    def messages_acked(
        self, message_ids: Sequence[int], t: int, partition: int, base_offset: int, error: int
    ) -> None:
        """:meth:`message_acked` for a batch: message ``message_ids[i]`` at offset
        ``base_offset + i`` (every offset -1 when ``base_offset`` is -1)."""
        n = len(message_ids)
        self._acked_ids.extend(message_ids)
        self._acked_times.extend(array("q", (t,)) * n)
        self._acked_partitions.extend(array("q", (partition,)) * n)
        if base_offset < 0:
            self._acked_offsets.extend(array("q", (-1,)) * n)
        else:
            self._acked_offsets.extend(range(base_offset, base_offset + n))
        self._acked_errors.extend(array("q", (error,)) * n)

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
        self._requests.append(
            (api, broker, client, sent, completed, queue_time, produce_purgatory,
             fetch_purgatory, error)
        )  # fmt: skip
        if error:
            key = (client, api)
            self._request_errors[key] = self._request_errors.get(key, 0) + 1

    def request_errors(self, client: str, api: str) -> int:
        """How many ``api`` responses that reached ``client`` so far carried an error."""
        return self._request_errors.get((client, api), 0)

    def sample(self, t: int, source: str, metric: str, value: float) -> None:
        """One time-series point."""
        self._samples.append((t, source, metric, float(value)))

    def add_probe(self, source: str, metric: str, probe: Callable[[], float]) -> None:
        """Sample ``probe()`` as (``source``, ``metric``) at every :meth:`sample_probes`."""
        self._probes.append((source, metric, probe))

    def sample_probes(self, t: int) -> None:
        """Record every probe's current value at time ``t`` (the runner calls this)."""
        append = self._samples.append
        for source, metric, probe in self._probes:
            append((t, source, metric, float(probe())))

    def warn(self, message: str) -> None:
        """Something about the run its reader must know (e.g. a fault that matched nothing);
        the summary lists the warnings in the order given."""
        self._warnings.append(message)

    @property
    def warnings(self) -> list[str]:
        """The warnings given so far (a copy)."""
        return list(self._warnings)

    # -- tables --------------------------------------------------------------------------------

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """The (messages, requests, timeseries) tables; see the schemas for their columns."""
        return self._messages_table(), self._requests_table(), self._timeseries_table()

    def _messages_table(self) -> pa.Table:
        """The messages table, built from the columns with numpy: its peak memory is a few
        arrays of 8 bytes per message, not a Python object per message and field."""
        sent_ids = np.frombuffer(self._sent_ids, np.int64)
        _, first_sends = np.unique(sent_ids, return_index=True)
        order = np.sort(first_sends)  # one row per message, in sending order
        ids = sent_ids[order]
        n = len(ids)
        sorter = np.argsort(ids, kind="stable")
        acked_rows, acked_first = _first_events(ids, sorter, self._acked_ids)
        sent = np.frombuffer(self._sent_times, np.int64)[order]
        acked = _at_rows(n, acked_rows, np.frombuffer(self._acked_times, np.int64)[acked_first])
        partition = _at_rows(
            n, acked_rows, np.frombuffer(self._acked_partitions, np.int64)[acked_first]
        )
        offsets = np.frombuffer(self._acked_offsets, np.int64)[acked_first]
        offset = _at_rows(n, acked_rows[offsets >= 0], offsets[offsets >= 0])
        ack_error = _at_rows(
            n, acked_rows, np.frombuffer(self._acked_errors, np.int64)[acked_first]
        )
        delivered, deliveries = self._delivered.first_times(ids, sorter)
        processed, _ = self._processed.first_times(ids, sorter)
        committed, _ = self._committed.first_times(ids, sorter)
        sent_column = (sent, np.zeros(n, np.bool_))
        columns = {
            "message_id": pa.array(ids),
            "producer": pa.array(self._sent_producers).take(pa.array(order)),
            "topic": pa.array(self._sent_topics).take(pa.array(order)),
            "partition": _arrow(partition, pa.int32()),
            "offset": _arrow(offset, pa.int64()),
            "sent_us": pa.array(sent),
            "acked_us": _arrow(acked, pa.int64()),
            "ack_error": _arrow(ack_error, pa.int16()),
            "delivered_us": _arrow(delivered, pa.int64()),
            "processed_us": _arrow(processed, pa.int64()),
            "committed_us": _arrow(committed, pa.int64()),
            "produce_latency_us": _arrow(_difference(acked, sent_column), pa.int64()),
            "end_to_end_latency_us": _arrow(_difference(delivered, sent_column), pa.int64()),
            "commit_latency_us": _arrow(_difference(committed, processed), pa.int64()),
            "send_to_commit_latency_us": _arrow(_difference(committed, sent_column), pa.int64()),
            "deliveries": pa.array(deliveries, pa.int32()),
            "duplicate": pa.array(deliveries > 1),
        }
        return pa.Table.from_pydict(columns, schema=MESSAGES_SCHEMA)

    def _requests_table(self) -> pa.Table:
        rows = self._requests
        names = [field.name for field in REQUESTS_SCHEMA]
        columns: dict[str, list[object]] = {name: [] for name in names}
        for api, broker, client, sent, completed, queue, produce, fetch, error in rows:
            columns["api"].append(api)
            columns["broker"].append(broker)
            columns["client"].append(client)
            columns["sent_us"].append(sent)
            columns["completed_us"].append(completed)
            columns["round_trip_us"].append(completed - sent)
            columns["queue_time_us"].append(queue)
            columns["produce_purgatory_us"].append(produce)
            columns["fetch_purgatory_us"].append(fetch)
            columns["error"].append(error)
        return pa.Table.from_pydict(columns, schema=REQUESTS_SCHEMA)

    def _timeseries_table(self) -> pa.Table:
        columns: dict[str, list[object]] = {field.name: [] for field in TIMESERIES_SCHEMA}
        for t, source, metric, value in self._samples:
            columns["time_us"].append(t)
            columns["source"].append(source)
            columns["metric"].append(metric)
            columns["value"].append(value)
        return pa.Table.from_pydict(columns, schema=TIMESERIES_SCHEMA)


class _EventColumns:
    """One kind of per-message event (delivered, processed, committed) as two columns."""

    __slots__ = ("ids", "times")

    def __init__(self) -> None:
        self.ids = array("q")
        self.times = array("q")

    def add(self, message_id: int, t: int) -> None:
        self.ids.append(message_id)
        self.times.append(t)

    def add_at(self, message_ids: Sequence[int], t: int) -> None:
        """Many messages, all at ``t``."""
        self.ids.extend(message_ids)
        self.times.extend(array("q", (t,)) * len(message_ids))

    def first_times(
        self, ids: np.ndarray[Any, np.dtype[np.int64]], sorter: np.ndarray[Any, np.dtype[np.intp]]
    ) -> tuple[Column, np.ndarray[Any, np.dtype[np.int64]]]:
        """Per row of ``ids`` (see :func:`_first_events`): the time of its first event (in
        the order recorded; null without one) and how many events it had."""
        known, rows = _event_rows(ids, sorter, self.ids)
        unique_rows, first = np.unique(rows, return_index=True)
        times = np.frombuffer(self.times, np.int64)[known[first]]
        counts = np.bincount(rows, minlength=len(ids))
        return _at_rows(len(ids), unique_rows, times), counts

    def add_columns(self, message_ids: Sequence[int], times: Sequence[int]) -> None:
        """``message_ids[i]`` at ``times[i]``."""
        if len(message_ids) != len(times):
            raise ValueError(f"{len(message_ids)} message ids but {len(times)} times")
        self.ids.extend(message_ids)
        self.times.extend(times)


Column = tuple["np.ndarray[Any, np.dtype[np.int64]]", "np.ndarray[Any, np.dtype[np.bool_]]"]
"""A nullable integer column: (values, null mask)."""


def _event_rows(
    ids: np.ndarray[Any, np.dtype[np.int64]],
    sorter: np.ndarray[Any, np.dtype[np.intp]],
    event_ids: array[int],
) -> tuple[np.ndarray[Any, np.dtype[np.intp]], np.ndarray[Any, np.dtype[np.intp]]]:
    """The events of ``event_ids`` whose message has a row in ``ids`` (``sorter`` sorts
    ``ids``): their indices, in recorded order, and their rows."""
    events = np.frombuffer(event_ids, np.int64)
    if len(ids) == 0 or len(events) == 0:
        empty = np.zeros(0, np.intp)
        return empty, empty
    rows = sorter[np.searchsorted(ids, events, sorter=sorter).clip(max=len(ids) - 1)]
    known = np.flatnonzero(ids[rows] == events)
    return known, rows[known]


def _first_events(
    ids: np.ndarray[Any, np.dtype[np.int64]],
    sorter: np.ndarray[Any, np.dtype[np.intp]],
    event_ids: array[int],
) -> tuple[np.ndarray[Any, np.dtype[np.intp]], np.ndarray[Any, np.dtype[np.intp]]]:
    """Each row of ``ids`` that has an event in ``event_ids`` once, and the index of its
    first event."""
    known, rows = _event_rows(ids, sorter, event_ids)
    unique_rows, first = np.unique(rows, return_index=True)
    return unique_rows, known[first]


def _at_rows(
    n: int, rows: np.ndarray[Any, np.dtype[np.intp]], values: np.ndarray[Any, Any]
) -> Column:
    """A column of ``n`` rows: ``values`` at ``rows``, null elsewhere."""
    column = np.zeros(n, np.int64)
    column[rows] = values
    nulls = np.ones(n, np.bool_)
    nulls[rows] = False
    return column, nulls


def _difference(later: Column, earlier: Column) -> Column:
    return later[0] - earlier[0], later[1] | earlier[1]


def _arrow(column: Column, kind: pa.DataType) -> pa.Array:
    values, nulls = column
    return pa.array(values, type=kind, mask=nulls)



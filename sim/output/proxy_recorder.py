"""What a run of the consume proxy measures: per record, its deliveries and how they ended.

A run with ``[proxy]`` has a fourth table, ``proxy`` (:data:`PROXY_SCHEMA`): one row per
message sent to the proxy's topic, in sending order. The proxy's servers and readers report
events by message id to a :class:`ProxyRecorder` (columns, as the run's
:class:`~sim.output.MetricsRecorder` keeps them: no object per record); when the run ends the
servers report each partition's final state map (:meth:`ProxyRecorder.final_states`), and
the table joins the events to the messages table's rows.

Where the events come from: a server counts each hand-out (a Read completing with the
record), each acknowledgement and cancel it accepted, each record it archived (the delivery
count limit) and each data-topic commit that succeeded (the OffsetCommit's answer); a reader
reports each record it processed to completion (acknowledged or not) and each acknowledgement
or cancel refused because the delivery had ended. From these, per record:

* ``expired``, the deliveries whose lease ran out: every delivery ends acknowledged,
  cancelled, by its lease expiring, or is still pending at the end, so ``expired`` is
  ``deliveries`` - acknowledged (0 or 1) - ``cancels`` - pending at the end (0 or 1);
* a *duplicate* is a completion after the first (``completions - 1``): the record was
  processed to completion by more than one reader, which only a delivery whose lease expired
  can cause (a cancelled delivery is not completed), so duplicates <= expired leases.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sim.output.recorder import _arrow, _difference, _EventColumns, _owned

__all__ = ["PROXY_SCHEMA", "STATES", "ProxyRecorder"]

PROXY_SCHEMA = pa.schema(
    [
        ("message_id", pa.int64()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("sent_us", pa.int64()),
        ("deliveries", pa.int32()),
        ("completions", pa.int32()),
        ("cancels", pa.int32()),
        ("expired", pa.int32()),
        ("late_answers", pa.int32()),
        ("archived", pa.bool_()),
        ("acknowledged_us", pa.int64()),
        ("committed_us", pa.int64()),
        ("send_to_ack_latency_us", pa.int64()),
        ("ack_to_commit_latency_us", pa.int64()),
        ("send_to_commit_latency_us", pa.int64()),
        ("state", pa.string()),
    ]
)
"""One row per message sent to the proxy's topic, in sending order; absent events are null.

``partition`` and ``offset`` are where the producer's acknowledgement put the message (null
if it never got one). ``deliveries``: how many times a Read handed it out; ``completions``:
how many readers processed it to completion; ``cancels``: deliveries given back with Cancel;
``expired``: deliveries whose lease ran out (see the module docstring); ``late_answers``:
acknowledgements and cancels refused because the delivery had ended; ``archived``: the
delivery-count limit archived it. ``acknowledged_us``: the proxy accepted its acknowledgement;
``committed_us``: the OffsetCommit that moved the proxy group's data-topic position past it
was answered without error. Latencies: sent to acknowledged, acknowledged to committed, sent
to committed. ``state``: the record's state at the end of the run, one of :data:`STATES`
(null without an offset).
"""

STATES = ("committed", "acknowledged", "archived", "pending", "available", "unfetched")
"""The final states of a record: below its partition's commit position (``committed``: the
proxy committed it; its ``committed_us`` is null while that commit is in flight); one of the
proxy's states in between; past what the proxy fetched (``unfetched``)."""

_COMMITTED, _PENDING, _UNFETCHED = (STATES.index(s) for s in ("committed", "pending", "unfetched"))


class ProxyRecorder:
    """Collects the events of the consume proxy serving ``topic`` (see the module doc)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._handed_out = _EventColumns()
        self._acknowledged = _EventColumns()
        self._cancelled = _EventColumns()
        self._archived = _EventColumns()
        self._completed = _EventColumns()
        self._refused = _EventColumns()
        self._committed = _EventColumns()
        # partition -> (commit position, end of what was fetched, state codes in between)
        self._final: dict[int, tuple[int, int, array[int]]] = {}

    # -- a server's events ---------------------------------------------------------------------

    def handed_out(self, message_id: int, t: int) -> None:
        """A Read handed the message's record out at ``t`` (a new delivery)."""
        self._handed_out.add(message_id, t)

    def acknowledged(self, message_id: int, t: int) -> None:
        """The proxy accepted an acknowledgement of the message at ``t``."""
        self._acknowledged.add(message_id, t)

    def cancelled(self, message_id: int, t: int) -> None:
        """The proxy accepted a Cancel of the message's delivery at ``t``."""
        self._cancelled.add(message_id, t)

    def archived(self, message_id: int, t: int) -> None:
        """The delivery-count limit archived the message at ``t``."""
        self._archived.add(message_id, t)

    def committed(self, message_ids: Sequence[int], t: int) -> None:
        """An OffsetCommit moving the data topic's position past these messages succeeded."""
        self._committed.add_at(message_ids, t)

    def final_states(self, partition: int, start: int, end: int, states: Sequence[str]) -> None:
        """At the end of the run ``partition`` is committed up to ``start`` and fetched up to
        ``end``; ``states[i]`` is the state of offset ``start + i`` (a :data:`STATES` name)."""
        codes = array("b", (STATES.index(state) for state in states))
        if len(codes) != end - start:
            raise ValueError(f"{len(codes)} states for offsets {start} to {end}")
        self._final[partition] = (start, end, codes)

    # -- a reader's events ---------------------------------------------------------------------

    def completed(self, message_id: int, t: int) -> None:
        """A reader finished processing the message at ``t``."""
        self._completed.add(message_id, t)

    def refused(self, message_id: int, t: int) -> None:
        """A reader's acknowledgement or cancel of the message was refused at ``t``: its
        delivery had ended."""
        self._refused.add(message_id, t)

    # -- the table -----------------------------------------------------------------------------

    def table(self, messages: pa.Table) -> pa.Table:
        """The proxy table (:data:`PROXY_SCHEMA`) of the messages of ``messages`` (the run's
        messages table) sent to the proxy's topic."""
        rows = messages.filter(pc.equal(messages.column("topic"), self.topic))
        ids = rows.column("message_id").to_numpy()
        sorter = np.argsort(ids, kind="stable")
        n = len(ids)
        sent = rows.column("sent_us").to_numpy()
        partition = _nullable(rows.column("partition"))
        offset = _nullable(rows.column("offset"))
        _, deliveries = self._handed_out.first_times(ids, sorter)
        _, completions = self._completed.first_times(ids, sorter)
        _, cancels = self._cancelled.first_times(ids, sorter)
        _, late = self._refused.first_times(ids, sorter)
        _, archived = self._archived.first_times(ids, sorter)
        acknowledged, _ = self._acknowledged.first_times(ids, sorter)
        committed, _ = self._committed.first_times(ids, sorter)
        state = self._states(partition, offset)
        ended = (~acknowledged[1]).astype(np.int64) + cancels + (state[0] == _PENDING)
        expired = deliveries - ended
        sent_column = (sent, np.zeros(n, np.bool_))
        columns: dict[str, pa.Array] = {
            "message_id": _owned(ids),
            "partition": _arrow(partition, pa.int32()),
            "offset": _arrow(offset, pa.int64()),
            "sent_us": _owned(sent),
            "deliveries": _owned(deliveries, pa.int32()),
            "completions": _owned(completions, pa.int32()),
            "cancels": _owned(cancels, pa.int32()),
            "expired": _owned(expired, pa.int32()),
            "late_answers": _owned(late, pa.int32()),
            "archived": _owned(archived > 0),
            "acknowledged_us": _arrow(acknowledged, pa.int64()),
            "committed_us": _arrow(committed, pa.int64()),
            "send_to_ack_latency_us": _arrow(_difference(acknowledged, sent_column), pa.int64()),
            "ack_to_commit_latency_us": _arrow(_difference(committed, acknowledged), pa.int64()),
            "send_to_commit_latency_us": _arrow(_difference(committed, sent_column), pa.int64()),
            "state": pa.array(STATES, pa.string()).take(
                pa.array(state[0], pa.int8(), mask=state[1])
            ),
        }
        return pa.Table.from_pydict(
            {field.name: columns[field.name] for field in PROXY_SCHEMA}, schema=PROXY_SCHEMA
        )

    def _states(
        self, partition: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]], offset: Any
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The :data:`STATES` code of each row at the end of the run (null without offset)."""
        n = len(offset[0])
        codes = np.full(n, _UNFETCHED, np.int64)
        for number, (start, end, states) in self._final.items():
            here = (partition[0] == number) & ~partition[1] & ~offset[1]
            at = offset[0]
            codes[here & (at < start)] = _COMMITTED
            inside = here & (at >= start) & (at < end)
            codes[inside] = np.frombuffer(states, np.int8)[at[inside] - start]
        return codes, offset[1].copy()


def _nullable(column: pa.ChunkedArray) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A nullable integer column as (values with nulls as 0, null mask)."""
    nulls = column.is_null().to_numpy(zero_copy_only=False)
    values = column.fill_null(0).to_numpy().astype(np.int64, copy=False)
    return values, np.asarray(nulls, np.bool_)

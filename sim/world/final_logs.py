"""The final leader logs, read when the run ends: what the loss counts are checked against.

For each partition of a topic some producer writes, :func:`report_final_logs` reads the log of
the replica that leads it at the end (for a partition left without a leader, the ISR member
the controller would elect again: its log is what the partition will hold when it returns),
from its log start offset to its log end, and reports to the recorder the message ids the
records carry (:mod:`sim.clients.records`) and the log start offset. Whatever lies below the
log start offset was deleted by retention. A replica that came back with an empty disk holds
what it fetched since, so messages acknowledged before are absent: lost, as in Kafka.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from cluster import Cluster
from replica.log import Log
from sim.clients.records import message_ids_of
from sim.output import MetricsRecorder

__all__ = ["log_message_ids", "report_final_logs"]


def log_message_ids(log: Log) -> array[int]:
    """The message ids of ``log``'s records from its log start offset on, in offset order
    (records without one, not made by a simulated producer, are skipped)."""
    ids = array("q")
    start = log.log_start_offset
    for segment in log.segments:
        for batch in segment.batches:
            if batch.next_offset <= start:
                continue
            carried = message_ids_of(batch.records)[max(0, start - batch.base_offset) :]
            ids.extend(i for i in carried if i is not None)
    return ids


def report_final_logs(cluster: Cluster, topics: Iterable[str], recorder: MetricsRecorder) -> None:
    """Report to ``recorder`` the final leader log of every partition of ``topics``
    (:meth:`MetricsRecorder.final_log`); see the module docstring for which replica's."""
    wanted = set(topics)
    controller = cluster.controller
    for tp in controller.partitions():
        if tp.topic not in wanted:
            continue
        state = controller.partition_state(tp)
        holder = state.leader if state.leader >= 0 else state.isr[0]
        partition = cluster.brokers[holder].replica_manager.get_partition(tp)
        if partition is None:  # never created there: the partition holds nothing
            recorder.final_log(tp.topic, tp.partition, 0, ())
            continue
        log = partition.log
        recorder.final_log(tp.topic, tp.partition, log.log_start_offset, log_message_ids(log))

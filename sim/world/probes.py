"""Time-series probes of the brokers, sampled by the recorder every ``sample_interval``.

Per broker (source ``broker-<id>``):

* ``produce_purgatory_watched`` / ``produce_purgatory_delayed``, ``fetch_purgatory_watched``
  / ``fetch_purgatory_delayed``: Kafka's ``PurgatorySize`` (watch-list entries) and
  ``NumDelayedOperations`` (operations in the timer) of its two purgatories;
* ``replica_lag_max``: as a follower, the largest lag in messages over the partitions it
  follows (its leader's log end offset minus its own; Kafka's replica fetcher ``MaxLag``),
  0 when it follows nothing;
* ``under_replicated_partitions``: as a leader, partitions whose ISR is smaller than their
  replica set (Kafka's ``UnderReplicatedPartitions``);
* ``request_queue_size``: requests waiting for a handler thread (``RequestQueueSize``).

A stopped broker reports the state it stopped with. Probes look the broker up in the cluster
at sampling time, so they follow a broker that was replaced after losing its logs.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Literal

from cluster import Cluster, broker_node_name
from sim.core.request_handling import RequestHandlerPool
from sim.output import MetricsRecorder

__all__ = ["purgatory_size", "register_probes", "replica_lag_max", "under_replicated_partitions"]


def purgatory_size(
    cluster: Cluster,
    broker_id: int,
    purgatory: Literal["produce", "fetch"],
    metric: Literal["watched", "delayed"],
) -> int:
    """``watched`` (PurgatorySize) or ``delayed`` (NumDelayedOperations) of a purgatory."""
    manager = cluster.brokers[broker_id].replica_manager
    chosen = manager.produce_purgatory if purgatory == "produce" else manager.fetch_purgatory
    return chosen.watched if metric == "watched" else chosen.num_delayed


def replica_lag_max(cluster: Cluster, broker_id: int) -> int:
    """The largest follower lag (messages) of ``broker_id`` over the partitions it follows."""
    manager = cluster.brokers[broker_id].replica_manager
    lag = 0
    for tp, partition in manager.partitions.items():
        leader = cluster.brokers.get(partition.leader_id)
        if partition.is_leader or leader is None:
            continue
        leader_end = leader.replica_manager.log_end_offset(tp)
        own_end = manager.log_end_offset(tp)
        if leader_end is not None and own_end is not None:
            lag = max(lag, leader_end - own_end)
    return lag


def under_replicated_partitions(cluster: Cluster, broker_id: int) -> int:
    """Partitions led by ``broker_id`` whose ISR is smaller than their replica set."""
    manager = cluster.brokers[broker_id].replica_manager
    return sum(
        1
        for partition in manager.partitions.values()
        if partition.is_leader and len(partition.isr) < len(partition.assigned_replicas)
    )


def _queue_size(pool: RequestHandlerPool[Any]) -> int:
    return pool.queue_size


def register_probes(
    recorder: MetricsRecorder,
    cluster: Cluster,
    pools: Mapping[int, RequestHandlerPool[Any]],
) -> None:
    """Register the probes of every broker of ``cluster`` (see the module docstring);
    ``pools`` are the brokers' request handler pools."""
    for broker_id in sorted(cluster.brokers):
        source = broker_node_name(broker_id)
        for purgatory in ("produce", "fetch"):
            for metric in ("watched", "delayed"):
                recorder.add_probe(
                    source,
                    f"{purgatory}_purgatory_{metric}",
                    partial(purgatory_size, cluster, broker_id, purgatory, metric),
                )
        recorder.add_probe(source, "replica_lag_max", partial(replica_lag_max, cluster, broker_id))
        recorder.add_probe(
            source,
            "under_replicated_partitions",
            partial(under_replicated_partitions, cluster, broker_id),
        )
        recorder.add_probe(source, "request_queue_size", partial(_queue_size, pools[broker_id]))

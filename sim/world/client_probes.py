"""Time-series probes of the clients, sampled with the brokers' every ``sample_interval``.

Per consumer with a group (source ``<client id>:<topic>-<partition>``, one per partition it
consumes):

* ``group_lag``: the partition leader's log end offset minus the group's committed offset
  (Kafka's consumer lag), read from the broker state through public methods
  (``ReplicaManager.log_end_offset`` of the leader, ``OffsetManager.get_offsets`` of the
  group's coordinator). A partition the group has not committed yet counts from the log start
  offset. NaN while it cannot be known: no leader, no coordinator, or the coordinator is
  loading the group's offsets.

Consumers that join one group (:func:`sim.scenario.subscribes`) share its lag: its
``group_lag`` series are registered once, under the first member's client id.

Per client (source: its client id):

* ``producer_backlog``: messages the producer was given and has not finished with (no
  acknowledgement or final error yet): buffered, in a request, or waiting for a retry;
  ``producer_buffered``: the part of them waiting in batches, not yet in a request;
* ``produce_errors`` (producers) and ``commit_errors`` (consumers with a group): Produce and
  OffsetCommit responses that carried an error, **cumulative** since the start (a retried
  request counts once per response); the errors per interval are the differences;
* ``pool_queue_depth`` and ``pool_in_flight`` (the Burrow consumer): jobs waiting in the
  worker pool's job queue (at most ``job_queue_size``), and jobs a worker holds (processing,
  or its result waiting for room in the result queue); ``assigned_partitions`` (a consumer,
  plain or Burrow, that joins its group): the partitions the group assigned it, 0 between a
  revocation and the next assignment. A crashed consumer reports 0 until it restarts; probes
  read the running instance at sampling time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial

from cluster import Cluster
from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients import BurrowConsumer, Producer
from sim.output import MetricsRecorder
from sim.output.health import GROUP_LAG, PRODUCER_BACKLOG
from sim.scenario import BurrowSection, ConsumerSection, Scenario, consumer_ids, subscribes
from sim.world.clients import ConsumerSlot, ProducerClient

__all__ = ["group_lag", "register_client_probes"]


def group_lag(cluster: Cluster, group_id: str, tp: TopicPartition) -> float:
    """Log end offset of ``tp``'s leader minus ``group_id``'s committed offset (see the module
    docstring); NaN when either is unknown."""
    leader = cluster.brokers.get(cluster.leader(tp))
    coordinator = cluster.brokers.get(cluster.coordinator(group_id))
    if leader is None or coordinator is None:
        return math.nan
    end = leader.replica_manager.log_end_offset(tp)
    start = leader.replica_manager.log_start_offset(tp)
    fetched = coordinator.offset_manager.get_offsets(group_id, [tp])
    if end is None or start is None or fetched.error is not Errors.NONE:
        return math.nan
    committed = fetched.offsets[tp].offset
    return float(end - (committed if committed >= 0 else start))


def _backlog(producer: Producer) -> int:
    return producer.in_flight_messages


def _buffered(producer: Producer) -> int:
    return producer.queued_messages()


def _pool_queue_depth(slot: ConsumerSlot) -> int:
    instance = slot.instance
    return instance.queued_jobs if isinstance(instance, BurrowConsumer) and slot.running else 0


def _pool_in_flight(slot: ConsumerSlot) -> int:
    instance = slot.instance
    return instance.busy_workers if isinstance(instance, BurrowConsumer) and slot.running else 0


def _assigned_partitions(slot: ConsumerSlot) -> int:
    instance = slot.instance
    consumer = instance.consumer if isinstance(instance, BurrowConsumer) else instance
    return len(consumer.assignment) if slot.running else 0


def _members(scenario: Scenario) -> set[str]:
    """Client ids of the consumers that join their group."""
    sections: list[ConsumerSection | BurrowSection] = list(scenario.consumers)
    if scenario.burrow is not None:
        sections += [scenario.burrow] * scenario.burrow.members
    return {
        client_id
        for client_id, section in zip(consumer_ids(scenario), sections, strict=True)
        if subscribes(scenario, section)
    }


def _groups(scenario: Scenario) -> dict[str, tuple[str | None, list[TopicPartition]]]:
    """Client id -> (group id, partitions consumed) of every consumer of ``scenario``."""
    partitions = {topic.name: topic.partitions for topic in scenario.topics}
    sections: list[tuple[str | None, list[str]]] = [
        (section.config.group_id, section.topics) for section in scenario.consumers
    ]
    if scenario.burrow is not None:
        burrow = (scenario.burrow.consumer.group_id, [scenario.burrow.topic])
        sections += [burrow] * scenario.burrow.members
    return {
        client_id: (group, [TopicPartition(t, p) for t in topics for p in range(partitions[t])])
        for client_id, (group, topics) in zip(consumer_ids(scenario), sections, strict=True)
    }


def register_client_probes(
    recorder: MetricsRecorder,
    cluster: Cluster,
    scenario: Scenario,
    producers: Sequence[ProducerClient],
    consumers: Mapping[str, ConsumerSlot],
) -> None:
    """Register the probes of the scenario's clients (see the module docstring)."""
    for client in producers:
        producer = client.producer
        source = producer.client_id
        recorder.add_probe(source, PRODUCER_BACKLOG, partial(_backlog, producer))
        recorder.add_probe(source, "producer_buffered", partial(_buffered, producer))
        recorder.add_probe(
            source, "produce_errors", partial(recorder.request_errors, source, "Produce")
        )
    members = _members(scenario)
    groups_probed: set[str] = set()
    for client_id, (group_id, partitions) in _groups(scenario).items():
        slot = consumers[client_id]
        if client_id in members:
            recorder.add_probe(
                client_id, "assigned_partitions", partial(_assigned_partitions, slot)
            )
        if group_id is not None:
            shared = client_id in members and group_id in groups_probed
            groups_probed.add(group_id)
            for tp in [] if shared else partitions:
                recorder.add_probe(
                    f"{client_id}:{tp.topic}-{tp.partition}",
                    GROUP_LAG,
                    partial(group_lag, cluster, group_id, tp),
                )
            recorder.add_probe(
                client_id,
                "commit_errors",
                partial(recorder.request_errors, client_id, "OffsetCommit"),
            )
        if isinstance(slot.instance, BurrowConsumer):
            recorder.add_probe(client_id, "pool_queue_depth", partial(_pool_queue_depth, slot))
            recorder.add_probe(client_id, "pool_in_flight", partial(_pool_in_flight, slot))

"""KafkaFeed: the consume proxy's Kafka side over a real Kafka client (confluent-kafka).

The feed is one member of a consumer group: every proxy server of a deployment joins the same
group and subscribes to the data topic, so the group coordinator spreads the topic's
partitions over the servers and moves them when a server comes or goes. It works against any
Kafka, the project's wire-protocol broker (``kafka_server``) included.

* **Assignment.** For each partition assigned, the feed reads the group's committed offset
  (the log's start if nothing is committed), serves the partition from it
  (:meth:`ConsumeProxy.assign <consume_proxy.ConsumeProxy.assign>`) and has the client fetch
  from exactly that offset.
* **Revocation.** The feed commits what the proxy may commit and stops serving the partition
  (:meth:`ConsumeProxy.revoke <consume_proxy.ConsumeProxy.revoke>`): its pending deliveries
  are redelivered by the new owner from the committed offset, and acknowledgements of them
  here get 404. The default assignor is ``cooperative-sticky`` (KIP-429, client side, over the
  classic group protocol): a rebalance revokes only the partitions that move, and the rest
  keep their pending records and leases. With an eager assignor (``-X
  partition.assignment.strategy=range``) every rebalance revokes everything; the feed then
  keeps the revoked partitions' state until the assignment, and one that comes back (nobody
  else owned it in between) keeps its pending records; acknowledgements taken in between for
  one that moves are lost with it (its new owner hands those records out again). A partition
  *lost* (the session expired) is dropped at once, without a commit.
* **Records and commits.** Fetched records are appended to the proxy in offset order;
  whenever the proxy's commit position moves, the feed commits it for the group
  (asynchronously; a lost commit is covered by the next).
* **Flow control.** A partition with ``window`` records in the proxy (fetched, not yet
  committed) is paused, and resumed from the proxy's fetched end once it is down to half:
  memory stays bounded however far behind the readers are (KIP-932's in-flight limit, at the
  feed).

Threads: the client blocks, so its poll runs in a worker thread
(:func:`trio.to_thread.run_sync`); the group's rebalance callbacks run inside that poll and
reach the proxy through :func:`trio.from_thread.run_sync`. The proxy itself is only ever
touched on the trio thread, as the sans-IO core requires. The client's own threads keep its
group session alive between polls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import trio
from confluent_kafka import Consumer, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaPartition

from consume_proxy.proxy import ConsumeProxy
from replica.types import TopicPartition

__all__ = ["DEFAULT_WINDOW", "KafkaFeed"]

_logger = logging.getLogger("consume_proxy.kafka_feed")

DEFAULT_WINDOW = 10_000
"""Records a partition may have in the proxy (fetched, not committed) before its fetching is
paused."""
_BATCH = 500  # messages taken from the client per poll
_CLOSE_TIMEOUT_S = 10.0


class KafkaFeed:
    """Feeds ``proxy`` from ``topic`` as a member of ``group_id`` (see the module docstring).

    ``clock`` reads the time in the proxy's units. ``config`` adds or overrides client
    settings (librdkafka's names, e.g. ``session.timeout.ms``); the feed sets
    ``bootstrap.servers``, ``group.id``, ``enable.auto.commit`` (false) and
    ``auto.offset.reset`` (earliest). ``poll_interval_s`` bounds how long an idle poll waits,
    and so how long a commit may wait to be sent.
    """

    def __init__(
        self,
        proxy: ConsumeProxy,
        clock: Callable[[], int],
        *,
        bootstrap: str,
        topic: str,
        group_id: str,
        config: Mapping[str, str | int | float | bool] | None = None,
        window: int = DEFAULT_WINDOW,
        poll_interval_s: float = 0.1,
        request_timeout_s: float = 10.0,
    ) -> None:
        self.proxy = proxy
        self.clock = clock
        self.topic = topic
        self.group_id = group_id
        self.window = window
        self.poll_interval_s = poll_interval_s
        self.request_timeout_s = request_timeout_s
        self.config: dict[str, str | int | float | bool] = {
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky",
            **(config or {}),
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "enable.auto.commit": False,
        }
        self.high_watermarks: dict[TopicPartition, int] = {}
        """Each served partition's high watermark, as last seen by the client."""
        self._cooperative = self.config["partition.assignment.strategy"] == "cooperative-sticky"
        self._kept: set[TopicPartition] = set()  # eager: revoked, kept until the assignment
        self._paused: set[TopicPartition] = set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Join the group and feed the proxy until cancelled; then commit, leave the group
        and close the client (within 10 s)."""
        consumer = Consumer(self.config)
        consumer.subscribe(
            [self.topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        task_status.started()
        try:
            while True:
                messages = await trio.to_thread.run_sync(self._fetch, consumer)
                self.proxy.advance(self.clock())
                self._append(messages)
                self._after_batch(consumer)
        finally:
            with trio.move_on_after(_CLOSE_TIMEOUT_S) as scope:
                scope.shield = True
                await trio.to_thread.run_sync(consumer.close, abandon_on_cancel=True)

    # -- the worker thread ----------------------------------------------------------------------

    def _fetch(self, consumer: Consumer) -> list[Message]:
        """Wait up to the poll interval for a message, then take what else is there."""
        first = consumer.poll(self.poll_interval_s)
        if first is None:
            return []
        return [first, *consumer.consume(_BATCH - 1, 0)]

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaPartition]) -> None:
        starts = {}
        for committed in consumer.committed(partitions, timeout=self.request_timeout_s):
            offset = committed.offset
            if offset < 0:  # nothing committed: from the log's start
                offset, _ = consumer.get_watermark_offsets(
                    committed, timeout=self.request_timeout_s
                )
            starts[TopicPartition(committed.topic, committed.partition)] = offset
        positions = trio.from_thread.run_sync(self._assigned, starts)
        fetch = [_kafka(tp, offset) for tp, offset in positions.items()]
        if self._cooperative:
            consumer.incremental_assign(fetch)
        else:
            consumer.assign(fetch)
        _logger.info("assigned %s", ", ".join(f"{tp} from {o}" for tp, o in positions.items()))

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaPartition]) -> None:
        revoked = [TopicPartition(p.topic, p.partition) for p in partitions]
        positions = trio.from_thread.run_sync(self._revoked, revoked)
        if positions:
            try:
                consumer.commit(offsets=positions, asynchronous=False)
            except KafkaException as error:
                _logger.warning("the commit on revocation failed: %s", error)

    def _on_lost(self, consumer: Consumer, partitions: list[KafkaPartition]) -> None:
        lost = [TopicPartition(p.topic, p.partition) for p in partitions]
        trio.from_thread.run_sync(self._lost, lost)

    # -- the trio thread ------------------------------------------------------------------------

    def _assigned(self, starts: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Serve the assigned partitions; returns the offset to fetch each from."""
        proxy = self.proxy
        proxy.advance(self.clock())
        for tp in self._kept - starts.keys():
            proxy.revoke(tp)
            self.high_watermarks.pop(tp, None)
        positions = {}
        for tp, start in starts.items():
            if tp in self._kept:
                positions[tp] = proxy.partition(tp).end_offset
            else:
                proxy.assign(tp, start)
                positions[tp] = start
        self._kept.clear()
        return positions

    def _revoked(self, revoked: list[TopicPartition]) -> list[KafkaPartition]:
        """Stop serving the revoked partitions (eager: keep them until the assignment);
        returns the commit due: the position of every one of them (an earlier asynchronous
        commit may have been lost)."""
        proxy = self.proxy
        proxy.advance(self.clock())
        proxy.commit()
        served = [tp for tp in revoked if tp in proxy.served]
        positions = [_kafka(tp, proxy.partition(tp).start_offset) for tp in served]
        self._paused.difference_update(revoked)  # the client forgets a pause on unassign
        if self._cooperative:
            self._lost(served)
        else:
            self._kept.update(served)
        return positions

    def _lost(self, lost: list[TopicPartition]) -> None:
        self._paused.difference_update(lost)
        for tp in lost:
            if tp in self.proxy.served:
                self.proxy.revoke(tp)
            self._kept.discard(tp)
            self.high_watermarks.pop(tp, None)

    def _append(self, messages: list[Message]) -> None:
        proxy = self.proxy
        for message in messages:
            error = message.error()
            if error is not None:
                _logger.warning("fetch error: %s", error)
                continue
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            assert topic is not None and partition is not None and offset is not None
            tp = TopicPartition(topic, partition)
            if tp not in proxy.served or offset < proxy.partition(tp).end_offset:
                continue  # revoked meanwhile, or fetched again after a resume
            proxy.append(tp, offset, _bytes(message.key()), _bytes(message.value()))

    def _after_batch(self, consumer: Consumer) -> None:
        moved = self.proxy.commit()
        if moved:
            try:
                consumer.commit(
                    offsets=[_kafka(*item) for item in moved.items()], asynchronous=True
                )
            except KafkaException as error:  # rebalancing: the revocation commits again
                _logger.info("commit not sent: %s", error)
        self.proxy.poll_log()  # the state log is not produced yet (docs/proxy.md)
        self.proxy.log.commit()
        for tp in self.proxy.served:
            kafka_tp = KafkaPartition(tp.topic, tp.partition)
            _, high = consumer.get_watermark_offsets(kafka_tp, cached=True)
            if high >= 0:
                self.high_watermarks[tp] = high
            if tp in self._kept:
                continue
            share = self.proxy.partition(tp)
            held = share.end_offset - share.start_offset
            if tp not in self._paused and held >= self.window:
                consumer.pause([kafka_tp])
                self._paused.add(tp)
            elif tp in self._paused and held <= self.window // 2:
                consumer.resume([kafka_tp])
                consumer.seek(_kafka(tp, share.end_offset))
                self._paused.discard(tp)


def _kafka(tp: TopicPartition, offset: int) -> KafkaPartition:
    return KafkaPartition(tp.topic, tp.partition, offset)


def _bytes(data: str | bytes | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data

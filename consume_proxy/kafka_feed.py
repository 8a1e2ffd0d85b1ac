"""KafkaFeed: the consume proxy's Kafka side over a real Kafka client (confluent-kafka).

The feed does with three clients what :class:`~consume_proxy.feed.Feed` says (read that
first: the state log, the commit rules, dead letters and flow control are the feed's, shared
with the in-process :class:`~consume_proxy.cluster_feed.ClusterFeed`). It works against any
Kafka, the project's wire-protocol broker (``kafka_server``) included.

* **The group's consumer** subscribes to the data topic in the servers' group, so the group
  coordinator spreads the topic's partitions over the servers and moves them when a server
  comes or goes. For each partition assigned it reads the group's committed offsets of the
  data partition and of its log partition (one OffsetFetch; each log's start if nothing is
  committed) and assigns it to the feed, which catches up on the log from there and serves
  once its claim is read back. It fetches the data and sends the feed's commits (data and
  log positions in one OffsetCommit, synchronously in a worker thread, one at a time).
* **The log reader**, a second consumer with manual assignment (it joins no group), reads
  the log partition of every partition owned, for as long as it is owned: catch-up, then the
  requests other servers forward, and a newer owner's claim, which fences the partition (the
  feed pauses its data fetching; the group takes it away when it notices).
* **Claiming again.** A partition the group still gives this server but the proxy does not
  serve is claimed again: one it was fenced from after ``reclaim_after_s`` (by default the
  session timeout: a server fenced because it was a zombie has learned from the group by then
  that the partition moved, so only a rightful owner claims again; one fenced by a zombie's
  late claim gets its partition back), one whose assignment failed (the committed offsets
  could not be read, e.g. the log topic is missing) a second later, and so on until it
  succeeds. The claim starts again from the group's committed offsets.
* **The producer** produces the feed's batches (the state log, requests forwarded to other
  servers' partitions, dead letters) with acks=all, each batch flushed before the next to
  its partition, in order.

**Revocation.** The proxy stops serving the partition, the feed produces the entries it
wrote about it, then commits its last positions (data and log in one OffsetCommit), all in the
rebalance callback, before the group may give the partition to another server. Its pending
deliveries move with it: the new owner reads their Pending entries and keeps their leases,
and a reader that acknowledges at this server after the move is forwarded to the new owner.
The default assignor is ``cooperative-sticky`` (KIP-429, client side, over the classic group
protocol): a rebalance revokes only the partitions that move. With an eager assignor
(``consumer.partition.assignment.strategy=range``) every rebalance revokes everything; the feed then
keeps the revoked partitions until the assignment, and one that comes back keeps its state.
A partition *lost* (the session expired) is dropped at once, without a commit.

Threads: the clients block, so their polls and flushes run in worker threads
(:func:`trio.to_thread.run_sync`); the group's rebalance callbacks run inside the group
consumer's poll and reach the proxy through :func:`trio.from_thread.run_sync`. The proxy and
the feed are only ever touched on the trio thread, as the sans-IO core requires; changes to
the log reader's assignment and the data fetches' pauses are queued and made between that
client's polls.

**Configuration.** ``config`` holds librdkafka settings for every client; a name prefixed
``consumer.`` goes to the two consumers only and ``producer.`` to the producer only (Kafka
Connect's convention), e.g. ``consumer.session.timeout.ms``.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Mapping

import trio
from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as KafkaPartition

from consume_proxy.feed import DEFAULT_LOG_TOPIC, DEFAULT_WINDOW, Batch, Feed
from consume_proxy.proxy import ConsumeProxy
from replica.types import TopicPartition

__all__ = ["DEFAULT_WINDOW", "KafkaFeed"]

_logger = logging.getLogger("consume_proxy.kafka_feed")

_BATCH = 500  # messages taken from a consumer per poll
_CLOSE_TIMEOUT_S = 10.0
_FLUSH_S = 1.0  # a producer flush waits this long between checks for cancellation
_RETRY_S = 1.0  # a partition whose claim failed is claimed again after this long

Setting = str | int | float | bool


class KafkaFeed:
    """Feeds ``proxy`` from ``topic`` as a member of ``group_id`` (see the module docstring).

    ``clock`` reads the time in the proxy's units. ``config`` adds or overrides client
    settings (librdkafka's names; ``consumer.`` and ``producer.`` prefixes, see the module
    docstring); the feed sets ``bootstrap.servers``, the consumers' ``group.id``,
    ``enable.auto.commit`` (false) and ``auto.offset.reset`` (earliest), and the producer's
    ``acks`` (all). ``log_topic``, ``dead_letter_topic`` and ``window`` are the
    :class:`~consume_proxy.feed.Feed`'s. ``poll_interval_s`` bounds how long an idle poll
    waits; ``commit_interval_s`` how long a commit that only an expiry moved waits;
    ``reclaim_after_s`` how long a fenced partition the group still gives this server waits
    before it is claimed again (None: the consumers' ``session.timeout.ms``, 45 s unless set).
    """

    def __init__(
        self,
        proxy: ConsumeProxy,
        clock: Callable[[], int],
        *,
        bootstrap: str,
        topic: str,
        group_id: str,
        config: Mapping[str, Setting] | None = None,
        log_topic: str = DEFAULT_LOG_TOPIC,
        dead_letter_topic: str | None = None,
        window: int = DEFAULT_WINDOW,
        poll_interval_s: float = 0.1,
        commit_interval_s: float = 1.0,
        reclaim_after_s: float | None = None,
        request_timeout_s: float = 10.0,
    ) -> None:
        self.proxy = proxy
        self.clock = clock
        self.topic = topic
        self.group_id = group_id
        self.poll_interval_s = poll_interval_s
        self.commit_interval_s = commit_interval_s
        self.request_timeout_s = request_timeout_s
        self.feed = Feed(
            proxy, log_topic=log_topic, dead_letter_topic=dead_letter_topic, window=window
        )
        common, consumer, producer = _split(config or {})
        self.config: dict[str, Setting] = {
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky",
            **common,
            **consumer,
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "enable.auto.commit": False,
        }
        """The group consumer's settings."""
        self.log_config: dict[str, Setting] = {
            **common,
            **consumer,
            "bootstrap.servers": bootstrap,
            "group.id": f"{group_id}.log-reader",  # librdkafka wants one; it joins nothing
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        """The log reader's settings."""
        self.producer_config: dict[str, Setting] = {
            "linger.ms": 0,
            **common,
            **producer,
            "bootstrap.servers": bootstrap,
            "acks": "all",
        }
        """The producer's settings."""
        self.partitions: int | None = None
        """The data topic's partition count, once known (requests for partitions not served
        here are forwarded only within it)."""
        self.high_watermarks: dict[TopicPartition, int] = {}
        """Each served partition's high watermark, as last seen by the client."""
        session_ms = float(self.config.get("session.timeout.ms", 45_000))
        self.reclaim_after_s = session_ms / 1000 if reclaim_after_s is None else reclaim_after_s
        self._cooperative = self.config["partition.assignment.strategy"] == "cooperative-sticky"
        self._kept: set[TopicPartition] = set()  # eager: revoked, kept until the assignment
        self._log_changes: list[tuple[TopicPartition, int | None]] = []  # (tp, from) or stop
        self._to_pause: list[TopicPartition] = []
        self._to_resume: dict[TopicPartition, int] = {}  # reclaimed: fetch from there
        self._unserved: dict[TopicPartition, float] = {}  # given, not served: claim again at
        self._unserved_changed = trio.Event()
        self._produce_wake = trio.Event()
        self._commit_wake = trio.Event()
        self._producing = trio.Lock()  # one round of producing at a time
        self._producer: Producer | None = None
        proxy.log.on_write = self._kick

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Join the group and feed the proxy until cancelled; then commit, leave the group,
        produce what is left and close the clients (within 10 s each)."""
        consumer = Consumer(self.config)
        reader = Consumer(self.log_config)
        producer = self._producer = Producer(self.producer_config)
        consumer.subscribe(
            [self.topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        task_status.started()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._data_loop, consumer)
                nursery.start_soon(self._log_loop, reader)
                nursery.start_soon(self._produce_loop, producer)
                nursery.start_soon(self._commit_loop, consumer)
                nursery.start_soon(self._reclaim_loop, consumer)
        finally:
            with trio.move_on_after(3 * _CLOSE_TIMEOUT_S) as scope:
                scope.shield = True
                await _closed(consumer)  # revokes what it holds: the last commits
                async with self._producing:
                    await self._produce(producer, rounds=int(_CLOSE_TIMEOUT_S / _FLUSH_S))
                if left := self.feed.unproduced():
                    _logger.warning(
                        "stopped with %d record%s not produced (Kafka did not take %s in time): "
                        "the next owner may hand %s records out again",
                        *(left, "", "it", "its") if left == 1 else (left, "s", "them", "their"),
                    )
                await _closed(reader)

    # -- the loops (trio thread) ------------------------------------------------------------------

    async def _data_loop(self, consumer: Consumer) -> None:
        while True:
            if self.partitions is None:
                self.partitions = await trio.to_thread.run_sync(self._partition_count, consumer)
            messages = await trio.to_thread.run_sync(self._poll, consumer)
            self.proxy.advance(self.clock())
            for tp, records in _by_partition(messages).items():
                self.feed.data(tp, records)
            self._after_data(consumer)
            self._kick()

    async def _log_loop(self, reader: Consumer) -> None:
        log_topic = self.feed.log_topic
        reading: set[int] = set()  # the log partitions assigned to the reader
        while True:
            for tp, start in self._log_changes:
                if start is None and tp.partition in reading:
                    reader.incremental_unassign([KafkaPartition(log_topic, tp.partition)])
                    reading.discard(tp.partition)
                elif start is not None and tp.partition not in reading:
                    reader.incremental_assign([KafkaPartition(log_topic, tp.partition, start)])
                    reading.add(tp.partition)
            self._log_changes.clear()
            messages = await trio.to_thread.run_sync(self._poll, reader)
            self.proxy.advance(self.clock())
            for read, records in _by_partition(messages).items():
                self.feed.log(TopicPartition(self.topic, read.partition), records)
            for tp in self.feed.take_fenced():
                _logger.warning("fenced from %s: a newer owner claimed it", tp)
                self._stop(tp)
                self._unserve(tp, trio.current_time() + self.reclaim_after_s)
            self._kick()

    async def _produce_loop(self, producer: Producer) -> None:
        while True:
            await self._produce_wake.wait()
            self._produce_wake = trio.Event()
            async with self._producing:
                await self._produce(producer)
            self._commit_wake.set()  # a dead letter produced may free a held commit

    async def _commit_loop(self, consumer: Consumer) -> None:
        while True:
            with trio.move_on_after(self.commit_interval_s):
                await self._commit_wake.wait()
            self._commit_wake = trio.Event()
            self.proxy.advance(self.clock())
            due = self.feed.commits()
            if not due:
                continue
            offsets = [_kafka(tp, offset) for tp, offset in due.items()]
            try:
                answer = await trio.to_thread.run_sync(_commit, consumer, offsets)
            except KafkaException as error:  # rebalancing: the revocation commits again
                _logger.info("commit not sent: %s", error)
                self.feed.committed(due, list(due))
                continue
            failed = [TopicPartition(p.topic, p.partition) for p in answer if p.error]
            self.feed.committed(due, failed)

    async def _reclaim_loop(self, consumer: Consumer) -> None:
        """Claim again the partitions the group gives this server that the proxy does not
        serve (fenced, or their assignment failed), each when it is due."""
        while True:
            due_at = min(self._unserved.values(), default=math.inf)
            with trio.move_on_at(due_at):
                await self._unserved_changed.wait()
                self._unserved_changed = trio.Event()
                continue
            now = trio.current_time()
            due = [tp for tp, at in self._unserved.items() if at <= now]
            try:
                starts = await trio.to_thread.run_sync(self._committed, consumer, due)
            except KafkaException as error:
                _logger.warning("cannot claim %s again yet: %s", due, error)
                starts = {}
            still = [tp for tp in due if tp in self._unserved]  # not revoked meanwhile
            self._start(starts, still, paused=True)

    async def _produce(self, producer: Producer, rounds: int | None = None) -> None:
        """Produce the feed's batches and wait for every delivery report (at most ``rounds``
        flushes); report each batch's outcome."""
        batches = self.feed.batches()
        if not batches:
            return
        failures: dict[Batch, int] = dict.fromkeys(batches, 0)
        waiting = [0]

        def delivered(batch: Batch) -> Callable[[KafkaError | None, Message], None]:
            def report(error: KafkaError | None, message: Message) -> None:
                waiting[0] -= 1
                if error is not None:
                    failures[batch] += 1

            return report

        for batch in batches:
            for record in batch.records:
                producer.produce(
                    batch.tp.topic,
                    value=record.value,
                    key=record.key,
                    partition=batch.tp.partition,
                    headers=list(record.headers) or None,
                    on_delivery=delivered(batch),
                )
                waiting[0] += 1
        flushes = 0
        try:
            while waiting[0] > 0 and (rounds is None or flushes < rounds):
                await trio.to_thread.run_sync(producer.flush, _FLUSH_S)
                flushes += 1
        finally:  # cancelled or not: a batch not all acknowledged goes again
            for batch, failed in failures.items():
                if failed:
                    _logger.warning("producing to %s failed; sending it again", batch.tp)
                self.feed.produced(batch, not failed and waiting[0] == 0)

    def _after_data(self, consumer: Consumer) -> None:
        """Pause and resume the data fetches (flow control, fencing); note the high
        watermarks."""
        flow = self.feed.flow()
        pause = [*flow.pause, *self._to_pause]
        self._to_pause.clear()
        if pause:
            consumer.pause([KafkaPartition(tp.topic, tp.partition) for tp in pause])
        resume = {**flow.resume, **self._to_resume}
        self._to_resume.clear()
        for tp, offset in resume.items():
            consumer.resume([KafkaPartition(tp.topic, tp.partition)])
            consumer.seek(_kafka(tp, offset))
        for tp in self.proxy.served:
            _, high = consumer.get_watermark_offsets(
                KafkaPartition(tp.topic, tp.partition), cached=True
            )
            if high >= 0:
                self.high_watermarks[tp] = high

    def _kick(self) -> None:
        self._produce_wake.set()
        self._commit_wake.set()

    def _stop(self, tp: TopicPartition) -> None:
        """``tp`` is no longer served here: stop reading its log and fetching its data."""
        self._log_changes.append((tp, None))
        self._to_pause.append(tp)
        self._to_resume.pop(tp, None)
        self.high_watermarks.pop(tp, None)

    def _unserve(self, tp: TopicPartition, at: float | None) -> None:
        """The group gives ``tp`` to this server, which does not serve it: claim it again at
        ``at`` (trio's clock); None: the group took it away, forget it."""
        if at is None:
            self._unserved.pop(tp, None)
        else:
            self._unserved[tp] = at
        self._unserved_changed.set()

    # -- the group's rebalance callbacks (the group consumer's worker thread) ----------------------

    def _poll(self, consumer: Consumer) -> list[Message]:
        """Wait up to the poll interval for a message, then take what else is there."""
        first = consumer.poll(self.poll_interval_s)
        if first is None:
            return []
        return [first, *consumer.consume(_BATCH - 1, 0)]

    def _partition_count(self, consumer: Consumer) -> int | None:
        """The data topic's partition count, None if the metadata does not say yet."""
        try:
            metadata = consumer.list_topics(self.topic, timeout=self.poll_interval_s)
        except KafkaException:
            return None
        topic = metadata.topics.get(self.topic)
        return None if topic is None or topic.error is not None else len(topic.partitions)

    def _committed(
        self, consumer: Consumer, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The group's committed offsets of ``partitions`` and of their log partitions, each
        the log's start where nothing is committed (blocking; raises KafkaException)."""
        logs = [self.feed.log_partition(tp) for tp in partitions]
        asked = [KafkaPartition(tp.topic, tp.partition) for tp in [*partitions, *logs]]
        starts = {}
        for committed in consumer.committed(asked, timeout=self.request_timeout_s):
            offset = committed.offset
            if offset < 0:  # nothing committed: from the log's start
                offset, _ = consumer.get_watermark_offsets(
                    committed, timeout=self.request_timeout_s
                )
            starts[TopicPartition(committed.topic, committed.partition)] = offset
        return starts

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaPartition]) -> None:
        assigned = [TopicPartition(p.topic, p.partition) for p in partitions]
        try:
            starts = self._committed(consumer, assigned)
        except KafkaException as error:  # they will be claimed when it can be read
            _logger.warning("cannot read the committed offsets of %s: %s", assigned, error)
            starts = {}
        try:
            positions = trio.from_thread.run_sync(self._assigned, starts, assigned)
        except trio.RunFinishedError:  # the server is gone
            return
        fetch = [_kafka(tp, offset) for tp, offset in positions.items()]
        if self._cooperative:
            consumer.incremental_assign(fetch)
        else:
            consumer.assign(fetch)
        if positions:  # a cooperative rebalance that gives nothing calls this too
            _logger.info("assigned %s", ", ".join(f"{tp} from {o}" for tp, o in positions.items()))

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaPartition]) -> None:
        revoked = [TopicPartition(p.topic, p.partition) for p in partitions]
        if revoked:
            _logger.info("revoked %s", ", ".join(map(str, revoked)))
        try:
            positions = trio.from_thread.run_sync(self._revoked, revoked)
            trio.from_thread.run(self._drain, revoked)
        except trio.RunFinishedError:  # the server is gone
            return
        if positions:
            try:
                consumer.commit(offsets=positions, asynchronous=False)
            except KafkaException as error:
                _logger.warning("the commit on revocation failed: %s", error)

    def _on_lost(self, consumer: Consumer, partitions: list[KafkaPartition]) -> None:
        lost = [TopicPartition(p.topic, p.partition) for p in partitions]
        with contextlib.suppress(trio.RunFinishedError):  # the server is gone
            trio.from_thread.run_sync(self._lost, lost)

    # -- what the callbacks do (trio thread) -------------------------------------------------------

    def _assigned(
        self, starts: dict[TopicPartition, int], assigned: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """Serve the ``assigned`` data partitions (``starts`` has their committed offsets and
        their log partitions', or nothing if they could not be read: then they are claimed
        later); returns the offset to fetch each from."""
        feed = self.feed
        self.proxy.advance(self.clock())
        gone = list(self._kept - set(assigned))
        for tp in gone:
            feed.revoke(tp)
            self._stop(tp)
        self._forget(gone)
        positions = {}
        fresh = []
        for tp in assigned:
            if tp not in self._kept:
                fresh.append(tp)
                continue
            positions[tp] = feed.fetch_position(tp)
            if tp in feed.paused:  # the client forgot the pause on unassign
                self._to_pause.append(tp)
        self._kept.clear()
        return {**positions, **self._start(starts, fresh)}

    def _start(
        self,
        starts: dict[TopicPartition, int],
        partitions: list[TopicPartition],
        *,
        paused: bool = False,
    ) -> dict[TopicPartition, int]:
        """Claim ``partitions`` from the committed offsets in ``starts`` (those missing wait,
        paused, to be claimed again soon); returns the offset to fetch each from. ``paused``:
        their data fetching is paused (a claim again), resume it from there."""
        feed = self.feed
        positions = {}
        for tp in partitions:
            start = starts.get(tp)
            log_start = starts.get(feed.log_partition(tp))
            if start is None or log_start is None:
                self._to_pause.append(tp)
                self._unserve(tp, trio.current_time() + _RETRY_S)
                positions[tp] = OFFSET_INVALID  # the client's own idea: it is paused
                continue
            self._unserve(tp, None)
            feed.assign(tp, start, log_start)
            self._log_changes.append((tp, log_start))
            positions[tp] = start
            if paused:
                self._to_resume[tp] = start
        self._kick()
        return positions

    def _revoked(self, revoked: list[TopicPartition]) -> list[KafkaPartition]:
        """Stop serving the revoked partitions (eager: keep them until the assignment);
        returns the commit due: the last positions of each, data and log (an earlier commit
        may have been lost)."""
        feed = self.feed
        self.proxy.advance(self.clock())
        positions: dict[TopicPartition, int] = {}
        for tp in revoked:
            if tp not in feed.owned:
                continue
            if self._cooperative:
                positions.update(feed.revoke(tp))
                self._stop(tp)
            else:
                positions.update(feed.positions(tp))
                self._kept.add(tp)
        self._forget(revoked)
        return [_kafka(tp, offset) for tp, offset in positions.items()]

    async def _drain(self, revoked: list[TopicPartition]) -> None:
        """Produce what the proxy wrote to the log partitions of ``revoked`` (within 10 s),
        so that the next owner reads it when it catches up."""
        producer = self._producer
        logs = [self.feed.log_partition(tp) for tp in revoked]
        with trio.move_on_after(_CLOSE_TIMEOUT_S):
            async with self._producing:
                assert producer is not None
                await self._produce(producer)
                while any(self.feed.waiting(log) for log in logs):
                    await self._produce(producer)

    def _lost(self, lost: list[TopicPartition]) -> None:
        for tp in lost:
            if tp in self.feed.owned:
                self.feed.lose(tp)
                self._stop(tp)
            self._kept.discard(tp)
        self._forget(lost)

    def _forget(self, unassigned: list[TopicPartition]) -> None:
        """The client no longer has ``unassigned``: no pause, resume or claim for them."""
        self._to_pause = [tp for tp in self._to_pause if tp not in unassigned]
        for tp in unassigned:
            self._to_resume.pop(tp, None)
            if tp in self._unserved:
                self._unserve(tp, None)


def _split(config: Mapping[str, Setting]) -> tuple[dict[str, Setting], ...]:
    """Settings for every client, for the consumers only, for the producer only."""
    common: dict[str, Setting] = {}
    consumer: dict[str, Setting] = {}
    producer: dict[str, Setting] = {}
    for name, value in config.items():
        if name.startswith("consumer."):
            consumer[name.removeprefix("consumer.")] = value
        elif name.startswith("producer."):
            producer[name.removeprefix("producer.")] = value
        else:
            common[name] = value
    return common, consumer, producer


def _by_partition(
    messages: list[Message],
) -> dict[TopicPartition, list[tuple[int, bytes | None, bytes | None]]]:
    """The messages of a poll, by partition, in offset order (errors are logged)."""
    grouped: dict[TopicPartition, list[tuple[int, bytes | None, bytes | None]]] = {}
    for message in messages:
        error = message.error()
        if error is not None:
            _logger.warning("fetch error: %s", error)
            continue
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        assert topic is not None and partition is not None and offset is not None
        key, value = message.key(), message.value()
        grouped.setdefault(TopicPartition(topic, partition), []).append(
            (offset, _bytes(key), _bytes(value))
        )
    return grouped


def _commit(consumer: Consumer, offsets: list[KafkaPartition]) -> list[KafkaPartition]:
    answer = consumer.commit(offsets=offsets, asynchronous=False)
    assert answer is not None  # a synchronous commit answers with the partitions
    return answer


async def _closed(consumer: Consumer) -> None:
    with trio.move_on_after(_CLOSE_TIMEOUT_S):
        await trio.to_thread.run_sync(consumer.close, abandon_on_cancel=True)


def _kafka(tp: TopicPartition, offset: int) -> KafkaPartition:
    return KafkaPartition(tp.topic, tp.partition, offset)


def _bytes(data: str | bytes | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data

"""A simulated async producer modelled on Sarama's: partitioning, per-partition order-keeping
retry levels, per-broker batching with a bound on requests in flight.

Pipeline (Sarama's goroutines become synchronous objects; only the network, linger timers
and back-offs take virtual time):

``send`` -> partitioner -> partition producer (one per partition: :class:`RetryLevels`, leader
lookup, back-off) -> broker producer (one per broker: :class:`BatchQueue`, requests in flight,
per-partition retry flags) -> ``ClientNetwork``.

Retries, the Sarama way. A retriable error for a partition's batch (``Errors.is_retriable``,
or the client's request timeout, reported as REQUEST_TIMED_OUT) makes the broker producer
(1) set a retry flag for the partition, (2) send the batch's messages *and every message of
that partition still queued for the broker* back, each with its retry count + 1, and
(3) bounce any further message of the partition until the partition producer's chaser
arrives. The partition producer raises its high watermark, sends the chaser down the old
path, backs off ``retry_backoff_ms``, refreshes metadata, re-sends the retried messages and
holds newer ones in per-level buffers until the chaser comes back (see
:mod:`sim.clients.retry_levels`). A message whose retry count reached ``retry_max`` gets its
error reported instead (``MessageAcked`` with the error); errors that are not retriable are
reported at once.

Why Sarama's way and not Kafka's idempotent producer: the study's producer is a Sarama
application, and Sarama's scheme lives entirely in the client (the broker model does check
idempotent producers' ids and sequence numbers, :mod:`replica.producer_state`, for the wire
server's clients; this producer sends none). One deliberate difference from Sarama: a partition
never has more than one batch in flight (it is *muted* until the response, like Kafka's
producer with ``max.in.flight.requests.per.connection=1``);
``max_in_flight_requests_per_connection`` still bounds the requests per broker, which can carry
batches of different partitions. Without the mute, a later batch could be appended while an
earlier one of the same partition is being retried, and no client-side scheme can undo that
reordering. Retries keep the order of first appearance in the log; a batch that was appended
but whose response was lost or late (client timeout) or said NOT_ENOUGH_REPLICAS_AFTER_APPEND
is appended again (at-least-once: duplicates).

acks=0: the request is sent and its messages are reported acknowledged at once (offset -1);
no response is expected, nothing is muted or retried.

Columns, and a fast lane. A batch keeps its messages as columns (see
:mod:`sim.clients.batching`), sent as one :class:`replica.records.RecordColumns` and reported
as one :class:`~sim.clients.events.MessagesAcked`; no :class:`~replica.records.Record` is built.
A message whose partition producer is idle (no retry in progress, nothing queued, leader
known) and whose broker producer is not bouncing the partition goes straight into its batch;
only the others travel through the pipeline as :class:`_Message` objects, as does every
message of a batch that is retried.

Arrivals planned ahead. Besides :meth:`Producer.send`, a producer can take its messages from
an arrival source (:meth:`Producer.attach`; the simulator's workload driver is one): columns
of future arrival times, keys and sizes, with no engine event per message. What a message
does on arrival depends only on the producer's state, and that state changes only in the
producer's own callbacks (responses, time-outs, linger timers, back-offs, metadata
refreshes). So at the end of each callback the producer looks ahead for the first *critical*
arrival, one that starts or fills a batch or whose partition is not in the fast lane, and
schedules one wake-up at its time; at the start of each callback (and the wake-up) it first
adds every arrival due by then: those before now only join an open batch, which the look-ahead
proved changes nothing else, and those at now go the way :meth:`Producer.send` would. The
arrivals and the look-ahead live in a :class:`~sim.clients.arrival_plan.ArrivalPlan`, per
partition and incremental: the producer invalidates a partition's plan wherever it changes the
partition's open batch or fast-lane state. Requests leave at the same times with the same
records as with a ``send`` per arrival (the property
``tests/sim/clients/test_producer_arrivals.py`` checks); only events of one instant may be
reported in another order. Reads from outside (:attr:`Producer.in_flight_messages`,
:meth:`Producer.queued_messages`) add the arrivals due first.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Final

from apis.produce import ProduceRequest, ProduceResponse
from replica.errors import Errors
from replica.records import RECORD_BATCH_OVERHEAD, Record, RecordColumns
from replica.types import NO_ERROR, UNKNOWN_OFFSET, TopicPartition, canonical_partition
from sim.clients.arrival_plan import ArrivalPlan
from sim.clients.batching import BatchQueue, ProducerBatch
from sim.clients.errors import ClientConfigError, ClientStateError
from sim.clients.events import (
    ClientRecorder,
    MessageAcked,
    MessagesAcked,
    MessageSent,
    MessagesSent,
)
from sim.clients.network import ClientNetwork, MetadataView
from sim.clients.partitioner import Partitioner
from sim.clients.producer_config import ProducerConfig
from sim.clients.records import MESSAGE_ID_HEADER, message_record_size
from sim.clients.retry_levels import RetryLevels, Route
from sim.core.engine import Event, Scheduler

__all__ = ["ArrivalSource", "Producer"]

_US_PER_MS: Final = 1000


class _Message:
    """A message (or a chaser) on its way through the pipeline outside the fast lane."""

    __slots__ = (
        "chaser",
        "key",
        "message_id",
        "retries",
        "size",
        "timestamp_ms",
        "tp",
        "value_size",
    )

    def __init__(
        self,
        message_id: int,
        tp: TopicPartition,
        key: bytes | None,
        value_size: int,
        timestamp_ms: int,
        size: int,
        *,
        chaser: bool = False,
        retries: int = 0,
    ) -> None:
        self.message_id = message_id
        self.tp = tp
        self.key = key
        self.value_size = value_size
        self.timestamp_ms = timestamp_ms
        self.size = size
        self.retries = retries
        self.chaser = chaser


ArrivalSource = Callable[
    [], tuple[str, Sequence[int], Sequence[bytes | None], Sequence[int]] | None
]
"""Gives the next arrivals of messages for :meth:`Producer.attach`: ``(topic, times, keys,
value_sizes)`` columns, times in microseconds, non-decreasing and after every time given
before; None (or empty columns) when there are no more."""


class Producer:
    """An async producer (sans-IO, on the simulator's clock).

    ``send`` never blocks and returns the message's id; the outcome of every message is
    reported exactly once to ``recorder``, as a :class:`~sim.clients.events.MessageAcked` or
    within a :class:`~sim.clients.events.MessagesAcked` (``error == Errors.NONE`` on success),
    after one :class:`~sim.clients.events.MessageSent`.

    Guarantees: per partition, messages are appended in ``send`` order (first appearances;
    retries can duplicate); at most ``max_in_flight_requests_per_connection`` requests await a
    response per broker; at most one batch per partition is in flight.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        network: ClientNetwork,
        metadata: MetadataView,
        config: ProducerConfig | None = None,
        *,
        rng: random.Random,
        recorder: ClientRecorder,
        client_id: str = "producer",
        message_ids: Iterator[int] | None = None,
    ) -> None:
        self.config = config if config is not None else ProducerConfig()
        self.client_id = client_id
        self._scheduler = scheduler
        self._network = network
        self._metadata = metadata
        self._recorder = recorder
        self._partitioner = Partitioner(self.config.partitioner, rng)
        self._ids = message_ids if message_ids is not None else itertools.count()
        self._partition_producers: dict[TopicPartition, _PartitionProducer] = {}
        self._broker_producers: dict[int, _BrokerProducer] = {}
        self._awaiting_topic: dict[str, list[_Message]] = {}
        self._source: ArrivalSource | None = None
        self._source_topic = ""
        self._plan = ArrivalPlan(self.config, self._open_batch)
        self._wakeup: Event | None = None
        self._wakeup_at = -1  # the wake-up's time, while there is one
        self._deferred_at = -1  # the instant the wake-up last made way for other events
        self._in_flight_messages = 0

    # -- public API ---------------------------------------------------------------------------

    def send(
        self, topic: str, key: bytes | None, value_size: int, *, partition: int | None = None
    ) -> int:
        """Produce a message of ``value_size`` bytes; return its message id.

        ``partition`` overrides the partitioner. If the topic's partition count is not known
        yet, metadata is refreshed first; a topic still unknown after that fails the message
        with UNKNOWN_TOPIC_OR_PARTITION. Raises ClientConfigError for a negative size or
        partition.
        """
        if value_size < 0 or (partition is not None and partition < 0):
            raise ClientConfigError(
                f"value_size and partition must be >= 0, got {value_size} and {partition}"
            )
        self._enter()
        message_id = next(self._ids)
        size = message_record_size(key, value_size)
        self._in_flight_messages += 1
        if partition is None:
            partition = self._partition_of(topic, key)
        self._recorder.record(
            MessageSent(self._scheduler.now, self.client_id, message_id, topic, partition, size)
        )
        self._dispatch(message_id, canonical_partition(topic, partition), key, value_size, size)
        self._leave()
        return message_id

    def attach(self, source: ArrivalSource) -> None:
        """Produce the messages ``source`` describes, each at its arrival time, exactly as if
        :meth:`send` were called then (see the module doc); ``source`` is asked for more
        while the producer plans ahead. Raises ClientStateError if a source is attached."""
        if self._source is not None:
            raise ClientStateError(f"{self.client_id} already has an arrival source")
        self._source = source
        self._leave()

    def detach(self) -> None:
        """Stop taking arrivals: those up to now are sent, the later ones dropped."""
        self._enter()
        self._source = None
        self._plan.drop_pending()
        if self._wakeup is not None:
            self._wakeup.cancel()
            self._wakeup = None

    @property
    def in_flight_messages(self) -> int:
        """Messages sent whose outcome has not been reported yet."""
        self._settle()
        return self._in_flight_messages

    def queued_messages(self) -> int:
        """Messages waiting in broker producers' batches (not yet in a request)."""
        self._settle()
        return sum(bp.queued_messages() for bp in self._broker_producers.values())

    # -- pipeline -----------------------------------------------------------------------------

    def _partition_of(self, topic: str, key: bytes | None) -> int:
        """The partitioner's choice, or -1 while the topic's partition count is unknown."""
        count = self._metadata.partition_count(topic)
        return -1 if count is None else self._partitioner.partition(topic, key, count)

    def _dispatch(
        self, message_id: int, tp: TopicPartition, key: bytes | None, value_size: int, size: int
    ) -> None:
        """Route a new message (partition -1: wait for the topic's metadata first)."""
        timestamp_ms = self._scheduler.now // _US_PER_MS
        if tp.partition < 0:
            topic = tp.topic
            waiting = self._awaiting_topic.setdefault(topic, [])
            waiting.append(_Message(message_id, tp, key, value_size, timestamp_ms, size))
            if len(waiting) == 1:
                self._metadata.refresh(lambda: self._topic_known(topic))
            return
        if size + RECORD_BATCH_OVERHEAD > self.config.max_request_size:
            msg = _Message(message_id, tp, key, value_size, timestamp_ms, size)
            self._finish(msg, UNKNOWN_OFFSET, Errors.MESSAGE_TOO_LARGE)
            return
        pp = self._partition_producer(tp)
        output = pp.fast_lane()
        if output is not None and tp not in output.retrying:
            output.append(tp, message_id, key, value_size, timestamp_ms, 0, size)
        else:
            pp.enqueue([_Message(message_id, tp, key, value_size, timestamp_ms, size)])

    # -- arrivals planned ahead ----------------------------------------------------------------

    def _enter(self) -> bool:
        """At the start of every callback: send the arrivals before now (those at now come
        after the callbacks of this instant, with the wake-up). True if there were any."""
        now = self._scheduler.now
        first = self._plan.first_time()
        if first is not None and first < now:
            self._catch_up(now - 1, now)
            return True
        return False

    def _settle(self) -> None:
        """Before a read from outside: send the arrivals due by now, and plan again."""
        if self._enter():
            self._leave()

    def _leave(self) -> None:
        """At the end of every callback: be woken at the next critical arrival."""
        if self._source is None:
            return
        at = self._next_critical()
        wakeup = self._wakeup
        if wakeup is not None:
            if at is not None and at == self._wakeup_at and wakeup.pending:
                return
            wakeup.cancel()
        self._wakeup = None if at is None else self._wake_at(at)

    def _wake_at(self, at: int) -> Event:
        """Schedule the wake-up at ``at``."""
        self._wakeup_at = at
        return self._scheduler.call_at(at, self._woken)

    def _woken(self) -> None:
        scheduler = self._scheduler
        now = scheduler.now
        if self._deferred_at != now and scheduler.more_due_now():
            # Other events of this instant are queued: arrivals come after them. Once per
            # instant: two producers woken at one instant would defer to each other forever.
            self._deferred_at = now
            self._wakeup = self._wake_at(now)
            return
        self._wakeup = None
        self._catch_up(now, now)
        self._leave()

    def _catch_up(self, until: int, now: int) -> None:
        """Send the pending arrivals due by ``until`` (``now`` or ``now - 1``): those before
        now silently (the plan proved they only join an open batch), those at now as
        :meth:`send` would."""
        due = self._plan.take(until, now, self._ids)
        if due is None:
            return
        ids = due.message_ids
        self._in_flight_messages += len(ids)
        self._recorder.record(
            MessagesSent(
                self.client_id, self._source_topic, ids, due.times, due.partitions, due.sizes
            )
        )
        keys = due.keys
        for i, tp in enumerate(due.tps, due.joined):
            if tp.partition < 0:
                tp = canonical_partition(tp.topic, self._partition_of(tp.topic, keys[i]))
            self._dispatch(ids[i], tp, keys[i], due.value_sizes[i], due.sizes[i])

    def _next_critical(self) -> int | None:
        """The time of the first pending arrival that must be sent at its own time (see
        :mod:`sim.clients.arrival_plan`), taking more arrivals from the source until one is
        found. None if the source has no more."""
        at = self._plan.next_critical()
        while at is None and self._refill():
            at = self._plan.next_critical()
        return at

    def _open_batch(self, tp: TopicPartition) -> ProducerBatch | None:
        """The batch a new message of ``tp`` would join if sent now without anything else
        happening (see :class:`~sim.clients.arrival_plan.ArrivalPlan`): ``tp``'s newest batch
        if it is in the fast lane and the batch is not full; else None."""
        pp = self._partition_producers.get(tp)
        output = None if pp is None else pp.fast_lane()
        if output is None or tp in output.retrying:
            return None
        last = output.last_batch(tp)
        return None if last is None or last.full else last

    def _refill(self) -> bool:
        """Ask the source for more arrivals; False if it has none."""
        source = self._source
        chunk = None if source is None else source()
        if chunk is None:
            return False
        topic, times, keys, value_sizes = chunk
        self._source_topic = topic
        count = self._metadata.partition_count(topic)
        partitions = (
            [-1] * len(keys) if count is None else self._partitioner.partitions(topic, keys, count)
        )
        self._plan.extend(topic, partitions, times, keys, value_sizes)
        return bool(times)

    def _topic_known(self, topic: str) -> None:
        self._enter()
        waiting = self._awaiting_topic.pop(topic, [])
        count = self._metadata.partition_count(topic)
        for msg in waiting:
            if count is None:
                self._finish(msg, UNKNOWN_OFFSET, Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            msg.tp = canonical_partition(topic, self._partitioner.partition(topic, msg.key, count))
            if msg.size + RECORD_BATCH_OVERHEAD > self.config.max_request_size:
                self._finish(msg, UNKNOWN_OFFSET, Errors.MESSAGE_TOO_LARGE)
                continue
            self._partition_producer(msg.tp).enqueue([msg])
        self._leave()

    def _disconnected(self, tps: list[TopicPartition], _response: object) -> None:
        """An acks=0 produce got an answer: Kafka sends none, so this is its connection
        breaking (lost on the network, or closed by the broker because the produce failed,
        e.g. NOT_LEADER_OR_FOLLOWER): the partitions it carried look their leader up again
        (a metadata refresh) before their next message is sent."""
        self._enter()
        for tp in tps:
            self._partition_producers[tp].leader_lost()
        self._leave()

    def _partition_producer(self, tp: TopicPartition) -> _PartitionProducer:
        pp = self._partition_producers.get(tp)
        if pp is None:
            pp = self._partition_producers[tp] = _PartitionProducer(self, tp)
        return pp

    def _broker_producer(self, broker_id: int) -> _BrokerProducer:
        bp = self._broker_producers.get(broker_id)
        if bp is None:
            bp = self._broker_producers[broker_id] = _BrokerProducer(self, broker_id)
        return bp

    def _finish(self, msg: _Message, offset: int, error: Errors) -> None:
        self._in_flight_messages -= 1
        tp = msg.tp
        self._recorder.record(
            MessageAcked(
                self._scheduler.now,
                self.client_id,
                msg.message_id,
                tp.topic,
                tp.partition,
                offset,
                error,
                msg.retries + 1,
            )
        )

    def _finish_batch(self, batch: ProducerBatch, base_offset: int, error: Errors) -> None:
        """Report every message of ``batch`` done; the event takes the batch's columns (a
        finished batch is not used again)."""
        self._in_flight_messages -= len(batch)
        tp = batch.tp
        self._recorder.record(
            MessagesAcked(
                self._scheduler.now,
                self.client_id,
                tp.topic,
                tp.partition,
                batch.message_ids,
                base_offset,
                error,
                [retries + 1 for retries in batch.retries],
            )
        )

    def _retry(self, messages: list[_Message], error: Errors) -> None:
        """Sarama's ``retryMessages`` + retry handler: count the retry (or give up) and hand
        the messages back to their partition producers, in order."""
        by_partition: dict[TopicPartition, list[_Message]] = {}
        for msg in messages:
            if not msg.chaser and msg.retries >= self.config.retry_max:
                self._finish(msg, UNKNOWN_OFFSET, error)
                continue
            msg.retries += 1
            by_partition.setdefault(msg.tp, []).append(msg)
        for tp, batch in by_partition.items():
            self._partition_producers[tp].enqueue(batch)


class _PartitionProducer:
    """Sarama's ``partitionProducer``: routes one partition's messages to its leader's broker
    producer, keeping order across retries with :class:`RetryLevels`."""

    __slots__ = (
        "_blocked",
        "_input",
        "_levels",
        "_needs_refresh",
        "_outbox",
        "_output",
        "_producer",
        "_pumping",
        "tp",
    )

    def __init__(self, producer: Producer, tp: TopicPartition) -> None:
        self._producer = producer
        self.tp = tp
        self._levels: RetryLevels[_Message] = RetryLevels(producer.config.retry_max)
        self._input: deque[_Message] = deque()
        self._outbox: deque[_Message] = deque()
        self._output: _BrokerProducer | None = None
        self._needs_refresh = False
        self._blocked = False
        self._pumping = False

    def fast_lane(self) -> _BrokerProducer | None:
        """The broker producer a new message may be appended to directly (it would take the
        same way through :meth:`enqueue`), or None if it must go through the pipeline."""
        if (
            self._levels.high_watermark
            or self._blocked
            or self._pumping
            or self._input
            or self._outbox
        ):
            return None
        return self._output

    def leader_lost(self) -> None:
        """The connection to the leader broke: refresh metadata before sending on (unless a
        refresh or a back-off is already under way)."""
        self._producer._plan.invalidate(self.tp)
        if not self._blocked:
            self._output = None
            self._needs_refresh = True

    def enqueue(self, messages: list[_Message]) -> None:
        self._producer._plan.invalidate(self.tp)
        self._input.extend(messages)
        self._pump()

    def _pump(self) -> None:
        if self._pumping:
            return  # the running loop below picks the new input up
        self._pumping = True
        try:
            while not self._blocked:
                if self._outbox:
                    if self._output is None:
                        self._find_leader()
                    else:
                        self._output.input(self._outbox.popleft())
                    continue
                if not self._input:
                    break
                msg = self._input.popleft()
                route, items = self._levels.dispatch(msg, msg.retries, msg.chaser)
                if route is Route.NEW_LEVEL:
                    self._send_chaser(self._levels.high_watermark - 1)
                    self._output = None
                    self._needs_refresh = True
                    self._outbox.extend(items)
                    self._sleep()
                elif route is Route.SEND:
                    self._outbox.extend(items)
        finally:
            self._pumping = False

    def _send_chaser(self, level: int) -> None:
        chaser = _Message(-1, self.tp, None, 0, -1, 0, chaser=True, retries=level)
        if self._output is not None:
            self._output.input(chaser)
        else:  # no old path to chase: everything sent on it is already back
            self._producer._retry([chaser], Errors.NONE)

    def _find_leader(self) -> None:
        if not self._needs_refresh:
            leader = self._producer._metadata.leader_for(self.tp)
            if leader is not None:
                self._output = self._producer._broker_producer(leader)
                return
        self._blocked = True
        self._needs_refresh = False
        self._producer._metadata.refresh(self._refreshed)

    def _refreshed(self) -> None:
        producer = self._producer
        producer._enter()
        producer._plan.invalidate(self.tp)
        leader = producer._metadata.leader_for(self.tp)
        if leader is None:
            # Sarama returns the error for what it was about to send, then backs off.
            while self._outbox:
                producer._finish(
                    self._outbox.popleft(), UNKNOWN_OFFSET, Errors.LEADER_NOT_AVAILABLE
                )
            self._needs_refresh = True
            self._sleep()
        else:
            self._output = producer._broker_producer(leader)
            self._blocked = False
            self._pump()
        producer._leave()

    def _sleep(self) -> None:
        self._blocked = True
        self._producer._scheduler.call_later(
            self._producer.config.retry_backoff_ms * _US_PER_MS, self._wake
        )

    def _wake(self) -> None:
        self._producer._enter()
        self._producer._plan.invalidate(self.tp)
        self._blocked = False
        self._pump()
        self._producer._leave()


class _InFlight:
    """A produce request awaiting its response (or its client-side timeout): ``timer`` is its
    timeout event until either comes, None afterwards (which also breaks the reference cycle
    flight -> timer -> callback -> flight)."""

    __slots__ = ("batches", "timer")

    def __init__(self, batches: list[ProducerBatch]) -> None:
        self.batches = batches
        self.timer: Event | None = None


class _BrokerProducer:
    """Sarama's ``brokerProducer``: batches messages for one broker and sends requests."""

    __slots__ = (
        "_broker_id",
        "_in_flight",
        "_linger_us",
        "_max_in_flight",
        "_muted",
        "_producer",
        "_queue",
        "retrying",
    )

    def __init__(self, producer: Producer, broker_id: int) -> None:
        config = producer.config
        self._producer = producer
        self._broker_id = broker_id
        self._linger_us = config.linger_ms * _US_PER_MS
        self._max_in_flight = config.max_in_flight_requests_per_connection
        self._queue = BatchQueue(
            batch_size=config.batch_size,
            flush_messages=config.flush_messages,
            linger_us=self._linger_us,
            max_request_size=config.max_request_size,
        )
        self._muted: set[TopicPartition] = set()
        self.retrying: dict[TopicPartition, Errors] = {}
        """Partitions whose messages are bounced back (retried) until their chaser comes."""
        self._in_flight = 0

    def queued_messages(self) -> int:
        return self._queue.queued_messages()

    def input(self, msg: _Message) -> None:
        producer = self._producer
        if msg.chaser:
            # Everything sent here before the chaser has been answered or bounced.
            self.retrying.pop(msg.tp, None)
            producer._plan.invalidate(msg.tp)
            producer._retry([msg], Errors.NONE)
            return
        error = self.retrying.get(msg.tp)
        if error is not None:
            producer._retry([msg], error)
            return
        self.append(
            msg.tp, msg.message_id, msg.key, msg.value_size, msg.timestamp_ms, msg.retries,
            msg.size,
        )  # fmt: skip

    def append(
        self,
        tp: TopicPartition,
        message_id: int,
        key: bytes | None,
        value_size: int,
        timestamp_ms: int,
        retries: int,
        size: int,
    ) -> None:
        """Add a message to ``tp``'s batches (``tp`` not in :attr:`retrying`) and send what is
        ready."""
        producer = self._producer
        now = producer._scheduler.now
        created = self._queue.append(
            tp, message_id, key, value_size, timestamp_ms, retries, size, now
        )
        producer._plan.invalidate(tp)
        linger_us = self._linger_us
        if created is not None and linger_us > 0 and not created.full:
            producer._scheduler.call_at(now + linger_us, self._linger_expired)
        self._maybe_send()

    def last_batch(self, tp: TopicPartition) -> ProducerBatch | None:
        """``tp``'s newest batch, or None."""
        return self._queue.last_batch(tp)

    def _linger_expired(self) -> None:
        producer = self._producer
        producer._enter()
        self._maybe_send()
        producer._leave()

    def _maybe_send(self) -> None:
        producer = self._producer
        now = producer._scheduler.now
        while self._in_flight < self._max_in_flight and self._queue.ready(now, self._muted):
            batches = self._queue.drain(self._muted)
            for batch in batches:
                producer._plan.invalidate(batch.tp)
            self._send(batches)

    def _send(self, batches: list[ProducerBatch]) -> None:
        producer = self._producer
        config = producer.config
        records: dict[TopicPartition, Sequence[Record]] = {}
        for batch in batches:
            keys = batch.keys
            records[batch.tp] = RecordColumns(
                MESSAGE_ID_HEADER,
                batch.message_ids,
                batch.value_sizes,
                batch.timestamps,
                None if keys.count(None) == len(keys) else keys,
            )
        request = ProduceRequest(config.acks, config.ack_timeout_ms, records)
        if config.acks == 0:
            tps = [batch.tp for batch in batches]
            producer._network.send(self._broker_id, request, partial(producer._disconnected, tps))
            for batch in batches:
                producer._finish_batch(batch, UNKNOWN_OFFSET, Errors.NONE)
            return
        flight = _InFlight(batches)
        self._muted.update(batch.tp for batch in batches)
        self._in_flight += 1
        flight.timer = producer._scheduler.call_later(
            config.request_timeout_ms * _US_PER_MS, lambda: self._timed_out(flight)
        )
        producer._network.send(
            self._broker_id, request, lambda response: self._answered(flight, response)
        )

    def _answered(self, flight: _InFlight, response: ProduceResponse) -> None:
        if flight.timer is None:
            return  # answered after the client gave up on it
        producer = self._producer
        producer._enter()
        flight.timer.cancel()
        flight.timer = None
        self._in_flight -= 1
        for batch in flight.batches:
            self._muted.discard(batch.tp)
            result = response.responses.get(batch.tp)
            error = result.error if result is not None else Errors.UNKNOWN_SERVER_ERROR
            if error is NO_ERROR:
                assert result is not None
                producer._finish_batch(batch, result.base_offset, NO_ERROR)
            elif error.is_retriable:
                self._retry_partition(batch, error)
            else:
                producer._finish_batch(batch, UNKNOWN_OFFSET, error)
        self._maybe_send()
        producer._leave()

    def _timed_out(self, flight: _InFlight) -> None:
        producer = self._producer
        producer._enter()
        flight.timer = None
        self._in_flight -= 1
        for batch in flight.batches:
            self._muted.discard(batch.tp)
            self._retry_partition(batch, Errors.REQUEST_TIMED_OUT)
        self._maybe_send()
        producer._leave()

    def _retry_partition(self, batch: ProducerBatch, error: Errors) -> None:
        tp = batch.tp
        self.retrying[tp] = error
        self._producer._plan.invalidate(tp)
        messages = [
            _Message(message_id, tp, key, value_size, timestamp_ms, size, retries=retries)
            for queued in [batch, *self._queue.drop_partition(tp)]
            for message_id, key, value_size, timestamp_ms, retries in zip(
                queued.message_ids,
                queued.keys,
                queued.value_sizes,
                queued.timestamps,
                queued.retries,
                strict=True,
            )
            for size in (message_record_size(key, value_size),)
        ]
        self._producer._retry(messages, error)

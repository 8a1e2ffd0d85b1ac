"""Per-partition batching of a producer's messages for one broker (the accumulator).

Each partition led by the broker has a queue of batches; messages are appended to the last
one. A batch is *full* when it reaches ``flush_messages`` messages (if > 0) or ``batch_size``
bytes, or when the next message would not fit (a message larger than ``batch_size`` gets a
batch of its own). A batch is *ready* when it is full or has lingered ``linger_us`` since its
first message (``linger_us = 0``: ready at once).

When any unmuted partition's first batch is ready, a request may be sent, and it takes the
first batch of *every* unmuted partition (ready or not), up to ``max_request_size`` bytes:
Kafka's drain, and the effect of Sarama's per-broker flush. A partition is muted while one of
its batches is in flight, so a partition never has two batches in flight (see
:mod:`sim.clients.producer` for why).

Sizes follow :mod:`replica.records`: 61 bytes of batch header plus each record's size. A
batch keeps its messages as columns (ids, keys, value sizes, timestamps, retry counts), which
become the request's :class:`replica.records.RecordColumns` as they are.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

from replica.records import RECORD_BATCH_OVERHEAD
from replica.types import TopicPartition

__all__ = ["BatchQueue", "ProducerBatch"]


class ProducerBatch:
    """Messages for one partition that travel in one produce request, as columns: message
    ``i`` has id ``message_ids[i]``, key ``keys[i]``, a value of ``value_sizes[i]`` bytes,
    create time ``timestamps[i]`` (ms) and has been retried ``retries[i]`` times."""

    __slots__ = (
        "created_us",
        "full",
        "keys",
        "message_ids",
        "retries",
        "size_bytes",
        "timestamps",
        "tp",
        "value_sizes",
    )

    def __init__(self, tp: TopicPartition, created_us: int) -> None:
        self.tp = tp
        self.message_ids: list[int] = []
        self.keys: list[bytes | None] = []
        self.value_sizes: list[int] = []
        self.timestamps: list[int] = []
        self.retries: list[int] = []
        self.size_bytes = RECORD_BATCH_OVERHEAD
        self.created_us = created_us
        self.full = False

    def __len__(self) -> int:
        return len(self.message_ids)

    def add(
        self,
        message_id: int,
        key: bytes | None,
        value_size: int,
        timestamp_ms: int,
        retries: int,
        size: int,
    ) -> None:
        """Append a message of ``size`` bytes (as a record) to the columns; whether that
        fills the batch is the caller's to tell (:meth:`BatchQueue.append`)."""
        self.message_ids.append(message_id)
        self.keys.append(key)
        self.value_sizes.append(value_size)
        self.timestamps.append(timestamp_ms)
        self.retries.append(retries)
        self.size_bytes += size


class BatchQueue:
    """The batches waiting to be sent to one broker, per partition, in arrival order."""

    __slots__ = ("_batch_size", "_flush_messages", "_linger_us", "_max_request_size", "_queues")

    def __init__(
        self, *, batch_size: int, flush_messages: int, linger_us: int, max_request_size: int
    ) -> None:
        self._batch_size = batch_size
        self._flush_messages = flush_messages
        self._linger_us = linger_us
        self._max_request_size = max_request_size
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}

    def append(
        self,
        tp: TopicPartition,
        message_id: int,
        key: bytes | None,
        value_size: int,
        timestamp_ms: int,
        retries: int,
        size: int,
        now: int,
    ) -> ProducerBatch | None:
        """Append a message (``size`` bytes in the batch) to ``tp``'s last batch, or to a new
        one.

        Returns the new batch when one was started (so the caller can arm its linger timer),
        else None.
        """
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        last = queue[-1] if queue else None
        created: ProducerBatch | None = None
        if (
            last is not None
            and not last.full
            and last.message_ids
            and (last.size_bytes + size > self._batch_size)
        ):
            last.full = True
        if last is None or last.full:
            last = created = ProducerBatch(tp, now)
            queue.append(last)
        last.add(message_id, key, value_size, timestamp_ms, retries, size)
        if last.size_bytes >= self._batch_size or (
            self._flush_messages > 0 and len(last) >= self._flush_messages
        ):
            last.full = True
        return created

    def last_batch(self, tp: TopicPartition) -> ProducerBatch | None:
        """``tp``'s newest batch, or None if it has none."""
        queue = self._queues.get(tp)
        return queue[-1] if queue else None

    def ready(self, now: int, muted: Collection[TopicPartition]) -> bool:
        """True if some unmuted partition's first batch is full or has lingered enough."""
        for tp, queue in self._queues.items():
            if tp in muted:
                continue
            head = queue[0]
            if head.full or len(queue) > 1 or now - head.created_us >= self._linger_us:
                return True
        return False

    def drain(self, muted: Collection[TopicPartition]) -> list[ProducerBatch]:
        """Remove and return the first batch of every unmuted partition, in partition arrival
        order, stopping before ``max_request_size`` would be exceeded (at least one batch)."""
        drained: list[ProducerBatch] = []
        total = 0
        for tp in list(self._queues):
            if tp in muted:
                continue
            queue = self._queues[tp]
            head = queue[0]
            if drained and total + head.size_bytes > self._max_request_size:
                break
            drained.append(queue.popleft())
            total += head.size_bytes
            # Rotate: a partition that still has batches goes last, so a request size limit
            # cannot starve the partitions behind it.
            del self._queues[tp]
            if queue:
                self._queues[tp] = queue
        return drained

    def drop_partition(self, tp: TopicPartition) -> list[ProducerBatch]:
        """Remove and return every batch of ``tp``, in order."""
        return list(self._queues.pop(tp, ()))

    def queued_messages(self) -> int:
        """Messages waiting in all batches."""
        return sum(len(b) for queue in self._queues.values() for b in queue)

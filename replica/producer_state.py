"""ProducerStateManager: a log's idempotent producers, so that a retried batch is appended once.

An idempotent producer (KIP-98; the default of Kafka's Java client since 3.0 and of
kafka-python 3) gets a producer id and epoch from InitProducerId and numbers its records per
partition: each batch carries the id, the epoch and the sequence number of its first record
(:class:`~replica.records.ProducerBatchInfo`). A producer that gets no answer to a produce
sends the same batch again; the log tells such a retry from new data by those numbers. This is
Kafka's ``ProducerStateManager`` and ``ProducerAppendInfo`` for producers outside transactions:

* **State.** Per producer id, a :class:`ProducerStateEntry`: its current epoch and the
  :class:`BatchMetadata` of its last :data:`NUM_BATCHES_TO_RETAIN` batches (first and last
  sequence, first and last offset, max timestamp). Every batch appended updates it
  (:meth:`ProducerStateManager.update`), a leader's and a follower's alike, so a follower that
  becomes leader already knows what its producers wrote.
* **Duplicates.** A leader append in the entry's epoch whose sequence range is one of the
  retained batches' is a duplicate (:meth:`ProducerStateManager.find_duplicate`): the log
  appends nothing and answers with the offsets the batch got the first time. Five batches
  suffice because a producer has at most five requests in flight per partition.
* **Checks** (leader appends only, :meth:`ProducerStateManager.check`): an epoch older than the
  entry's is INVALID_PRODUCER_EPOCH (a fenced producer); a newer epoch must start at sequence
  0; in the same epoch the first sequence must follow the entry's last one (wrapping at
  ``2**31 - 1``), else OUT_OF_ORDER_SEQUENCE_NUMBER: a batch is missing, and the producer must
  not fill the gap with later data. A producer the log holds no state for (new, or expired)
  may start at any sequence.
* **Truncation.** A log cut back drops the metadata of the batches removed
  (:meth:`ProducerStateManager.truncate`); an entry left with none is rebuilt from the log's
  remaining batches of that producer, or dropped if there are none. (Kafka reloads a snapshot
  taken at or before the new log end; the result differs only for a producer whose remaining
  batches retention has already deleted, which Kafka still knows and this log forgets.)
* **Expiry.** Retention deleting a producer's batches keeps its entry (as Kafka does since 2.4,
  KAFKA-7190); an entry whose last batch's timestamp is ``producer.id.expiration.ms`` old goes
  (:meth:`ProducerStateManager.remove_expired_producers`, run periodically by the broker).

The log owns one manager (:attr:`replica.log.Log.producer_state`) and calls it; nothing here
reads a clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Final, NamedTuple

from replica.errors import Errors
from replica.exceptions import ApiError
from replica.records import (
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    ProducerBatchInfo,
    RecordBatch,
    increment_sequence,
)
from replica.types import TopicPartition

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "BatchMetadata",
    "ProducerStateEntry",
    "ProducerStateManager",
]

#: Batches remembered per producer for duplicate detection (Kafka's
#: ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``: max.in.flight.requests.per.connection <= 5).
NUM_BATCHES_TO_RETAIN: Final = 5
_MAX_SEQUENCE: Final = 2**31 - 1


class BatchMetadata(NamedTuple):
    """One appended batch of a producer: its sequence range, its offsets and its max
    timestamp."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class ProducerStateEntry:
    """What a log knows of one producer: its epoch and its last batches, oldest first
    (never empty while the entry is held)."""

    __slots__ = ("batches", "producer_epoch", "producer_id")

    def __init__(self, producer_id: int, producer_epoch: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batches: deque[BatchMetadata] = deque(maxlen=NUM_BATCHES_TO_RETAIN)

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(id={self.producer_id}, epoch={self.producer_epoch}, "
            f"batches={list(self.batches)})"
        )

    @property
    def last_seq(self) -> int:
        """The sequence number of the producer's last record here (``NO_SEQUENCE``: none)."""
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_timestamp(self) -> int:
        """The max timestamp of the producer's last batch (what expiry counts from)."""
        return self.batches[-1].timestamp if self.batches else -1

    def add(self, batch: RecordBatch) -> None:
        """Remember ``batch``; a batch of another epoch first forgets the previous ones."""
        if batch.producer_epoch != self.producer_epoch:
            self.producer_epoch = batch.producer_epoch
            self.batches.clear()
        self.batches.append(
            BatchMetadata(
                batch.base_sequence,
                batch.last_sequence,
                batch.base_offset,
                batch.last_offset,
                batch.max_timestamp,
            )
        )


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _MAX_SEQUENCE)


class ProducerStateManager:
    """The idempotent producers of the log of ``topic_partition`` (see the module
    docstring)."""

    __slots__ = ("_producers", "topic_partition")

    def __init__(self, topic_partition: TopicPartition) -> None:
        self.topic_partition = topic_partition
        self._producers: dict[int, ProducerStateEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def __repr__(self) -> str:
        return f"ProducerStateManager({self.topic_partition}, producers={len(self._producers)})"

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        """The state of ``producer_id``, None if the log holds none (read it; do not change
        it)."""
        return self._producers.get(producer_id)

    def find_duplicate(self, producer: ProducerBatchInfo, count: int) -> BatchMetadata | None:
        """The retained batch that a batch of ``count`` records stamped ``producer`` repeats
        (same epoch, same sequence range), or None."""
        entry = self._producers.get(producer.producer_id)
        if entry is None or entry.producer_epoch != producer.producer_epoch:
            return None
        last_seq = increment_sequence(producer.base_sequence, count - 1)
        for metadata in entry.batches:
            if metadata.first_seq == producer.base_sequence and metadata.last_seq == last_seq:
                return metadata
        return None

    def check(self, producer: ProducerBatchInfo) -> None:
        """Check that a leader may append a new (not duplicate) batch stamped ``producer``.

        Raises:
            ApiError: INVALID_PRODUCER_EPOCH (an epoch older than the producer's current
                one), OUT_OF_ORDER_SEQUENCE_NUMBER (a new epoch not starting at 0, or a
                sequence that does not follow the producer's last one).
        """
        entry = self._producers.get(producer.producer_id)
        if entry is None:
            return
        epoch, first_seq = producer.producer_epoch, producer.base_sequence
        if epoch < entry.producer_epoch:
            raise ApiError(
                Errors.INVALID_PRODUCER_EPOCH,
                f"{self.topic_partition}: producer {producer.producer_id} has epoch {epoch}, "
                f"older than its current epoch {entry.producer_epoch}",
            )
        if epoch != entry.producer_epoch:
            if first_seq != 0:
                raise ApiError(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"{self.topic_partition}: producer {producer.producer_id}'s new epoch "
                    f"{epoch} starts at sequence {first_seq}, not 0",
                )
        elif not _in_sequence(entry.last_seq, first_seq):
            raise ApiError(
                Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"{self.topic_partition}: producer {producer.producer_id} sent sequence "
                f"{first_seq} after {entry.last_seq}",
            )

    def update(self, batch: RecordBatch) -> None:
        """Record an appended batch (leader or follower); batches of no producer are
        ignored."""
        producer_id = batch.producer_id
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(
                producer_id, batch.producer_epoch
            )
        entry.add(batch)

    def truncate(self, end_offset: int, newest_first: Iterable[RecordBatch]) -> None:
        """The log now ends at ``end_offset``: forget the batches at or after it. An entry left
        without batches is rebuilt from ``newest_first`` (the log's remaining batches, newest
        first, read only if needed) or dropped."""
        emptied = []
        for producer_id, entry in self._producers.items():
            batches = entry.batches
            while batches and batches[-1].last_offset >= end_offset:
                batches.pop()
            if not batches:
                emptied.append(producer_id)
        if not emptied:
            return
        wanted = set(emptied)
        for producer_id in emptied:
            del self._producers[producer_id]
        found: dict[int, list[RecordBatch]] = {}
        for batch in newest_first:
            producer_id = batch.producer_id
            if producer_id not in wanted:
                continue
            kept = found.setdefault(producer_id, [])
            if kept and batch.producer_epoch != kept[0].producer_epoch:
                wanted.discard(producer_id)  # an older epoch: its batches do not count
            else:
                kept.append(batch)
                if len(kept) == NUM_BATCHES_TO_RETAIN:
                    wanted.discard(producer_id)
            if not wanted:
                break
        for kept_batches in found.values():
            for kept_batch in reversed(kept_batches):
                self.update(kept_batch)

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget the producers whose last batch's timestamp is at least ``expiration_ms``
        before ``now_ms`` (Kafka's ``producer.id.expiration.ms``); returns how many."""
        expired = [
            producer_id
            for producer_id, entry in self._producers.items()
            if now_ms - entry.last_timestamp >= expiration_ms
        ]
        for producer_id in expired:
            del self._producers[producer_id]
        return len(expired)

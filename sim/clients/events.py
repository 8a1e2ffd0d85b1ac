"""What the simulated clients report: one immutable event per thing that happened to a message.

Every event names the client that saw it (``client_id``), the message (``message_id``, unique
per produced message and carried through the broker in a record header, see
:mod:`sim.clients.records`) and the virtual time in microseconds. A message can be delivered,
processed and committed more than once (at-least-once); counting events per ``message_id``
finds the duplicates.

Where a client handles many messages at once it reports them as one *batch event* with
columns instead of one event per message: the producer's arrivals and outcomes
(:class:`MessagesSent`, :class:`MessagesAcked`), the consumer's deliveries, processing and
commits (:class:`MessagesDelivered`, :class:`MessagesProcessed`, :class:`MessagesCommittable`,
:class:`MessagesCommitted`). Each holds the same facts as the per-message events its
``expand()`` returns; the simulator's metrics recorder appends the columns at once.

The three batch events made on the consumer's hot path, once per fetch and per pool wake-up
(:class:`MessagesDelivered`, :class:`MessagesProcessed`, :class:`MessagesCommittable`), are
plain classes (read-only by contract, compared by identity, as the other batch events): a
plain class is built natively in the compiled build, an attrs one is not.

Clients call :meth:`ClientRecorder.record` synchronously from inside simulator callbacks; a
recorder must not call back into the client. :class:`InMemoryRecorder` keeps every event in a
list, batch events expanded into per-message ones (tests, small runs); the simulator's metrics
recorder can implement the same Protocol.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final, Protocol, TypeVar

import attrs

from replica.errors import Errors
from replica.types import TopicPartition

__all__ = [
    "ClientEvent",
    "ClientRecorder",
    "CommitCompleted",
    "ConsumerHalted",
    "InMemoryRecorder",
    "MessageAcked",
    "MessageCommittable",
    "MessageCommitted",
    "MessageDelivered",
    "MessageProcessed",
    "MessageSent",
    "MessagesAcked",
    "MessagesCommittable",
    "MessagesCommitted",
    "MessagesDelivered",
    "MessagesProcessed",
    "MessagesSent",
    "ProcessingOutcome",
]


@attrs.frozen
class MessageSent:
    """The application handed the message to a producer (``Producer.send``)."""

    time_us: int
    client_id: str
    message_id: int
    topic: str
    partition: int
    size_bytes: int


@attrs.frozen
class MessageAcked:
    """The producer finished with the message: ``error`` is ``Errors.NONE`` on success.

    ``offset`` is the offset the leader assigned (-1 on error, and with acks=0 where there is
    no response); ``attempts`` counts produce attempts (1 + retries).
    """

    time_us: int
    client_id: str
    message_id: int
    topic: str
    partition: int
    offset: int
    error: Errors
    attempts: int


class MessagesSent:
    """Messages the application handed to a producer: message ``message_ids[i]`` arrived at
    ``times_us[i]`` for ``partitions[i]`` (-1: not known yet) with ``sizes[i]`` bytes.

    Immutable by contract, like every event (a plain class rather than an attrs one: the
    producer builds one per catch-up, and a plain class is native to the compiled build):
    the columns are handed over, never changed afterwards, and may be kept by a recorder.
    Compared by identity."""

    __slots__ = ("client_id", "message_ids", "partitions", "sizes", "times_us", "topic")

    def __init__(
        self,
        client_id: str,
        topic: str,
        message_ids: Sequence[int],
        times_us: Sequence[int],
        partitions: Sequence[int],
        sizes: Sequence[int],
    ) -> None:
        self.client_id = client_id
        self.topic = topic
        self.message_ids = message_ids
        self.times_us = times_us
        self.partitions = partitions
        self.sizes = sizes

    def expand(self) -> list[MessageSent]:
        """The same arrivals as one :class:`MessageSent` per message, in order."""
        return [
            MessageSent(time_us, self.client_id, message_id, self.topic, partition, size)
            for message_id, time_us, partition, size in zip(
                self.message_ids, self.times_us, self.partitions, self.sizes, strict=True
            )
        ]


class MessagesAcked:
    """The producer finished with a batch of one partition: every message of it got the same
    outcome at the same time.

    ``message_ids[i]`` took ``attempts[i]`` produce attempts; on success its offset is
    ``base_offset + i``; ``base_offset`` is -1 on error and with acks=0. Immutable by
    contract and compared by identity, as :class:`MessagesSent`.
    """

    __slots__ = (
        "attempts",
        "base_offset",
        "client_id",
        "error",
        "message_ids",
        "partition",
        "time_us",
        "topic",
    )

    def __init__(
        self,
        time_us: int,
        client_id: str,
        topic: str,
        partition: int,
        message_ids: Sequence[int],
        base_offset: int,
        error: Errors,
        attempts: Sequence[int],
    ) -> None:
        self.time_us = time_us
        self.client_id = client_id
        self.topic = topic
        self.partition = partition
        self.message_ids = message_ids
        self.base_offset = base_offset
        self.error = error
        self.attempts = attempts

    def expand(self) -> list[MessageAcked]:
        """The same outcome as one :class:`MessageAcked` per message, in batch order."""
        base = self.base_offset
        return [
            MessageAcked(
                self.time_us,
                self.client_id,
                message_id,
                self.topic,
                self.partition,
                -1 if base < 0 else base + index,
                self.error,
                attempts,
            )
            for index, (message_id, attempts) in enumerate(
                zip(self.message_ids, self.attempts, strict=True)
            )
        ]


@attrs.frozen
class MessageDelivered:
    """A consumer received the record from a fetch response and handed it to the application."""

    time_us: int
    client_id: str
    message_id: int
    topic: str
    partition: int
    offset: int


class ProcessingOutcome(enum.Enum):
    """How one processing attempt of a Burrow worker ended."""

    #: Processed successfully.
    OK = "ok"
    #: Failed; the message will be retried after a backoff.
    RETRY = "retry"
    #: Failed and out of retries: the message stays a gap until a restart re-delivers it.
    FAILED = "failed"


@attrs.frozen
class MessageProcessed:
    """A worker finished one processing attempt at ``time_us``.

    ``submitted_us`` is when the attempt was offered to the job queue (the poll loop's submit,
    or the retry's after its backoff) and ``started_us`` when a worker took it, so
    ``started_us - submitted_us`` is the wait in queue (including time blocked by
    backpressure) and ``time_us - started_us`` the processing time. ``attempt`` counts from 0.
    """

    time_us: int
    client_id: str
    message_id: int
    topic: str
    partition: int
    offset: int
    submitted_us: int
    started_us: int
    attempt: int
    outcome: ProcessingOutcome


@attrs.frozen
class MessageCommittable:
    """The message joined the contiguous processed prefix of its tracker (gap closed).

    ``time_us`` minus the message's successful ``MessageProcessed.time_us`` is its
    resequencing delay.
    """

    time_us: int
    client_id: str
    message_id: int
    topic: str
    partition: int
    offset: int


@attrs.frozen
class MessageCommitted:
    """A successful offset commit covered the message (committed offset > its offset)."""

    time_us: int
    client_id: str
    message_id: int
    topic: str
    partition: int
    offset: int


class MessagesDelivered:
    """A poll handed records to the application at ``time_us``: a
    :class:`MessageDelivered` per column entry (``message_ids[i]`` at ``offsets[i]`` of
    ``tps[i]``)."""

    __slots__ = ("client_id", "message_ids", "offsets", "time_us", "tps")

    def __init__(
        self,
        time_us: int,
        client_id: str,
        tps: Sequence[TopicPartition],
        offsets: Sequence[int],
        message_ids: Sequence[int],
    ) -> None:
        self.time_us = time_us
        self.client_id = client_id
        self.tps = tps
        self.offsets = offsets
        self.message_ids = message_ids

    def __repr__(self) -> str:
        return _repr(self, ("time_us", "client_id", "tps", "offsets", "message_ids"))

    def expand(self) -> list[MessageDelivered]:
        """The per-message events, in column order."""
        t, client = self.time_us, self.client_id
        return [
            MessageDelivered(t, client, m, tp.topic, tp.partition, o)
            for tp, o, m in zip(self.tps, self.offsets, self.message_ids, strict=True)
        ]


class MessagesProcessed:
    """First processing attempts that succeeded: a :class:`MessageProcessed` (attempt 0,
    outcome OK) per column entry, finished at ``times_us[i]``."""

    __slots__ = (
        "client_id",
        "message_ids",
        "offsets",
        "started_us",
        "submitted_us",
        "times_us",
        "tps",
    )

    def __init__(
        self,
        client_id: str,
        tps: Sequence[TopicPartition],
        offsets: Sequence[int],
        message_ids: Sequence[int],
        submitted_us: Sequence[int],
        started_us: Sequence[int],
        times_us: Sequence[int],
    ) -> None:
        self.client_id = client_id
        self.tps = tps
        self.offsets = offsets
        self.message_ids = message_ids
        self.submitted_us = submitted_us
        self.started_us = started_us
        self.times_us = times_us

    def __repr__(self) -> str:
        fields = ("client_id", "tps", "offsets", "message_ids", "submitted_us", "started_us")
        return _repr(self, (*fields, "times_us"))

    def expand(self) -> list[MessageProcessed]:
        """The per-message events, in column order."""
        client, ok = self.client_id, ProcessingOutcome.OK
        columns = (self.times_us, self.message_ids, self.tps, self.offsets)
        return [
            MessageProcessed(t, client, m, tp.topic, tp.partition, o, s, b, 0, ok)
            for (t, m, tp, o), s, b in zip(
                zip(*columns, strict=True), self.submitted_us, self.started_us, strict=True
            )
        ]


class MessagesCommittable:
    """Messages that joined the contiguous processed prefix: a :class:`MessageCommittable`
    per column entry, at ``times_us[i]``."""

    __slots__ = ("client_id", "message_ids", "offsets", "times_us", "tps")

    def __init__(
        self,
        client_id: str,
        tps: Sequence[TopicPartition],
        offsets: Sequence[int],
        message_ids: Sequence[int],
        times_us: Sequence[int],
    ) -> None:
        self.client_id = client_id
        self.tps = tps
        self.offsets = offsets
        self.message_ids = message_ids
        self.times_us = times_us

    def __repr__(self) -> str:
        return _repr(self, ("client_id", "tps", "offsets", "message_ids", "times_us"))

    def expand(self) -> list[MessageCommittable]:
        """The per-message events, in column order."""
        client = self.client_id
        return [
            MessageCommittable(t, client, m, tp.topic, tp.partition, o)
            for t, tp, o, m in zip(
                self.times_us, self.tps, self.offsets, self.message_ids, strict=True
            )
        ]


@attrs.frozen(eq=False)
class MessagesCommitted:
    """A successful commit covered these messages of ``tp``: a :class:`MessageCommitted`
    per column entry."""

    time_us: int
    client_id: str
    tp: TopicPartition
    offsets: Sequence[int]
    message_ids: Sequence[int]

    def expand(self) -> list[MessageCommitted]:
        """The per-message events, in column order."""
        t, client, tp = self.time_us, self.client_id, self.tp
        return [
            MessageCommitted(t, client, m, tp.topic, tp.partition, o)
            for o, m in zip(self.offsets, self.message_ids, strict=True)
        ]


def _repr(event: object, fields: tuple[str, ...]) -> str:
    """``Name(field=value, ...)`` of a batch event, ``fields`` in its constructor's order."""
    values = ", ".join(f"{name}={getattr(event, name)!r}" for name in fields)
    return f"{type(event).__name__}({values})"


@attrs.frozen
class CommitCompleted:
    """An OffsetCommit finished (after any retries). ``offsets`` are the committed positions
    ``(topic, partition, offset)``: the next offset to read, i.e. last processed + 1.

    ``trigger`` says why the commit was made (``"interval"``, ``"batch"``, ``"final"``,
    ``"auto"``, ``"sync"``, ``"async"``).
    """

    time_us: int
    client_id: str
    group_id: str
    started_us: int
    offsets: tuple[tuple[str, int, int], ...]
    error: Errors
    trigger: str


@attrs.frozen
class ConsumerHalted:
    """A consumer stopped on its own (error threshold) or was crashed/closed by the caller."""

    time_us: int
    client_id: str
    reason: str


ClientEvent = (
    MessageSent
    | MessageAcked
    | MessagesAcked
    | MessagesSent
    | MessageDelivered
    | MessageProcessed
    | MessageCommittable
    | MessageCommitted
    | MessagesDelivered
    | MessagesProcessed
    | MessagesCommittable
    | MessagesCommitted
    | CommitCompleted
    | ConsumerHalted
)

_BATCHES: Final = (
    MessagesSent,
    MessagesAcked,
    MessagesDelivered,
    MessagesProcessed,
    MessagesCommittable,
    MessagesCommitted,
)

_E = TypeVar("_E", bound=ClientEvent)


class ClientRecorder(Protocol):
    """Receives the clients' events, in the order they happen."""

    def record(self, event: ClientEvent) -> None: ...


@attrs.define(init=False)
class InMemoryRecorder:
    """Keeps every event in :attr:`events`, in arrival order; a batch event is kept as the
    per-message events it stands for."""

    events: list[ClientEvent]

    def __init__(self, events: list[ClientEvent] | None = None) -> None:
        self.events = [] if events is None else events

    def record(self, event: ClientEvent) -> None:
        """Append ``event`` (or its per-message events) to :attr:`events`."""
        if isinstance(event, _BATCHES):
            self.events += event.expand()
        else:
            self.events.append(event)

    def of_type(self, kind: type[_E]) -> list[_E]:
        """The recorded events of class ``kind``, in order."""
        return [event for event in self.events if isinstance(event, kind)]

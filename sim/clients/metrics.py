"""Feeding the clients' events to the run's metrics recorder (``sim.output.MetricsRecorder``).

:class:`MetricsAdapter` is a :class:`~sim.clients.events.ClientRecorder` that translates each
event into the recorder's per-message calls; :class:`MessageMetrics` is the structural type
it needs, so this module does not import ``sim.output`` (nor pyarrow). Batch events go to the
recorder's column methods in one call each. Processing attempts that failed are not forwarded
(``message_processed`` means "finished processing"). ``CommitCompleted``,
``MessageCommittable`` and ``MessagesCommittable`` have no counterpart there and are dropped;
``ConsumerHalted`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from sim.clients.events import (
    ClientEvent,
    MessageAcked,
    MessageCommitted,
    MessageDelivered,
    MessageProcessed,
    MessagesAcked,
    MessagesCommitted,
    MessagesDelivered,
    MessageSent,
    MessagesProcessed,
    MessagesSent,
    ProcessingOutcome,
)

__all__ = ["MessageMetrics", "MetricsAdapter"]


class MessageMetrics(Protocol):
    """The message methods of ``sim.output.MetricsRecorder``."""

    def message_sent(self, message_id: int, t: int, producer: str, topic: str) -> None: ...

    def messages_sent(
        self, message_ids: Sequence[int], times: Sequence[int], producer: str, topic: str
    ) -> None: ...

    def message_acked(
        self, message_id: int, t: int, partition: int, offset: int, error: int = 0
    ) -> None: ...

    def messages_acked(
        self, message_ids: Sequence[int], t: int, partition: int, base_offset: int, error: int
    ) -> None: ...

    def message_delivered(self, message_id: int, t: int) -> None: ...

    def message_processed(self, message_id: int, t: int) -> None: ...

    def message_committed(self, message_id: int, t: int) -> None: ...

    def messages_delivered(self, message_ids: Sequence[int], t: int) -> None: ...

    def messages_processed(self, message_ids: Sequence[int], times: Sequence[int]) -> None: ...

    def messages_committed(self, message_ids: Sequence[int], t: int) -> None: ...


class MetricsAdapter:
    """A ClientRecorder forwarding message events to a :class:`MessageMetrics` (one dict
    lookup by event type per event: this runs several times per simulated message)."""

    __slots__ = ("_forward", "_metrics")

    def __init__(self, metrics: MessageMetrics) -> None:
        self._metrics = metrics
        self._forward: dict[type, Callable[[Any], None]] = {
            MessageSent: self._sent,
            MessageAcked: self._acked,
            MessagesAcked: self._batch_acked,
            MessagesSent: self._batch_sent,
            MessageDelivered: self._delivered,
            MessageProcessed: self._processed,
            MessageCommitted: self._committed,
            MessagesDelivered: self._batch_delivered,
            MessagesProcessed: self._batch_processed,
            MessagesCommitted: self._batch_committed,
        }

    def record(self, event: ClientEvent) -> None:
        forward = self._forward.get(type(event))
        if forward is not None:
            forward(event)

    def _sent(self, event: MessageSent) -> None:
        self._metrics.message_sent(event.message_id, event.time_us, event.client_id, event.topic)

    def _acked(self, event: MessageAcked) -> None:
        self._metrics.message_acked(
            event.message_id, event.time_us, event.partition, event.offset, int(event.error)
        )

    def _batch_sent(self, event: MessagesSent) -> None:
        self._metrics.messages_sent(event.message_ids, event.times_us, event.client_id, event.topic)

    def _batch_acked(self, event: MessagesAcked) -> None:
        self._metrics.messages_acked(
            event.message_ids, event.time_us, event.partition, event.base_offset, int(event.error)
        )

    def _delivered(self, event: MessageDelivered) -> None:
        self._metrics.message_delivered(event.message_id, event.time_us)

    def _processed(self, event: MessageProcessed) -> None:
        if event.outcome is ProcessingOutcome.OK:
            self._metrics.message_processed(event.message_id, event.time_us)

    def _committed(self, event: MessageCommitted) -> None:
        self._metrics.message_committed(event.message_id, event.time_us)

    def _batch_delivered(self, event: MessagesDelivered) -> None:
        self._metrics.messages_delivered(event.message_ids, event.time_us)

    def _batch_processed(self, event: MessagesProcessed) -> None:
        self._metrics.messages_processed(event.message_ids, event.times_us)

    def _batch_committed(self, event: MessagesCommitted) -> None:
        self._metrics.messages_committed(event.message_ids, event.time_us)

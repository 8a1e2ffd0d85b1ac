"""Feeding the clients' events to the run's metrics recorder (``sim.output.MetricsRecorder``).

:class:`MetricsAdapter` is a :class:`~sim.clients.events.ClientRecorder` that translates each
event into the recorder's per-message calls; :class:`MessageMetrics` is the structural type
it needs, so this module does not import ``sim.output`` (nor pyarrow). Processing attempts
that failed are not forwarded (``message_processed`` means "finished processing").
``CommitCompleted`` and ``MessageCommittable`` have no counterpart there and are dropped;
``ConsumerHalted`` too.
"""

from __future__ import annotations

from typing import Protocol

from sim.clients.events import (
    ClientEvent,
    MessageAcked,
    MessageCommitted,
    MessageDelivered,
    MessageProcessed,
    MessageSent,
    ProcessingOutcome,
)

__all__ = ["MessageMetrics", "MetricsAdapter"]


class MessageMetrics(Protocol):
    """The per-message methods of ``sim.output.MetricsRecorder``."""

    def message_sent(self, message_id: int, t: int, producer: str, topic: str) -> None: ...

    def message_acked(
        self, message_id: int, t: int, partition: int, offset: int, error: int = 0
    ) -> None: ...

    def message_delivered(self, message_id: int, t: int) -> None: ...

    def message_processed(self, message_id: int, t: int) -> None: ...

    def message_committed(self, message_id: int, t: int) -> None: ...


class MetricsAdapter:
    """A ClientRecorder forwarding message events to a :class:`MessageMetrics`."""

    __slots__ = ("_metrics",)

    def __init__(self, metrics: MessageMetrics) -> None:
        self._metrics = metrics

    def record(self, event: ClientEvent) -> None:
        metrics = self._metrics
        if isinstance(event, MessageSent):
            metrics.message_sent(event.message_id, event.time_us, event.client_id, event.topic)
        elif isinstance(event, MessageAcked):
            metrics.message_acked(
                event.message_id, event.time_us, event.partition, event.offset, int(event.error)
            )
        elif isinstance(event, MessageDelivered):
            metrics.message_delivered(event.message_id, event.time_us)
        elif isinstance(event, MessageProcessed):
            if event.outcome is ProcessingOutcome.OK:
                metrics.message_processed(event.message_id, event.time_us)
        elif isinstance(event, MessageCommitted):
            metrics.message_committed(event.message_id, event.time_us)

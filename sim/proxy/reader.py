"""A simulated reader of the consume proxy: Read, work, then Acknowledge, forget or Cancel.

A reader is one process with one connection to its proxy server, doing one thing at a time
(its lifecycle, :class:`ReaderState`, moves only as :data:`TRANSITIONS` allows):

1. **reading**: a Read with ``read_timeout_ms`` (a long poll) is out; an empty answer (the
   timeout) sends the next Read at once;
2. **processing**: a record came; the reader draws what it will do with it and for how long
   (``processing_time``), from its own random stream, in that order per record:

   * with ``cancel_probability`` it gives the record back when the time is up (a Cancel:
     it gave up, or failed; the record is not processed to completion),
   * with ``never_ack_probability`` it finishes the record and never acknowledges it (a
     crash after the work, a lost acknowledgement): the lease expires at the proxy,
   * otherwise it finishes and acknowledges it, with the delivery count it was given, so an
     acknowledgement arriving after the lease ended is refused (the HTTP API's 409);

3. **answering**: the Acknowledge or Cancel is out; its answer sends the next Read.

Each record is reported when it arrives (delivered), when the reader finishes it (processed
to completion: acknowledged or forgotten, not cancelled), and when an acknowledgement or a
cancel is refused (a late answer).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping
from functools import partial

from sim.core.engine import Simulator
from sim.output import MetricsRecorder
from sim.output.proxy_recorder import ProxyRecorder
from sim.proxy.connection import Answer, Connection, Delivery
from sim.scenario import ProxyReaders

__all__ = ["TRANSITIONS", "Outcome", "ProxyReader", "ReaderState", "ReaderStateError"]


class ReaderStateError(RuntimeError):
    """A reader was asked to make a move its lifecycle does not allow."""


class ReaderState(enum.Enum):
    """Where a reader is (see the module docstring)."""

    IDLE = "idle"
    READING = "reading"
    PROCESSING = "processing"
    ANSWERING = "answering"


_S = ReaderState

TRANSITIONS: Mapping[ReaderState, frozenset[ReaderState]] = {
    _S.IDLE: frozenset({_S.READING}),
    _S.READING: frozenset({_S.READING, _S.PROCESSING}),  # an empty answer: read again
    _S.PROCESSING: frozenset({_S.ANSWERING, _S.READING}),  # a forgotten record: read again
    _S.ANSWERING: frozenset({_S.READING}),
}
"""The states each state may move to."""


class Outcome(enum.Enum):
    """What a reader does with a record once its processing time is up."""

    ACKNOWLEDGE = "acknowledge"
    NEVER_ACKNOWLEDGE = "never_acknowledge"
    CANCEL = "cancel"


class ProxyReader:
    """Reader ``name`` reading through ``connection`` (see the module docstring); ``start``
    sends its first Read."""

    __slots__ = ("_config", "_connection", "_events", "_recorder", "_rng", "_sim", "name", "state")

    def __init__(
        self,
        sim: Simulator,
        connection: Connection,
        config: ProxyReaders,
        *,
        rng: random.Random,
        recorder: MetricsRecorder,
        proxy_events: ProxyRecorder,
    ) -> None:
        self._sim = sim
        self._connection = connection
        self._config = config
        self._rng = rng
        self._recorder = recorder
        self._events = proxy_events
        self.name = connection.reader
        self.state = ReaderState.IDLE

    def start(self) -> None:
        """Send the first Read."""
        self._read()

    def _move(self, to: ReaderState) -> None:
        if to not in TRANSITIONS[self.state]:
            raise ReaderStateError(f"reader {self.name}: cannot go from {self.state} to {to}")
        self.state = to

    def _read(self) -> None:
        self._move(ReaderState.READING)
        self._connection.read(self._config.read_timeout_ms, self._arrived)

    def _arrived(self, delivery: Delivery | None) -> None:
        if delivery is None:
            self._read()
            return
        self._move(ReaderState.PROCESSING)
        now = self._sim.now
        self._recorder.message_delivered(delivery.message_id, now)
        outcome = self._outcome()
        duration = self._config.processing_time.sample(self._rng)
        self._sim.call_later(duration, partial(self._finished, delivery, outcome))

    def _outcome(self) -> Outcome:
        draw = self._rng.random()
        if draw < self._config.cancel_probability:
            return Outcome.CANCEL
        if draw < self._config.cancel_probability + self._config.never_ack_probability:
            return Outcome.NEVER_ACKNOWLEDGE
        return Outcome.ACKNOWLEDGE

    def _finished(self, delivery: Delivery, outcome: Outcome) -> None:
        if outcome is Outcome.CANCEL:
            self._move(ReaderState.ANSWERING)
            self._connection.cancel(delivery, partial(self._answered, delivery))
            return
        now = self._sim.now
        self._recorder.message_processed(delivery.message_id, now)
        self._events.completed(delivery.message_id, now)
        if outcome is Outcome.NEVER_ACKNOWLEDGE:
            self._read()
            return
        self._move(ReaderState.ANSWERING)
        self._connection.acknowledge(delivery, partial(self._answered, delivery))

    def _answered(self, delivery: Delivery, answer: Answer) -> None:
        if answer is Answer.ENDED:
            self._events.refused(delivery.message_id, self._sim.now)
        self._read()

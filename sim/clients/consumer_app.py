"""The built-in application: the poll loop of a consumer created without ``on_records``.

It models a single application thread: ``poll()``, process the records one at a time, commit
as configured, ``poll()`` again.

* Each record takes ``processing_time`` (one draw from the consumer's random stream per record,
  drawn when its processing starts) and gets a ``MessageProcessed`` when done. A zero draw
  completes the record at once, in the same event.
* When the batch is done the application polls again (:meth:`BuiltInApplication._poll_again`).
  With a group it first makes the auto-commit that fell due while it was busy, then the manual
  commit of ``manual_commit``: ``"async"`` fires one and polls on; ``"sync"`` blocks the
  application (and, being a blocking sync commit, delivery) until the commit completes, and the
  delivery block's release polls.

The application is *busy* from the moment it takes a batch until it is back in ``poll()``; the
consumer delivers records only to an application that is not busy. Once the consumer has
stopped it processes nothing more.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable

from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.consumer_commits import CommitCallback
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_fetcher import ConsumerRecords
from sim.clients.events import ClientRecorder, MessageProcessed, ProcessingOutcome
from sim.core.engine import Scheduler

__all__ = ["BuiltInApplication"]

_Record = tuple[TopicPartition, int, int]


class BuiltInApplication:
    """Process each polled batch, commit, poll again (see the module doc)."""

    __slots__ = (
        "_busy",
        "_client_id",
        "_commit_async",
        "_commit_if_due",
        "_commit_sync",
        "_config",
        "_poll",
        "_processing_time",
        "_queue",
        "_recorder",
        "_scheduler",
        "_stopped",
    )

    def __init__(
        self,
        scheduler: Scheduler,
        config: ConsumerConfig,
        rng: random.Random,
        recorder: ClientRecorder,
        client_id: str,
        *,
        stopped: Callable[[], bool],
        poll: Callable[[], None],
        commit_if_due: Callable[[], None],
        commit_async: Callable[[], None],
        commit_sync: Callable[[CommitCallback], None],
    ) -> None:
        self._scheduler = scheduler
        self._config = config
        self._processing_time = config.processing_time.sampler(rng)
        self._recorder = recorder
        self._client_id = client_id
        self._stopped = stopped
        self._poll = poll
        self._commit_if_due = commit_if_due
        self._commit_async = commit_async
        self._commit_sync = commit_sync
        # polled, not yet processed: (partition, offset, message id)
        self._queue: deque[_Record] = deque()
        self._busy = False

    @property
    def busy(self) -> bool:
        """True while the application is away from ``poll()``: processing or committing."""
        return self._busy

    def take(self, records: ConsumerRecords) -> None:
        """``poll()`` returned ``records``: process them, then poll again."""
        self._busy = True
        self._queue.extend(zip(records.tps, records.offsets, records.message_ids, strict=True))
        self._process_next()

    def _process_next(self) -> None:
        while self._queue and not self._stopped():
            record = self._queue[0]
            started = self._scheduler.now
            duration = self._processing_time.draw()
            if duration:
                self._scheduler.call_later(duration, self._processed_later(record, started))
                return
            self._processed(record, started, resume=False)
        if not self._stopped():
            self._poll_again()

    def _processed_later(self, record: _Record, started: int) -> Callable[[], None]:
        return lambda: self._processed(record, started)

    def _processed(self, record: _Record, started: int, *, resume: bool = True) -> None:
        if self._stopped():
            return
        self._queue.popleft()
        tp, offset, message_id = record
        self._recorder.record(
            MessageProcessed(
                self._scheduler.now, self._client_id, message_id, tp.topic, tp.partition,
                offset, started, started, 0, ProcessingOutcome.OK,
            )
        )  # fmt: skip
        if resume:
            self._process_next()

    def _poll_again(self) -> None:
        """The batch is done: commit as configured (see the module doc), then poll."""
        self._busy = False
        if self._config.group_id is not None:
            self._commit_if_due()
            if self._config.manual_commit == "async":
                self._commit_async()
            elif self._config.manual_commit == "sync":
                self._busy = True  # blocked in commitSync

                def committed(_error: Errors) -> None:
                    self._busy = False

                self._commit_sync(committed)
                return
        self._poll()

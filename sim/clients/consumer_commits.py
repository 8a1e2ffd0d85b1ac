"""Offset commits: one OffsetCommit to the group's coordinator, retried or not; auto-commit.

:meth:`Committer.commit` commits positions ("next offset to read") for the consumer's group:

* the positions are taken when it is called (default: the consumed positions); an empty set
  succeeds at once, without a request;
* each attempt looks the coordinator up in the metadata view and sends it an OffsetCommit;
  a missing coordinator counts as COORDINATOR_NOT_AVAILABLE, the client timeout as
  REQUEST_TIMED_OUT, and the first partition error as the commit's error;
* with a ``deadline`` (``commit_sync``) a retriable error is retried until the deadline, after a
  metadata refresh for coordinator errors, else after a back-off; without one
  (``commit_async``) the first error is final;
* the outcome is reported once, in this order: on success the committed positions move and
  every delivered message the commit covers gets ``MessageCommitted`` (one
  ``MessagesCommitted`` per partition); then
  ``CommitCompleted`` (with the ``trigger``); then ``on_done(error)``.

Once the consumer has stopped no attempt is made, so a commit still outstanding never reports.

A member of its group (:mod:`sim.clients.consumer_group`) commits with its ``generation``
(generation id and member id, read at each attempt); a commit that fails with an error saying
the member must rejoin is reported to ``on_rejoin_error`` before ``on_done``. Without
membership the generation is -1 and the member id empty (a commit from outside group
management).

:class:`AutoCommit` is ``enable_auto_commit``: every ``auto_commit_interval_ms`` an async commit
of the consumed positions. Kafka's consumer commits inside ``poll()``, so when the interval
elapses while the application is away from ``poll()`` (processing, or blocked in a sync
commit) the commit falls due and the application makes it at its next poll
(:meth:`AutoCommit.commit_if_due`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
)
from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_positions import Positions
from sim.clients.consumer_requests import COORDINATOR_ERRORS, ConsumerRequests
from sim.clients.errors import ClientStateError
from sim.clients.events import ClientRecorder, CommitCompleted, MessagesCommitted
from sim.clients.ledger import CommitLedger
from sim.clients.network import MetadataView
from sim.core.engine import Repeating, Scheduler, every

__all__ = ["AutoCommit", "CommitCallback", "Committer"]

_US_PER_MS: Final = 1000

CommitCallback = Callable[[Errors], None]
"""Called once with the commit's outcome (``Errors.NONE`` on success)."""


class Committer:
    """Makes the commits of one consumer (see the module doc)."""

    __slots__ = (
        "_client_id",
        "_config",
        "_generation",
        "_ledger",
        "_metadata",
        "_on_rejoin_error",
        "_positions",
        "_recorder",
        "_requests",
        "_scheduler",
        "_stopped",
    )

    def __init__(
        self,
        scheduler: Scheduler,
        config: ConsumerConfig,
        metadata: MetadataView,
        requests: ConsumerRequests,
        positions: Positions,
        ledger: CommitLedger,
        recorder: ClientRecorder,
        client_id: str,
        *,
        stopped: Callable[[], bool],
        generation: Callable[[], tuple[int, str]],
        on_rejoin_error: Callable[[Errors], None],
    ) -> None:
        self._scheduler = scheduler
        self._config = config
        self._metadata = metadata
        self._requests = requests
        self._positions = positions
        self._generation = generation
        self._on_rejoin_error = on_rejoin_error
        self._ledger = ledger
        self._recorder = recorder
        self._client_id = client_id
        self._stopped = stopped

    def commit(
        self,
        offsets: Mapping[TopicPartition, int] | None,
        on_done: CommitCallback | None,
        deadline: int | None,
        trigger: str,
    ) -> None:
        """Commit ``offsets`` (None: the consumed positions), retrying retriable errors until
        ``deadline`` (None: no retries); report the outcome as ``trigger``. Raises
        ClientStateError if the consumer has no ``group_id``."""
        group_id = self._config.group_id
        if group_id is None:
            raise ClientStateError("cannot commit without a group_id")
        positions = self._positions.consumed_positions() if offsets is None else dict(offsets)
        started = self._scheduler.now

        def finish(error: Errors) -> None:
            if error == Errors.NONE:
                self._succeeded(positions)
            else:
                self._on_rejoin_error(error)
            self._recorder.record(
                CommitCompleted(
                    self._scheduler.now,
                    self._client_id,
                    group_id,
                    started,
                    tuple((tp.topic, tp.partition, o) for tp, o in sorted(positions.items())),
                    error,
                    trigger,
                )
            )
            if on_done is not None:
                on_done(error)

        def attempt() -> None:
            if self._stopped():
                return
            coordinator = self._metadata.coordinator_for(group_id)
            if coordinator is None:
                retry_or_fail(Errors.COORDINATOR_NOT_AVAILABLE)
                return
            generation_id, member_id = self._generation()
            request = OffsetCommitRequest(
                group_id,
                {tp: OffsetCommitRequestPartition(o) for tp, o in positions.items()},
                generation_id,
                member_id,
            )
            self._requests.send(coordinator, request, answered)

        def answered(response: OffsetCommitResponse | None) -> None:
            if response is None:
                retry_or_fail(Errors.REQUEST_TIMED_OUT)
                return
            errors = [e for e in response.errors.values() if e != Errors.NONE]
            if not errors:
                finish(Errors.NONE)
            else:
                retry_or_fail(errors[0])

        def retry_or_fail(error: Errors) -> None:
            if deadline is None or not error.is_retriable or self._scheduler.now >= deadline:
                finish(error)
            elif error in COORDINATOR_ERRORS:
                self._requests.after_refresh(attempt)
            else:
                self._requests.later(attempt)

        if not positions:
            finish(Errors.NONE)
        else:
            attempt()

    def _succeeded(self, positions: Mapping[TopicPartition, int]) -> None:
        """A commit of ``positions`` succeeded: move the committed positions, report the
        messages it covers."""
        now = self._scheduler.now
        for tp, position in positions.items():
            self._positions.commit_succeeded(tp, position)
            offsets, message_ids = self._ledger.committed(tp, position)
            if offsets:
                self._recorder.record(
                    MessagesCommitted(now, self._client_id, tp, offsets, message_ids)
                )


class AutoCommit:
    """``enable_auto_commit``'s timer and its commit falling due (see the module doc)."""

    __slots__ = ("_commit", "_due", "_in_poll", "_interval_us", "_scheduler", "_timer")

    def __init__(
        self,
        scheduler: Scheduler,
        interval_ms: int,
        *,
        in_poll: Callable[[], bool],
        commit: Callable[[], None],
    ) -> None:
        self._scheduler = scheduler
        self._interval_us = interval_ms * _US_PER_MS
        self._in_poll = in_poll
        self._commit = commit
        self._timer: Repeating | None = None
        self._due = False  # the interval elapsed while the application was away from poll()

    def start(self) -> None:
        """Commit every interval from now on."""
        self._timer = every(self._scheduler, self._interval_us, self._tick)

    def stop(self) -> None:
        """Stop the timer (for good)."""
        if self._timer is not None:
            self._timer.cancel()

    def commit_if_due(self) -> None:
        """The application polls: make the commit that fell due while it was away."""
        if self._due:
            self._due = False
            self._commit()

    def _tick(self) -> None:
        if self._in_poll():
            self._commit()
        else:
            self._due = True  # Java auto-commits inside poll(): at the next one

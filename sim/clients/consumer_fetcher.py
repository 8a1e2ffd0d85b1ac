"""The fetch loop: at most one long-poll fetch in flight per leader broker.

:meth:`Fetcher.maybe_fetch` groups every partition with a fetch position by its leader and
sends one FetchRequest (``fetch_min_bytes`` / ``fetch_max_wait_ms``) to each leader that has no
fetch in flight and is not backing off. It sends nothing while the consumer is paused or while
the ``wants_records`` predicate says no (stopped, records held for the application, delivery
blocked by a commit): the next round then starts when the held records are polled. A
partition whose leader is unknown triggers a metadata refresh, after which the loop runs again.

When a fetch is answered (:meth:`Fetcher._fetched`), records of every partition whose fetch
position still equals the fetch's offset (records before that offset, in a batch that starts
earlier, are skipped) go to ``deliver`` as one
:class:`ConsumerRecords`, columns with one entry per record (no object per record); the
partition's fetch position moves past them. Then, per error:

* OFFSET_OUT_OF_RANGE: the partition goes to ``reset`` (``auto_offset_reset``);
* a leadership or broker error (``_METADATA_ERRORS``, for the whole response or a partition):
  the broker is not fetched from for ``retry_backoff_ms``, metadata is refreshed, the loop
  runs again after the refresh;
* any other error, or the client timeout: the broker backs off, the loop runs again after the
  back-off.

Without errors the loop runs again at once, so a fetch is always parked at every leader.

Fetch sessions (KIP-227), as Kafka's consumer keeps them: one
:class:`~replica.fetch_session_handler.FetchSessionHandler` per leader, so after the first
(full) fetch each request carries only the partitions whose position moved (or that were
added) and names those dropped, and the response lists only the partitions with news. A
session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) makes the next fetch
full and the loop runs again at once; a lost fetch or the client timeout also makes the next
fetch full.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import attrs

from apis.fetch import FetchRequest, FetchResponse
from replica.errors import Errors
from replica.fetch_session_handler import FetchSessionHandler
from replica.records import Record, RecordBatch
from replica.types import PartitionFetchInfo, TopicPartition
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_positions import Positions
from sim.clients.consumer_requests import ConsumerRequests
from sim.clients.network import MetadataView
from sim.clients.records import message_ids_of
from sim.core.engine import Scheduler

__all__ = ["ConsumerRecords", "Fetcher"]

_US_PER_MS = 1000
_METADATA_ERRORS = frozenset(
    {
        Errors.NETWORK_EXCEPTION,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.KAFKA_STORAGE_ERROR,
    }
)
"""Errors after which the leader is looked up again. A broken connection (NETWORK_EXCEPTION)
counts: the broker may be gone and its partitions led elsewhere."""
_SESSION_ERRORS = frozenset({Errors.FETCH_SESSION_ID_NOT_FOUND, Errors.INVALID_FETCH_SESSION_EPOCH})
"""Top-level errors after which the next fetch is full, at once (no back-off)."""


@attrs.define(init=False)
class ConsumerRecords:
    """Records as the application receives them (Kafka's ``ConsumerRecords``), as columns:
    record ``i`` is offset ``offsets[i]`` of ``tps[i]`` and carries message ``message_ids[i]``
    (-1 for a foreign record). A partition's records are adjacent and in offset order.
    ``ConsumerRecords()`` is empty (new lists)."""

    tps: list[TopicPartition]
    offsets: list[int]
    message_ids: list[int]

    def __init__(
        self,
        tps: list[TopicPartition] | None = None,
        offsets: list[int] | None = None,
        message_ids: list[int] | None = None,
    ) -> None:
        # Defaults here, not as factory fields: mypyc cannot build a class body with those.
        self.tps = [] if tps is None else tps
        self.offsets = [] if offsets is None else offsets
        self.message_ids = [] if message_ids is None else message_ids

    def __len__(self) -> int:
        return len(self.offsets)

    def extend(self, other: ConsumerRecords) -> None:
        """Append ``other``'s records after these."""
        self.tps += other.tps
        self.offsets += other.offsets
        self.message_ids += other.message_ids


class Fetcher:
    """The fetch loop of one consumer (see the module doc)."""

    __slots__ = (
        "_backoff_until",
        "_config",
        "_deliver",
        "_in_flight",
        "_metadata",
        "_paused",
        "_positions",
        "_requests",
        "_reset",
        "_scheduler",
        "_sessions",
        "_wants_records",
    )

    def __init__(
        self,
        scheduler: Scheduler,
        config: ConsumerConfig,
        metadata: MetadataView,
        requests: ConsumerRequests,
        positions: Positions,
        *,
        wants_records: Callable[[], bool],
        deliver: Callable[[ConsumerRecords], None],
        reset: Callable[[list[TopicPartition]], None],
    ) -> None:
        self._scheduler = scheduler
        self._config = config
        self._metadata = metadata
        self._requests = requests
        self._positions = positions
        self._wants_records = wants_records
        self._deliver = deliver
        self._reset = reset
        # leader -> what its fetch in flight fetches (every partition, also those not sent)
        self._in_flight: dict[int, dict[TopicPartition, PartitionFetchInfo]] = {}
        self._sessions: dict[int, FetchSessionHandler] = {}  # leader -> its fetch session
        self._backoff_until: dict[int, int] = {}  # leader -> no fetch to it before this time
        self._paused = False

    def pause(self) -> None:
        """Send no new fetch until :meth:`resume` (fetches in flight still deliver)."""
        self._paused = True

    def resume(self) -> None:
        """Undo :meth:`pause` and fetch again; nothing happens if not paused."""
        if self._paused:
            self._paused = False
            self.maybe_fetch()

    def maybe_fetch(self) -> None:
        """Send a fetch to every leader of a fetchable partition that has none in flight and
        is not backing off (see the module doc for when nothing is sent)."""
        if self._paused or not self._wants_records():
            return
        now = self._scheduler.now
        by_leader: dict[int, dict[TopicPartition, PartitionFetchInfo]] = {}
        leaderless = False
        for tp in self._positions.assigned:
            offset = self._positions.fetch_position(tp)
            if offset is None:
                continue
            leader = self._metadata.leader_for(tp)
            if leader is None:
                leaderless = True
            elif leader not in self._in_flight and self._backoff_until.get(leader, 0) <= now:
                info = PartitionFetchInfo(offset, self._config.max_partition_fetch_bytes)
                by_leader.setdefault(leader, {})[tp] = info
        if leaderless:
            self._requests.after_refresh(self.maybe_fetch)
        for leader, fetch_data in by_leader.items():
            session = self._sessions.get(leader)
            if session is None:
                session = self._sessions[leader] = FetchSessionHandler()
            data = session.build(fetch_data)
            request = FetchRequest(
                data.to_send,
                max_wait_ms=self._config.fetch_max_wait_ms,
                min_bytes=self._config.fetch_min_bytes,
                max_bytes=self._config.fetch_max_bytes,
                session_id=data.metadata.session_id,
                session_epoch=data.metadata.epoch,
                forgotten=data.forgotten,
            )
            self._in_flight[leader] = fetch_data
            self._requests.send(leader, request, self._answer_handler(leader))

    def _answer_handler(self, leader: int) -> Callable[[FetchResponse | None], None]:
        return partial(self._fetched, leader)  # a lambda is a reference cycle when compiled

    def _fetched(self, leader: int, response: FetchResponse | None) -> None:
        """``leader`` answered its fetch in flight (None: the client timeout)."""
        fetched = self._in_flight.pop(leader)
        session = self._sessions[leader]
        if response is None:
            session.handle_error()
            self._requests.later(self.maybe_fetch)
            return
        session_failed = response.error in _SESSION_ERRORS
        session.handle_response(response.session_id, response.error)
        records = ConsumerRecords()
        refresh = response.error in _METADATA_ERRORS
        backoff = response.error != Errors.NONE and not session_failed
        reset: list[TopicPartition] = []
        answered = response.responses
        # In the order of this fetch's partitions, not of the response's: a session lists
        # its partitions in the order they joined it.
        for tp, info in fetched.items():
            data = answered.get(tp)
            if data is None or self._positions.fetch_position(tp) != info.fetch_offset:
                continue  # no news, or the position moved meanwhile
            if data.error == Errors.NONE:
                offset = _unpack(tp, info.fetch_offset, data.records, records)
                self._positions.fetched_up_to(tp, offset)
            elif data.error == Errors.OFFSET_OUT_OF_RANGE:
                reset.append(tp)
            elif data.error in _METADATA_ERRORS:
                refresh = True
            else:  # NETWORK_EXCEPTION (broker down), REQUEST_TIMED_OUT, ...: try again later
                backoff = True
        if records:
            self._deliver(records)
        if reset:
            self._reset(reset)
        if refresh or backoff:  # no fetch to this broker until the back-off is over
            self._backoff_until[leader] = (
                self._scheduler.now + self._config.retry_backoff_ms * _US_PER_MS
            )
        if refresh:
            self._requests.after_refresh(self.maybe_fetch)
        elif backoff:
            self._requests.later(self.maybe_fetch)
        else:
            self.maybe_fetch()


def _unpack(
    tp: TopicPartition, offset: int, batches: Sequence[RecordBatch], into: ConsumerRecords
) -> int:
    """Append the records of ``batches`` at or after ``offset`` to ``into``, in offset order;
    return the offset after the last one (``offset`` itself if there is none)."""
    for batch in batches:
        records = batch.records
        skip = max(0, offset - batch.base_offset)
        count = len(records) - skip
        if count <= 0:
            continue
        first = batch.base_offset + skip
        into.tps += [tp] * count
        into.offsets += range(first, first + count)
        into.message_ids += _message_ids(records[skip:] if skip else records)
        offset = first + count
    return offset


def _message_ids(records: Sequence[Record]) -> list[int]:
    """The message id each record carries (-1 if it has none); read from the columns of a
    producer's batch, without building a record per message."""
    return [-1 if m is None else m for m in message_ids_of(records)]

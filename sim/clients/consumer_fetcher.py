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
from typing import Final

from apis.fetch import FetchRequest, FetchResponse
from replica.errors import Errors
from replica.fetch_session_handler import FetchSessionHandler
from replica.records import RecordBatch
from replica.types import NO_ERROR, PartitionFetchInfo, TopicPartition
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_positions import Positions
from sim.clients.consumer_requests import ConsumerRequests
from sim.clients.network import MetadataView
from sim.clients.records import message_ids_column
from sim.core.engine import Scheduler

__all__ = ["ConsumerRecords", "Fetcher"]

_US_PER_MS: Final = 1000
_METADATA_ERRORS: Final = frozenset(
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
_SESSION_ERRORS: Final = frozenset(
    {Errors.FETCH_SESSION_ID_NOT_FOUND, Errors.INVALID_FETCH_SESSION_EPOCH}
)
"""Top-level errors after which the next fetch is full, at once (no back-off)."""


class ConsumerRecords:
    """Records as the application receives them (Kafka's ``ConsumerRecords``), as columns:
    record ``i`` is offset ``offsets[i]`` of ``tps[i]`` and carries message ``message_ids[i]``
    (-1 for a foreign record).

    ``spans`` groups the columns by partition, so that per-partition work needs no loop over
    records: ``(tp, lo, hi)`` says that entries ``lo .. hi - 1`` are records of ``tp`` in offset
    order. Spans are in column order and cover every entry; a partition may have several (one
    per fetch that returned it). ``ConsumerRecords()`` is empty (new lists); given columns, the
    spans are computed from ``tps`` (each partition's records in offset order, as fetched).

    Equality compares the columns (the spans follow from them).
    """

    __slots__ = ("message_ids", "offsets", "spans", "tps")

    def __init__(
        self,
        tps: list[TopicPartition] | None = None,
        offsets: list[int] | None = None,
        message_ids: list[int] | None = None,
    ) -> None:
        self.tps: list[TopicPartition] = [] if tps is None else tps
        self.offsets: list[int] = [] if offsets is None else offsets
        self.message_ids: list[int] = [] if message_ids is None else message_ids
        self.spans: list[tuple[TopicPartition, int, int]] = []
        for i, tp in enumerate(self.tps):
            if self.spans and self.spans[-1][0] == tp:
                self.spans[-1] = (tp, self.spans[-1][1], i + 1)
            else:
                self.spans.append((tp, i, i + 1))

    def __len__(self) -> int:
        return len(self.offsets)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ConsumerRecords)
            and self.tps == other.tps
            and self.offsets == other.offsets
            and self.message_ids == other.message_ids
        )

    def __repr__(self) -> str:
        return (
            f"ConsumerRecords(tps={self.tps!r}, offsets={self.offsets!r}, "
            f"message_ids={self.message_ids!r})"
        )

    def add(self, tp: TopicPartition, first: int, message_ids: Sequence[int]) -> None:
        """Append records of ``tp`` at offsets ``first``, ``first + 1``, ... carrying
        ``message_ids`` (after any records of ``tp`` already here)."""
        count = len(message_ids)
        start = len(self.offsets)
        self.tps += [tp] * count
        self.offsets += range(first, first + count)
        self.message_ids += message_ids
        spans = self.spans
        if spans and spans[-1][0] == tp and spans[-1][2] == start:
            spans[-1] = (tp, spans[-1][1], start + count)  # the partition's last span goes on
        else:
            spans.append((tp, start, start + count))

    def extend(self, other: ConsumerRecords) -> None:
        """Append ``other``'s records after these."""
        shift = len(self.offsets)
        self.tps += other.tps
        self.offsets += other.offsets
        self.message_ids += other.message_ids
        self.spans += [(tp, lo + shift, hi + shift) for tp, lo, hi in other.spans]


class Fetcher:
    """The fetch loop of one consumer (see the module doc)."""

    __slots__ = (
        "_backoff_until",
        "_config",
        "_deliver",
        "_fetch_infos",
        "_in_flight",
        "_leaderless",
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
        # tp -> the fetch data last built for it, reused while its position stays (a
        # partition without news is fetched from the same offset many times in a row)
        self._fetch_infos: dict[TopicPartition, PartitionFetchInfo] = {}
        self._paused = False
        self._leaderless = False  # the last pass of the fetch loop found a partition without leader

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
        positions, metadata, infos = self._positions, self._metadata, self._fetch_infos
        by_leader: dict[int, dict[TopicPartition, PartitionFetchInfo]] = {}
        leaderless = False
        for tp in positions.assigned:
            offset = positions.fetch_position(tp)
            if offset is None:
                continue
            leader = metadata.leader_for(tp)
            if leader is None:
                leaderless = True
            elif leader not in self._in_flight and self._backoff_until.get(leader, 0) <= now:
                info = infos.get(tp)
                if info is None or info.fetch_offset != offset:
                    info = infos[tp] = PartitionFetchInfo(
                        offset, self._config.max_partition_fetch_bytes
                    )
                fetch_data = by_leader.get(leader)
                if fetch_data is None:
                    fetch_data = by_leader[leader] = {}
                fetch_data[tp] = info
        self._leaderless = leaderless
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
        backoff = response.error is not NO_ERROR and not session_failed
        reset: list[TopicPartition] = []
        answered = response.responses
        positions = self._positions
        # In the order of this fetch's partitions, not of the response's: a session lists
        # its partitions in the order they joined it.
        for tp, info in fetched.items():
            data = answered.get(tp)
            if data is None or positions.fetch_position(tp) != info.fetch_offset:
                continue  # no news, or the position moved meanwhile
            if data.error is NO_ERROR:
                positions.fetched_up_to(tp, _unpack(tp, info.fetch_offset, data.records, records))
            elif data.error == Errors.OFFSET_OUT_OF_RANGE:
                reset.append(tp)
            elif data.error in _METADATA_ERRORS:
                refresh = True
            else:  # NETWORK_EXCEPTION (broker down), REQUEST_TIMED_OUT, ...: try again later
                backoff = True
        if records.offsets:
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
        elif not records.offsets or self._leaderless:
            # After a delivery the poller has run the fetch loop (it polled) or holds the
            # records (no fetch is sent while records are held): another pass would only ask
            # again for the refresh a partition without leader needs.
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
        ids = message_ids_column(records)
        into.add(tp, batch.base_offset + skip, ids[skip:] if skip else ids)
        offset = batch.base_offset + skip + count
    return offset

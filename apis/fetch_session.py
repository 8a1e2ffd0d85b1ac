"""Fetch sessions (KIP-227): a fetcher sends only the partitions that changed, the broker
answers only the partitions with news.

Kafka's ``FetchSession.scala`` (Kafka 3.9), on the broker side, beside KafkaApis. A fetch
request carries a session id and an epoch (:class:`~replica.fetch_session_handler.FetchMetadata`;
the fetcher's module has the table of what they mean).

A *full* fetch lists every partition and gets every partition back. An *incremental* fetch
lists only the partitions added to the session or whose fetch data changed (fetch offset,
epochs, ...) and names the partitions to drop (``forgotten``); the broker fetches every
partition of the session, with the fetch data it remembers, and answers only the partitions
with news: records, an error, a diverging epoch, or a high watermark, last stable offset or
log start offset different from the one last sent in this session.

A session keeps its partitions' fetch data split into active and *idle* ones
(:class:`~replica.session_partitions.SessionPartitions`): idle partitions are those whose
last read found nothing to send. A fetch in the session fetches its active partitions; the
replica layer wakes and reads the idle ones whose log changed, and leaves the others out
without reading them (they would have no news); a partition whose fetch data changes is
active again. This is the broker half of what makes an idle partition cost nothing (KIP-227's
point).

Each incremental fetch must carry the session's next epoch: an unknown session id is answered
FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH (top-level error, no
partitions, nothing fetched); the fetcher then starts over with a full fetch.

The :class:`FetchSessionCache` holds at most ``max.incremental.fetch.session.cache.slots``
sessions (Kafka's default 1000). When it is full a new session takes the slot of the least
recently used session that is stale (unused for ``min.incremental.fetch.session.eviction.ms``),
or, for a follower (a *privileged* session), of the least recently used consumer session;
otherwise no session is made and the full fetch is answered without one (session id 0), as
Kafka does. Kafka also lets a bigger consumer session evict a smaller one; the model does
not. Session ids come from a counter, not a random generator: same inputs, same ids.

Time comes from the caller (``now`` in ms): the module is sans-IO. The fetcher's side, and
:class:`FetchMetadata`, are in :mod:`replica.fetch_session_handler`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from replica.errors import Errors
from replica.fetch_session_handler import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchMetadata,
)
from replica.session_partitions import SessionPartitions
from replica.types import (
    NO_ERROR,
    UNKNOWN_OFFSET,
    FetchPartitionData,
    PartitionFetchInfo,
    TopicPartition,
)

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INVALID_SESSION_ID",
    "CachedPartition",
    "FetchContext",
    "FetchManager",
    "FetchMetadata",
    "FetchSession",
    "FetchSessionCache",
]


class CachedPartition:
    """What the session's responses last sent of one of its partitions (its fetch data is in
    the session's :class:`~replica.session_partitions.SessionPartitions`). A plain class
    (native in the compiled build): every response of a session visits one per partition."""

    __slots__ = ("high_watermark", "last_stable_offset", "log_start_offset")

    def __init__(
        self, high_watermark: int = -1, last_stable_offset: int = -1, log_start_offset: int = -1
    ) -> None:
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset

    def __repr__(self) -> str:
        return (
            f"CachedPartition(high_watermark={self.high_watermark}, "
            f"last_stable_offset={self.last_stable_offset}, "
            f"log_start_offset={self.log_start_offset})"
        )

    def maybe_update_response_data(self, data: FetchPartitionData, incremental: bool) -> bool:
        """Remember the offsets ``data`` sends; return whether ``data`` goes in the response:
        always for a full one, for an incremental one only when the partition has news."""
        news = (
            data.error is not NO_ERROR
            or data.records_size > 0
            or data.diverging_epoch is not None
            or data.high_watermark != self.high_watermark
            or data.last_stable_offset != self.last_stable_offset
            or data.log_start_offset != self.log_start_offset
        )
        if data.error is NO_ERROR and data.diverging_epoch is None:
            self.high_watermark = data.high_watermark
            self.last_stable_offset = data.last_stable_offset
            self.log_start_offset = data.log_start_offset
        else:
            # A fetcher ignores the offsets of a partition in error or that must truncate to a
            # diverging epoch, so none of them counts as sent: the next plain answer must
            # carry them, or a quiet partition's follower would keep a stale high watermark
            # (Kafka's error responses carry -1 for all three, with the same effect).
            self.high_watermark = self.last_stable_offset = self.log_start_offset = UNKNOWN_OFFSET
        return news or not incremental


class FetchSession:
    """A session: what its responses sent of each of its partitions (in the order they were
    added) and their fetch data (active or idle), its next expected epoch, whether a follower
    owns it, and when it was made and last used (ms). A plain class (native in the compiled
    build): every fetch in the session reads it."""

    __slots__ = (
        "creation_ms", "epoch", "fetch_partitions", "last_used_ms", "partitions", "privileged",
        "session_id",
    )  # fmt: skip

    def __init__(
        self,
        session_id: int,
        privileged: bool,
        partitions: dict[TopicPartition, CachedPartition],
        fetch_partitions: SessionPartitions,
        creation_ms: int,
        last_used_ms: int,
        epoch: int = 1,
    ) -> None:
        self.session_id = session_id
        self.privileged = privileged
        self.partitions = partitions
        self.fetch_partitions = fetch_partitions
        self.creation_ms = creation_ms
        self.last_used_ms = last_used_ms
        self.epoch = epoch

    def __repr__(self) -> str:
        return (
            f"FetchSession(session_id={self.session_id}, privileged={self.privileged}, "
            f"partitions={len(self.partitions)}, epoch={self.epoch}, "
            f"creation_ms={self.creation_ms}, last_used_ms={self.last_used_ms})"
        )


class FetchSessionCache:
    """The broker's sessions, at most ``max_entries``, evicted as the module docstring says.

    Raises ValueError for ``max_entries`` or ``eviction_ms`` below 0.
    """

    def __init__(self, max_entries: int = 1000, eviction_ms: int = 120_000) -> None:
        if max_entries < 0 or eviction_ms < 0:
            raise ValueError(
                f"max_entries and eviction_ms must be >= 0, got {max_entries}, {eviction_ms}"
            )
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._sessions: dict[int, FetchSession] = {}  # least recently used first
        self._next_id = 1
        #: Sessions evicted to make room (Kafka's IncrementalFetchSessionEvictionsPerSec).
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        """The session with this id, or None."""
        return self._sessions.get(session_id)

    def touch(self, session: FetchSession, now: int) -> None:
        """Mark ``session`` used at ``now`` (it becomes the most recently used)."""
        session.last_used_ms = now
        del self._sessions[session.session_id]
        self._sessions[session.session_id] = session

    def remove(self, session_id: int) -> FetchSession | None:
        """Forget the session with this id; return it (None if there was none)."""
        return self._sessions.pop(session_id, None)

    def maybe_create_session(
        self,
        now: int,
        privileged: bool,
        partitions: dict[TopicPartition, CachedPartition],
        fetch_partitions: SessionPartitions | None = None,
    ) -> int:
        """Make a session of ``partitions`` with their fetch data (what the full fetch's read
        found idle is idle) if there is room (evicting one if allowed); return its id, or
        INVALID_SESSION_ID if none was made."""
        if len(self._sessions) >= self.max_entries and not self._evict_for(privileged, now):
            return INVALID_SESSION_ID
        session_id = self._next_id
        self._next_id = 1 if session_id >= 2**31 - 1 else session_id + 1
        while session_id in self._sessions or session_id == INVALID_SESSION_ID:
            session_id += 1
        self._sessions[session_id] = FetchSession(
            session_id,
            privileged,
            partitions,
            SessionPartitions() if fetch_partitions is None else fetch_partitions,
            now,
            now,
        )
        return session_id

    def _evict_for(self, privileged: bool, now: int) -> bool:
        """Evict the least recently used stale session, else (for a privileged newcomer) the
        least recently used unprivileged one; return whether one was evicted."""
        victim = None
        for session in self._sessions.values():
            if session.last_used_ms + self.eviction_ms <= now:
                victim = session
                break
        if victim is None and privileged:
            victim = next((s for s in self._sessions.values() if not s.privileged), None)
        if victim is None:
            return False
        del self._sessions[victim.session_id]
        self.evictions += 1
        return True


class FetchContext:
    """What one fetch request resolved to (Kafka's FetchContext kinds, in one class).

    ``fetch_data`` is what to fetch (the request's partitions, or the session's active ones
    for an incremental fetch); ``error`` is set for a session error (then nothing is fetched);
    ``session`` is an incremental fetch's session; ``create_session`` marks a full fetch with
    epoch INITIAL; ``fetch_partitions`` are the session's partitions the read keeps up to
    date, waking idle ones that changed (None: a sessionless fetch): the session's, or a new
    one's for a full fetch that opens one. :meth:`FetchManager.response_data` turns the
    fetched data into the response's. A plain class (one is made per fetch; native, so cheap,
    in the compiled build).
    """

    __slots__ = (
        "create_session", "error", "fetch_data", "fetch_partitions", "privileged", "session",
    )  # fmt: skip

    def __init__(
        self,
        fetch_data: Mapping[TopicPartition, PartitionFetchInfo],
        error: Errors = Errors.NONE,
        *,
        session: FetchSession | None = None,
        create_session: bool = False,
        privileged: bool = False,
        fetch_partitions: SessionPartitions | None = None,
    ) -> None:
        self.fetch_data = fetch_data
        self.error = error
        self.session = session
        self.create_session = create_session
        self.privileged = privileged
        self.fetch_partitions = fetch_partitions

    @property
    def waits_on_idle(self) -> bool:
        """Whether the fetch has idle session partitions to wait on (it may wait even with no
        active partition to read)."""
        return self.fetch_partitions is not None and bool(self.fetch_partitions.idle)


class FetchManager:
    """Resolves fetch requests against the :class:`FetchSessionCache` (Kafka's
    ``FetchManager``): :meth:`new_context` when a fetch arrives, :meth:`response_data` when its
    data is ready."""

    def __init__(self, cache: FetchSessionCache) -> None:
        self.cache = cache

    def new_context(
        self,
        metadata: FetchMetadata,
        fetch_data: Mapping[TopicPartition, PartitionFetchInfo],
        forgotten: Iterable[TopicPartition],
        privileged: bool,
        now: int,
    ) -> FetchContext:
        """Resolve a fetch with ``metadata`` at ``now``: a full fetch closes the session it
        names (and asks for a new one with epoch INITIAL); an incremental one updates its
        session with ``fetch_data`` and ``forgotten`` and bumps its epoch, or fails with
        FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH."""
        cache = self.cache
        if metadata.is_full:
            if metadata.session_id != INVALID_SESSION_ID:
                cache.remove(metadata.session_id)
            create_session = metadata.epoch == INITIAL_EPOCH
            return FetchContext(
                fetch_data,
                create_session=create_session,
                privileged=privileged,
                fetch_partitions=SessionPartitions(fetch_data) if create_session else None,
            )
        session = cache.get(metadata.session_id)
        if session is None:
            return FetchContext({}, Errors.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != metadata.epoch:
            return FetchContext({}, Errors.INVALID_FETCH_SESSION_EPOCH)
        partitions = session.partitions
        fetch_partitions = session.fetch_partitions
        for tp in forgotten:
            partitions.pop(tp, None)
        fetch_partitions.forget(forgotten)
        for tp, info in fetch_data.items():
            fetch_partitions.put(tp, info)
            if tp not in partitions:
                partitions[tp] = CachedPartition()
        session.epoch = metadata.next_incremental().epoch
        cache.touch(session, now)
        return FetchContext(
            fetch_partitions.in_order(fetch_partitions.active),
            session=session,
            fetch_partitions=fetch_partitions,
        )

    def response_data(
        self, context: FetchContext, data: Mapping[TopicPartition, FetchPartitionData], now: int
    ) -> tuple[int, Mapping[TopicPartition, FetchPartitionData]]:
        """The response's session id and partitions for ``data`` fetched under ``context``:
        every partition of a full fetch (opening its session now if it asked for one), the
        partitions with news of an incremental one (``data`` lacks the idle partitions the
        read skipped: they have none)."""
        session = context.session
        if session is None:
            session_id = INVALID_SESSION_ID
            if context.create_session:
                cached = {tp: CachedPartition() for tp in context.fetch_data}
                for tp, partition_data in data.items():
                    cached_partition = cached.get(tp)
                    if cached_partition is not None:
                        cached_partition.maybe_update_response_data(partition_data, False)
                assert context.fetch_partitions is not None  # made with the context
                session_id = self.cache.maybe_create_session(
                    now, context.privileged, cached, context.fetch_partitions
                )
            return session_id, data
        partitions = session.partitions
        news: dict[TopicPartition, FetchPartitionData] = {}
        for tp, partition_data in data.items():
            cached_partition = partitions.get(tp)
            if cached_partition is None or cached_partition.maybe_update_response_data(
                partition_data, True
            ):
                news[tp] = partition_data
        return session.session_id, news

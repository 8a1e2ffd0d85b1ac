"""The fetcher's side of fetch sessions (KIP-227): Kafka's ``FetchSessionHandler`` and
``FetchMetadata``.

A fetcher (a follower's :class:`~replica.replica_fetcher.ReplicaFetcher`, a consumer) keeps
one session with each broker it fetches from. Its first fetch is *full* (every partition,
epoch INITIAL): the broker opens a session and answers with its id. From then on each fetch is
*incremental* (the session's next epoch): it lists only the partitions added or whose fetch
data changed since the last fetch, and names those dropped (``forgotten``); the broker
remembers the rest and answers only the partitions with news (the broker's side is
``apis.fetch_session``). After a session error (FETCH_SESSION_ID_NOT_FOUND,
INVALID_FETCH_SESSION_EPOCH), a failed fetch or a response without a session, the next fetch
is full again; one that failed closes the old session as it opens the new one (Kafka's
``nextCloseExistingAttemptNew``), so the broker's cache does not fill with orphans.

=================  ===========  ============================================================
session id         epoch        meaning
=================  ===========  ============================================================
0                  -1 (FINAL)   a sessionless full fetch: no session is made
0 or an old id     0 (INITIAL)  a full fetch that opens a new session (closing the old one)
an id              -1 (FINAL)   a full fetch that closes session ``id``
an id              >= 1         an incremental fetch in session ``id``, epoch ``epoch``
=================  ===========  ============================================================

It lives in ``replica`` (Kafka has it in its clients module) because the replica fetcher
uses it and may not import ``apis``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from replica.errors import Errors
from replica.types import NO_ERROR, PartitionFetchInfo, TopicPartition

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INVALID_SESSION_ID",
    "FetchMetadata",
    "FetchRequestData",
    "FetchSessionHandler",
]

INVALID_SESSION_ID: Final = 0
"""The session id of a fetch that has no session (yet)."""
INITIAL_EPOCH: Final = 0
"""The epoch of a full fetch that opens a session."""
FINAL_EPOCH: Final = -1
"""The epoch of a full fetch that wants no session (closing the named one, if any)."""

_MAX_EPOCH: Final = 2**31 - 1


class FetchMetadata:
    """A fetch's session id and epoch (see the module docstring's table). An immutable value:
    equal, and hashed alike, when both fields are.

    A plain class, not an attrs one: every fetch makes one or two, on the client's and on the
    broker's side, and a plain class is built natively in the compiled build."""

    __slots__ = ("epoch", "session_id")

    def __init__(self, session_id: int = INVALID_SESSION_ID, epoch: int = FINAL_EPOCH) -> None:
        self.session_id = session_id
        self.epoch = epoch

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FetchMetadata)
            and self.session_id == other.session_id
            and self.epoch == other.epoch
        )

    def __hash__(self) -> int:
        return hash((self.session_id, self.epoch))

    def __repr__(self) -> str:
        return f"FetchMetadata(session_id={self.session_id}, epoch={self.epoch})"

    @property
    def is_full(self) -> bool:
        """True for a full fetch (epoch INITIAL or FINAL)."""
        return self.epoch == INITIAL_EPOCH or self.epoch == FINAL_EPOCH

    def next_incremental(self) -> FetchMetadata:
        """The next fetch in this session: epoch + 1, wrapping past 2**31-1 to 1 (Kafka's
        ``nextEpoch``)."""
        return FetchMetadata(self.session_id, 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1)


class FetchRequestData:
    """One fetch built by :meth:`FetchSessionHandler.build`: its session metadata, the
    partitions to send (all for a full fetch, the added or changed ones for an incremental
    one) and those to forget. Read-only (a plain class: one per fetch)."""

    __slots__ = ("forgotten", "metadata", "to_send")

    def __init__(
        self,
        metadata: FetchMetadata,
        to_send: Mapping[TopicPartition, PartitionFetchInfo],
        forgotten: tuple[TopicPartition, ...],
    ) -> None:
        self.metadata = metadata
        self.to_send = to_send
        self.forgotten = forgotten

    def __repr__(self) -> str:
        return (
            f"FetchRequestData(metadata={self.metadata!r}, to_send={self.to_send!r}, "
            f"forgotten={self.forgotten!r})"
        )


class FetchSessionHandler:
    """A fetcher's session with one broker (see the module docstring)."""

    __slots__ = ("_metadata", "_session_partitions")

    def __init__(self) -> None:
        self._metadata = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
        # What the broker's session holds: the fetch data last sent for each partition.
        self._session_partitions: dict[TopicPartition, PartitionFetchInfo] = {}

    @property
    def session_id(self) -> int:
        """The session's id (INVALID_SESSION_ID: none yet)."""
        return self._metadata.session_id

    def build(self, fetch_infos: Mapping[TopicPartition, PartitionFetchInfo]) -> FetchRequestData:
        """The next fetch of ``fetch_infos`` (the partitions to fetch now, in order): full if
        there is no session, else incremental. The handler takes it as sent (a dict is kept
        as it is: the caller must not change it afterwards)."""
        infos = fetch_infos if isinstance(fetch_infos, dict) else dict(fetch_infos)
        metadata = self._metadata
        previous = self._take_as_sent(infos)
        if previous is None:
            return FetchRequestData(metadata, infos, ())
        to_send: dict[TopicPartition, PartitionFetchInfo] = {}
        kept = 0  # partitions of ``previous`` fetched again
        for tp, info in infos.items():
            sent = previous.get(tp)
            if sent is None:
                to_send[tp] = info
                continue
            kept += 1
            if sent is not info and sent != info:  # the same object is unchanged: no compare
                to_send[tp] = info
        if kept == len(previous):
            return FetchRequestData(metadata, to_send, ())
        forgotten = tuple([tp for tp in previous if tp not in infos])
        return FetchRequestData(metadata, to_send, forgotten)

    def build_changed(
        self,
        fetch_infos: dict[TopicPartition, PartitionFetchInfo],
        changed: Iterable[TopicPartition],
    ) -> FetchRequestData:
        """:meth:`build` of ``fetch_infos`` when it holds the very partitions of the last fetch
        built, in the same order, and only the fetch data of ``changed`` (some of them, in
        that order) may be other objects than the last fetch's: the same fetch, found in
        proportion to ``changed`` rather than to the session (for a fetcher that keeps a
        change feed). Fetch data is compared by identity: the caller keeps the object of a
        partition whose fetch data did not change (an equal new one is sent again)."""
        metadata = self._metadata
        previous = self._take_as_sent(fetch_infos)
        if previous is None:
            return FetchRequestData(metadata, fetch_infos, ())
        to_send: dict[TopicPartition, PartitionFetchInfo] = {}
        for tp in changed:
            info = fetch_infos[tp]
            if previous.get(tp) is not info:
                to_send[tp] = info
        return FetchRequestData(metadata, to_send, ())

    def _take_as_sent(
        self, infos: dict[TopicPartition, PartitionFetchInfo]
    ) -> dict[TopicPartition, PartitionFetchInfo] | None:
        """Take ``infos`` as the partitions of the fetch being built; return the last fetch's,
        or None when this fetch is full (it carries all of ``infos``)."""
        previous = self._session_partitions
        self._session_partitions = infos
        return None if self._metadata.is_full else previous

    def handle_response(self, session_id: int, error: Errors) -> bool:
        """The broker answered the last fetch with top-level ``error`` in session
        ``session_id``; return False if the session failed (the next fetch is full)."""
        metadata = self._metadata
        if error is not NO_ERROR:
            self._restart(error is not Errors.FETCH_SESSION_ID_NOT_FOUND)
            return False
        if metadata.is_full:
            if session_id == INVALID_SESSION_ID:  # no room, or a broker without sessions
                self._metadata = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
            else:
                self._metadata = FetchMetadata(session_id, 1)
        else:
            self._metadata = metadata.next_incremental()
        return True

    def handle_error(self) -> None:
        """The last fetch got no response: the next one is full, closing this session."""
        self._restart(close_existing=True)

    def _restart(self, close_existing: bool) -> None:
        session_id = self._metadata.session_id if close_existing else INVALID_SESSION_ID
        self._metadata = FetchMetadata(session_id, INITIAL_EPOCH)
        self._session_partitions = {}

"""DelayedFetch: a fetch long-polling until enough bytes are available or its wait ends.

Completion conditions (Kafka's ``DelayedFetch.tryComplete``), checked per partition against
where the fetch may read to (the log end offset for a follower, the high watermark for a
consumer):

* this broker is no longer the leader, the partition is unknown, or the fetch's leader epoch
  is fenced/unknown: complete (the read then reports the error);
* the fetch offset is beyond the end offset (its case F as of Kafka 3.8, KAFKA-16452): a
  consumer between the high watermark and the log end offset, or a leader whose log was
  truncated below the fetch position: complete at once, with no records;
* the fetch offset is below the end offset but on an older segment (the end moved to a newer
  segment): complete;
* otherwise the available bytes, ``min(end position - fetch position, partition max_bytes)``,
  are summed over partitions; complete when the sum reaches ``min_bytes``.

Kafka also completes a waiting fetch whose ``last_fetched_epoch`` started to diverge while it
waited (its case H). That cannot happen here: a fetch that diverges is answered at once, and
while a broker leads its log only grows and each new epoch starts at its log end, so an epoch
that reached the fetch offset keeps reaching it.

Checks per key: the first tries (at submission) check every partition the fetch read and
keep each one's available bytes and their sum. A fetch in an incremental session also waits on
the session's idle partitions (:mod:`replica.session_partitions`), which it did not read: each
is at the end offset its entry records, unchanged since, so its share starts at 0 and it is not
checked then. Afterwards the purgatory names the partition whose state changed
(:meth:`~DelayedFetch.try_complete_for_key`), and only that partition is checked again, from
where the fetch read it or, idle, from its entry's position: its bytes replace its earlier
share of the sum, so a check costs O(1) however many partitions the fetch has (a follower's
carries every partition it follows). That is exact because the manager checks a partition's
key after every change a condition reads: an append (end offset, segment roll), a
high-watermark move, a change of leadership or a truncation (which follows one).

On completion (satisfied, forced or expired) the data is read again *then* and handed to the
response callback: the nested callback of the refactoring design. In a session the read also
wakes and reads the idle partitions whose log changed meanwhile.

A delayed fetch uses two members of the :class:`~replica.replica_manager.ReplicaManager` that
creates it, stated by the :class:`LocalLogReader` protocol; this module does not import the
manager.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Protocol, cast

from purgatory import DelayedOperation
from replica.partition import Partition
from replica.session_partitions import SessionPartitions
from replica.types import (
    FetchParams,
    FetchPartitionData,
    LogOffsetMetadata,
    LogReadResult,
    PartitionFetchInfo,
    TopicPartition,
)


class LocalLogReader(Protocol):
    """The broker's local logs, as a delayed fetch sees them (the ReplicaManager)."""

    def get_partition(self, topic_partition: TopicPartition) -> Partition | None:
        """The hosted partition (where the completion conditions are checked), or None."""

    def read_from_local_log(
        self,
        params: FetchParams,
        fetch_infos: Mapping[TopicPartition, PartitionFetchInfo],
        session: SessionPartitions | None = None,
    ) -> dict[TopicPartition, LogReadResult]:
        """Read each partition from its local leader log, now, without waiting; errors are
        per partition, in the results (the read a completed fetch answers with); a fetch
        session's idle partitions are read too once their log changed."""


FetchPartitionStatus = tuple[LogOffsetMetadata, PartitionFetchInfo]
"""One partition of a delayed fetch: the position of its fetch offset and its part of the
request. A plain tuple: one is built for every partition of every fetch that waits."""


class DelayedFetch(DelayedOperation):
    """Waits (``params.max_wait_ms``) until ``params.min_bytes`` can be read."""

    __slots__ = (
        "_accumulated",
        "_available",
        "_fetch_status",
        "_params",
        "_replica_manager",
        "_response_callback",
        "_session",
    )

    def __init__(
        self,
        delay_ms: int,
        params: FetchParams,
        fetch_status: dict[TopicPartition, FetchPartitionStatus],
        replica_manager: LocalLogReader,
        response_callback: Callable[[dict[TopicPartition, FetchPartitionData]], None],
        session: SessionPartitions | None = None,
    ) -> None:
        super().__init__(delay_ms)
        self._session = session
        self._params = params
        self._fetch_status = fetch_status
        self._replica_manager = replica_manager
        self._response_callback = response_callback
        # Each partition's available bytes (capped at its max_bytes) at its last check (no
        # entry: 0, never checked or none then), and their sum: set by the first full try
        # (None before it), then kept up to date per key.
        self._available: dict[TopicPartition, int] | None = None
        self._accumulated = 0

    @property
    def params(self) -> FetchParams:
        """The request-level fetch parameters."""
        return self._params

    def try_complete(self) -> bool:
        """Check the completion conditions of every partition the fetch read (a session's
        idle partitions start with no bytes, see the module docstring); force completion if
        one holds, else remember each partition's available bytes.

        An error, a fetch offset beyond the end offset or a segment change completes at once;
        otherwise the fetch completes when the available bytes sum to ``min_bytes`` (it stops
        at the partition that reaches it: every share is non-negative).
        """
        self._available = {}
        self._accumulated = 0
        for tp, (fetch_offset, fetch_info) in self._fetch_status.items():
            if self._completes(tp, fetch_offset, fetch_info):
                return self.force_complete()
        return False

    def try_complete_for_key(self, key: Hashable) -> bool:
        """Check partition ``key`` only (see the module docstring): complete if its state
        completes the fetch, or if its new share brings the sum to ``min_bytes``. Before the
        first full try, or for a key that is neither read by the fetch nor idle in its
        session any more, :meth:`try_complete`."""
        if self._available is not None:
            tp = cast(TopicPartition, key)  # a fetch is watched under its partitions
            status = self._fetch_status.get(tp)
            if status is not None:
                completes = self._completes(tp, status[0], status[1])
                return self.force_complete() if completes else False
            entry = None if self._session is None else self._session.idle.get(tp)
            if entry is not None:
                completes = self._completes(tp, entry.end, entry.info)
                return self.force_complete() if completes else False
        return self.try_complete()

    def _completes(
        self, tp: TopicPartition, fetch_offset: LogOffsetMetadata, fetch_info: PartitionFetchInfo
    ) -> bool:
        """Check partition ``tp`` from where the fetch stands in it (``fetch_offset``):
        whether its state completes the fetch at once, else replace its share of the
        available bytes and say whether the sum reaches ``min_bytes``."""
        if fetch_offset.message_offset < 0:
            return False  # the first read failed or was emptied: nothing to wait for
        partition = self._replica_manager.get_partition(tp)
        if partition is None:
            return True
        end_offset = partition.fetch_end_offset_metadata(
            fetch_info.current_leader_epoch, self._params.isolation
        )
        if end_offset is None:  # not the leader (in the fetch's epoch) any more
            return True
        if fetch_offset.message_offset > end_offset.message_offset:
            return True  # beyond what this fetcher may read
        # Equal offsets wait whatever their segments: after a roll the end offset may sit,
        # unchanged, on the older segment.
        share = 0
        if fetch_offset.message_offset < end_offset.message_offset:
            if fetch_offset.on_older_segment(end_offset):
                return True
            if fetch_offset.on_same_segment(end_offset):
                share = min(end_offset.position_diff(fetch_offset), fetch_info.max_bytes)
        available = self._available
        assert available is not None  # set by the first full try
        previous = available.get(tp, 0)
        if share != previous:  # a share of 0 is kept as no entry: no insert for it
            self._accumulated += share - previous
            available[tp] = share
        return self._accumulated >= self._params.min_bytes

    def on_complete(self) -> None:
        infos = {tp: fetch_info for tp, (_, fetch_info) in self._fetch_status.items()}
        results = self._replica_manager.read_from_local_log(self._params, infos, self._session)
        to_follower = self._params.replica_id >= 0
        self._response_callback(
            {tp: r.to_fetch_partition_data(to_follower) for tp, r in results.items()}
        )

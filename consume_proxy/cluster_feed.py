"""ClusterFeed: the consume proxy's Kafka side, over the in-process cluster's Client.

The core (:class:`~consume_proxy.ConsumeProxy`) knows nothing of Kafka; this driver connects
it to a :class:`cluster.Cluster` through :class:`cluster.Client`, doing with the cluster's
requests what :class:`~consume_proxy.feed.Feed` says (read that first): the state log, the
commits, dead letters and flow control are the feed's, shared with the real server's
:class:`~consume_proxy.kafka_feed.KafkaFeed`. The state log topic (``log_topic``) must exist
with as many partitions as the data topic, and so must the dead-letter topic if one is given.
A proxy given no writer id gets one derived from the client's id (its first 8 bytes of
BLAKE2b, so the same client id gives the same id in every run): feeds sharing a log need
clients with distinct ids.

* :meth:`ClusterFeed.assign` looks up the group's committed offsets of the data partition and
  of its log partition (one OffsetFetch; 0 when nothing is committed) and starts reading both.
  There is no group membership here: the caller assigns and revokes
  (:meth:`ClusterFeed.revoke`), as a group's rebalance would.
* :meth:`ClusterFeed.poll`, called after each move of the cluster's clock or request: moves
  the proxy to the cluster's time; passes the answered log reads (long polls: the log is read
  for as long as the partition is owned) and data fetches to the feed and keeps one of each
  in flight per owned partition (none for a paused fetch; none once the log fenced the
  partition); produces the feed's batches with acks=all and reports how they went; sends the
  feed's commits as one OffsetCommit and reports how it went. A fetch that fails (a leader
  moving) is sent again from the same offset.

Like the cluster it is synchronous: whoever moves the cluster's clock or sends it requests
calls :meth:`~ClusterFeed.poll` afterwards.
"""

from __future__ import annotations

import hashlib

from apis.fetch import FetchResponse
from apis.offset_commit import OffsetCommitResponse
from apis.offset_fetch import OffsetFetchResponse
from apis.produce import ProduceResponse
from cluster.client import Client
from cluster.cluster import Call
from consume_proxy.errors import InvalidProxyConfigError
from consume_proxy.feed import DEFAULT_LOG_TOPIC, DEFAULT_WINDOW, Batch, Feed, Fetched
from consume_proxy.proxy import MAX_WRITER, ConsumeProxy
from replica.errors import Errors
from replica.records import Record as KafkaRecord
from replica.types import FetchPartitionData, TopicPartition

__all__ = ["DEFAULT_LOG_TOPIC", "ClusterFeed"]


class ClusterFeed:
    """Feeds ``proxy`` from ``client``'s cluster and commits for ``group_id`` (see the module
    docstring). ``max_wait_ms`` is each fetch's long-poll time at the broker; ``log_topic``,
    ``dead_letter_topic`` and ``window`` are the :class:`~consume_proxy.feed.Feed`'s."""

    def __init__(
        self,
        proxy: ConsumeProxy,
        client: Client,
        group_id: str,
        *,
        max_wait_ms: int = 500,
        log_topic: str = DEFAULT_LOG_TOPIC,
        dead_letter_topic: str | None = None,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self.proxy = proxy
        self.client = client
        self.group_id = group_id
        self.max_wait_ms = max_wait_ms
        if not proxy.writer:
            proxy.writer = _writer_of(client.client_id)
        self.feed = Feed(
            proxy, log_topic=log_topic, dead_letter_topic=dead_letter_topic, window=window
        )
        self._fetches: dict[TopicPartition, tuple[int, Call]] = {}  # fetch offset, its call
        self._log_reads: dict[TopicPartition, tuple[int, Call]] = {}  # read position, call
        self._producing: list[tuple[Batch, Call]] = []
        self._committing: tuple[dict[TopicPartition, int], Call] | None = None
        self.commits: list[Call] = []  # the OffsetCommits sent, oldest first

    def assign(self, tp: TopicPartition) -> int:
        """Serve ``tp`` from the group's committed offset, after catching up on its log
        partition from the log's committed offset; returns the data offset. Raises
        InvalidProxyConfigError if the group's coordinator did not answer at once."""
        log_tp = self.feed.log_partition(tp)
        call = self.client.fetch_offsets(self.group_id, [tp, log_tp])
        if not call.done:
            raise InvalidProxyConfigError(
                f"the coordinator of group {self.group_id!r} did not answer the OffsetFetch "
                f"of {tp}; settle the cluster first"
            )
        offsets = call.result(OffsetFetchResponse).offsets
        start, log_start = (max(offsets[p].offset, 0) for p in (tp, log_tp))
        self.feed.assign(tp, start, log_start)
        self._keep_reading()
        return start

    def revoke(self, tp: TopicPartition) -> None:
        """``tp`` moves to another server: stop serving it and commit its last positions."""
        due = self.feed.revoke(tp)
        self._fetches.pop(tp, None)
        self._log_reads.pop(tp, None)
        if due:
            self.commits.append(self.client.commit(self.group_id, due))

    def poll(self) -> int:
        """Catch up with the cluster (see the module docstring); returns how many records
        were appended to the proxy."""
        feed = self.feed
        self.proxy.advance(self.client.cluster.clock.now)
        for tp, (position, call) in list(self._log_reads.items()):
            if call.done:
                del self._log_reads[tp]
                data = _answer(call, feed.log_partition(tp))
                if data is not None:
                    feed.log(tp, _records(data, position))
        for tp in feed.take_fenced():
            self._fetches.pop(tp, None)
        appended = 0
        for tp, (offset, call) in list(self._fetches.items()):
            if call.done:
                del self._fetches[tp]
                data = _answer(call, tp)
                if data is not None:
                    appended += feed.data(tp, _records(data, offset))
        feed.flow()
        self._keep_reading()
        self._produce()
        self._commit()
        return appended

    def _keep_reading(self) -> None:
        """One log read and (unless paused) one data fetch in flight per owned partition."""
        feed = self.feed
        for tp in feed.owned:
            if tp not in self._log_reads:
                position = feed.log_position(tp)
                log_tp = feed.log_partition(tp)
                call = self.client.fetch(log_tp, position, max_wait_ms=self.max_wait_ms)
                self._log_reads[tp] = (position, call)
            if tp not in self._fetches and tp not in feed.paused:
                offset = feed.fetch_position(tp)
                call = self.client.fetch(tp, offset, max_wait_ms=self.max_wait_ms)
                self._fetches[tp] = (offset, call)

    def _produce(self) -> None:
        now = self.client.cluster.clock.now
        for batch in self.feed.batches():
            records = [KafkaRecord(r.key, r.value, now, r.headers) for r in batch.records]
            self._producing.append((batch, self.client.produce(batch.tp, records, acks=-1)))
        still = []
        for batch, call in self._producing:
            if not call.done:
                still.append((batch, call))
                continue
            answer = call.result(ProduceResponse).responses.get(batch.tp)
            self.feed.produced(batch, answer is not None and answer.error is Errors.NONE)
        self._producing = still

    def _commit(self) -> None:
        if self._committing is not None:
            sent, call = self._committing
            if not call.done:
                return
            self._committing = None
            errors = call.result(OffsetCommitResponse).errors
            self.feed.committed(sent, [tp for tp in sent if errors.get(tp) is not Errors.NONE])
        due = self.feed.commits()
        if due:
            call = self.client.commit(self.group_id, due)
            self._committing = (due, call)
            self.commits.append(call)


def _writer_of(client_id: str) -> int:
    """A writer id for ``client_id``: 1 to 2**63-1, the same in every run."""
    digest = hashlib.blake2b(client_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % MAX_WRITER + 1


def _answer(call: Call, tp: TopicPartition) -> FetchPartitionData | None:
    data = call.result(FetchResponse).responses.get(tp)
    return data if data is not None and data.error is Errors.NONE else None


def _records(data: FetchPartitionData, offset: int) -> Fetched:
    """The records of a fetch answer at or after ``offset``, with their offsets."""
    return [
        (batch.base_offset + index, record.key, record.value)
        for batch in data.records
        for index, record in enumerate(batch.records)
        if batch.base_offset + index >= offset
    ]

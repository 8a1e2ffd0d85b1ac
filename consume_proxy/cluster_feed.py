"""ClusterFeed: the consume proxy's Kafka side, over the in-process cluster's Client.

The core (:class:`~consume_proxy.ConsumeProxy`) knows nothing of Kafka; this adapter connects
it to a :class:`cluster.Cluster` through :class:`cluster.Client`, the way the real server will
connect it to a broker through a Kafka client. It reads and writes two topics: the data topic,
and the state log topic (``log_topic``, by default ``__consume_proxy_state``), which must
exist with as many partitions as the data topic. Data partition ``p`` keeps its state in log
partition ``p`` (:meth:`ClusterFeed.log_partition`); one log topic serves one data topic.

* :meth:`ClusterFeed.assign` looks up the group's committed offsets of the data partition and
  of its log partition (one OffsetFetch; 0 when nothing is committed), assigns the partition
  to the proxy in catch-up mode, and starts reading the log partition from its committed
  offset and fetching the data partition (a long poll) from its own.
* :meth:`ClusterFeed.poll`, called after each move of the cluster's clock or request:

  1. moves the proxy to the cluster's time (expiring leases and reads);
  2. catch-up: replays the log records read (:func:`~consume_proxy.decode_entry`) and reads
     on; once a read reaches the log's high watermark the partition is caught up
     (:meth:`~consume_proxy.ConsumeProxy.caught_up`) and the proxy serves it;
  3. appends the records of every answered data fetch and fetches again;
  4. produces the proxy's new log entries (:meth:`~consume_proxy.ConsumeProxy.poll_log`) to
     their log partitions with acks=all, one batch in flight per partition so that they
     land in order, a failed batch sent again before any later one. The proxy numbered the
     entries with the offsets they should get; a batch landing elsewhere means another
     server writes the partition, and raises LogDivergedError;
  5. commits, in ONE OffsetCommit for the group, the data positions the proxy's commit rule
     allows and each log partition's commit position (StateLog's rule), the latter never
     past what the broker has acknowledged. One request is one append to the offsets topic,
     so the log's commit never lands without the data commit it relies on. At most one
     commit is in flight; positions a failed commit carried are sent again.

Like the cluster it is synchronous: whoever moves the cluster's clock or sends it requests
calls :meth:`~ClusterFeed.poll` afterwards. A data or log fetch that fails (a leader moving)
is sent again from the same offset at the next poll.
"""

from __future__ import annotations

from apis.fetch import FetchResponse
from apis.offset_commit import OffsetCommitResponse
from apis.offset_fetch import OffsetFetchResponse
from apis.produce import ProduceResponse
from cluster.client import Client
from cluster.cluster import Call
from consume_proxy.errors import InvalidProxyConfigError, LogDivergedError
from consume_proxy.log_format import decode_entry, encode_entry
from consume_proxy.proxy import ConsumeProxy
from consume_proxy.state_log import LogEntry
from replica.errors import Errors
from replica.records import Record as KafkaRecord
from replica.types import FetchPartitionData, TopicPartition

__all__ = ["DEFAULT_LOG_TOPIC", "ClusterFeed"]

DEFAULT_LOG_TOPIC = "__consume_proxy_state"
"""The state log topic's name unless one is given."""


class ClusterFeed:
    """Feeds ``proxy`` from ``client``'s cluster, keeps its state in ``log_topic`` and
    commits for ``group_id`` (see the module docstring). ``max_wait_ms`` is each data
    fetch's long-poll time at the broker."""

    def __init__(
        self,
        proxy: ConsumeProxy,
        client: Client,
        group_id: str,
        *,
        max_wait_ms: int = 500,
        log_topic: str = DEFAULT_LOG_TOPIC,
    ) -> None:
        self.proxy = proxy
        self.client = client
        self.group_id = group_id
        self.max_wait_ms = max_wait_ms
        self.log_topic = log_topic
        self._fetches: dict[TopicPartition, tuple[int, Call]] = {}  # fetch offset, its call
        self._log_reads: dict[TopicPartition, tuple[int, Call]] = {}  # while catching up
        self._unsent: dict[TopicPartition, list[LogEntry]] = {}
        self._producing: dict[TopicPartition, tuple[list[LogEntry], Call]] = {}
        self._durable: dict[TopicPartition, int] = {}  # log end the broker acknowledged
        self._positions: dict[TopicPartition, int] = {}  # data and log positions to commit
        self._confirmed: dict[TopicPartition, int] = {}  # ... and those committed
        self._committing: tuple[dict[TopicPartition, int], Call] | None = None
        self.commits: list[Call] = []  # the OffsetCommits sent, oldest first

    def log_partition(self, tp: TopicPartition) -> TopicPartition:
        """The log partition holding the state of data partition ``tp``."""
        return TopicPartition(self.log_topic, tp.partition)

    def assign(self, tp: TopicPartition) -> int:
        """Serve ``tp`` from the group's committed offset, after catching up on its log
        partition from the log's committed offset; returns the data offset. Raises
        InvalidProxyConfigError if the group's coordinator did not answer at once."""
        log_tp = self.log_partition(tp)
        call = self.client.fetch_offsets(self.group_id, [tp, log_tp])
        if not call.done:
            raise InvalidProxyConfigError(
                f"the coordinator of group {self.group_id!r} did not answer the OffsetFetch "
                f"of {tp}; settle the cluster first"
            )
        offsets = call.result(OffsetFetchResponse).offsets
        start, log_start = (max(offsets[p].offset, 0) for p in (tp, log_tp))
        self.proxy.assign(tp, start, log_start=log_start)
        self._confirmed[tp], self._confirmed[log_tp] = start, log_start
        self._durable[tp] = log_start
        self._fetch(tp, start)
        self._read_log(tp, log_start)
        return start

    def poll(self) -> int:
        """Catch up with the cluster (see the module docstring); returns how many records
        were appended to the proxy."""
        self.proxy.advance(self.client.cluster.clock.now)
        for tp, (offset, call) in list(self._log_reads.items()):
            if call.done:
                self._replay(tp, offset, call)
        appended = 0
        for tp, (offset, call) in list(self._fetches.items()):
            if not call.done:
                continue
            data = self._answer(call, tp)
            if data is not None:
                for position, record in _records(data, offset):
                    self.proxy.append(tp, position, record.key, record.value)
                    appended += 1
                offset = self.proxy.partition(tp).end_offset
            self._fetch(tp, offset)
        self._produce_log()
        self._commit()
        return appended

    # -- the state log ----------------------------------------------------------------------

    def _read_log(self, tp: TopicPartition, offset: int) -> None:
        call = self.client.fetch(self.log_partition(tp), offset, max_wait_ms=0)
        self._log_reads[tp] = (offset, call)

    def _replay(self, tp: TopicPartition, offset: int, call: Call) -> None:
        data = self._answer(call, self.log_partition(tp))
        if data is None:
            self._read_log(tp, offset)
            return
        for position, record in _records(data, offset):
            self.proxy.replay(decode_entry(record.key, record.value, position))
            offset = position + 1
        if offset < data.high_watermark:
            self._read_log(tp, offset)
            return
        del self._log_reads[tp]
        self.proxy.caught_up(tp, offset)
        self._durable[tp] = offset

    def _produce_log(self) -> None:
        for entry in self.proxy.poll_log():
            self._unsent.setdefault(entry.tp, []).append(entry)
        self._settle_produces()
        now = self.client.cluster.clock.now
        for tp, entries in self._unsent.items():
            if entries and tp not in self._producing:
                records = [KafkaRecord(*encode_entry(entry), now) for entry in entries]
                call = self.client.produce(self.log_partition(tp), records, acks=-1)
                self._producing[tp] = (entries, call)
                self._unsent[tp] = []
        self._settle_produces()

    def _settle_produces(self) -> None:
        for tp, (entries, call) in list(self._producing.items()):
            if not call.done:
                continue
            del self._producing[tp]
            answer = call.result(ProduceResponse).responses.get(self.log_partition(tp))
            if answer is None or answer.error is not Errors.NONE:
                self._unsent[tp][:0] = entries  # again, before anything later
                continue
            if answer.base_offset != entries[0].position:
                raise LogDivergedError(
                    f"the state log of {tp} took this server's entries at offset "
                    f"{answer.base_offset}, not {entries[0].position}: another server writes "
                    f"{self.log_partition(tp)}"
                )
            self._durable[tp] = entries[-1].position + 1

    # -- commits ----------------------------------------------------------------------------

    def _commit(self) -> None:
        self._positions.update(self.proxy.commit())
        self.proxy.log.commit()
        for tp, durable in self._durable.items():
            if tp not in self._log_reads:  # caught up
                self._positions[self.log_partition(tp)] = min(self.proxy.log.committed(tp), durable)
        if self._committing is not None:
            sent, call = self._committing
            if not call.done:
                return
            self._committing = None
            for tp, error in call.result(OffsetCommitResponse).errors.items():
                if error is Errors.NONE:
                    self._confirmed[tp] = max(self._confirmed.get(tp, 0), sent[tp])
        due = {tp: o for tp, o in self._positions.items() if o > self._confirmed.get(tp, 0)}
        if due:
            call = self.client.commit(self.group_id, due)
            self._committing = (due, call)
            self.commits.append(call)

    # -- fetching ---------------------------------------------------------------------------

    def _fetch(self, tp: TopicPartition, offset: int) -> None:
        self._fetches[tp] = (offset, self.client.fetch(tp, offset, max_wait_ms=self.max_wait_ms))

    @staticmethod
    def _answer(call: Call, tp: TopicPartition) -> FetchPartitionData | None:
        data = call.result(FetchResponse).responses.get(tp)
        return data if data is not None and data.error is Errors.NONE else None


def _records(data: FetchPartitionData, offset: int) -> list[tuple[int, KafkaRecord]]:
    """The records of a fetch answer at or after ``offset``, with their offsets."""
    return [
        (batch.base_offset + index, record)
        for batch in data.records
        for index, record in enumerate(batch.records)
        if batch.base_offset + index >= offset
    ]

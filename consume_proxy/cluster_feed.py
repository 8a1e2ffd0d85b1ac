"""ClusterFeed: the consume proxy's Kafka side, over the in-process cluster's Client.

The core (:class:`~consume_proxy.ConsumeProxy`) knows nothing of Kafka; this adapter connects
it to a :class:`cluster.Cluster` through :class:`cluster.Client`, the way the real server will
connect it to a broker through a Kafka client:

* :meth:`ClusterFeed.assign` serves a partition from the group's committed offset
  (OffsetFetch; from offset 0 when nothing is committed) and starts a long-poll Fetch of it;
* :meth:`ClusterFeed.poll` moves the proxy to the cluster's time (expiring leases and reads),
  appends the records of every answered fetch to the proxy and fetches again from the next
  offset, and commits the data-topic positions the proxy's commit rule allows (OffsetCommit
  for the group).

Like the cluster it is synchronous: whoever moves the cluster's clock or sends it requests
calls :meth:`~ClusterFeed.poll` afterwards. A fetch that fails (a leader moving) is sent again
from the same offset at the next poll; commits are fire-and-forget, and a lost one is covered
by the next. The state log is not produced to Kafka yet (see docs/proxy.md).
"""

from __future__ import annotations

from apis.fetch import FetchResponse
from apis.offset_fetch import OffsetFetchResponse
from cluster.client import Client
from cluster.cluster import Call
from consume_proxy.errors import InvalidProxyConfigError
from consume_proxy.proxy import ConsumeProxy
from replica.errors import Errors
from replica.types import TopicPartition

__all__ = ["ClusterFeed"]


class ClusterFeed:
    """Feeds ``proxy`` from ``client``'s cluster and commits for ``group_id`` (see the module
    docstring). ``max_wait_ms`` is each fetch's long-poll time at the broker."""

    def __init__(
        self, proxy: ConsumeProxy, client: Client, group_id: str, *, max_wait_ms: int = 500
    ) -> None:
        self.proxy = proxy
        self.client = client
        self.group_id = group_id
        self.max_wait_ms = max_wait_ms
        self._fetches: dict[TopicPartition, tuple[int, Call]] = {}  # fetch offset, its call
        self.commits: list[Call] = []  # the OffsetCommits sent, oldest first

    def assign(self, tp: TopicPartition) -> int:
        """Serve ``tp`` from the group's committed offset; returns that offset. Raises
        InvalidProxyConfigError if the group's coordinator did not answer at once."""
        call = self.client.fetch_offsets(self.group_id, [tp])
        if not call.done:
            raise InvalidProxyConfigError(
                f"the coordinator of group {self.group_id!r} did not answer the OffsetFetch "
                f"of {tp}; settle the cluster first"
            )
        committed = call.result(OffsetFetchResponse).offsets[tp].offset
        start = max(committed, 0)
        self.proxy.assign(tp, start)
        self._fetch(tp, start)
        return start

    def poll(self) -> int:
        """Catch up with the cluster (see the module docstring); returns how many records
        were appended to the proxy."""
        self.proxy.advance(self.client.cluster.clock.now)
        appended = 0
        for tp, (offset, call) in list(self._fetches.items()):
            if not call.done:
                continue
            data = call.result(FetchResponse).responses.get(tp)
            if data is not None and data.error is Errors.NONE:
                for batch in data.records:
                    for index, record in enumerate(batch.records):
                        if batch.base_offset + index >= offset:
                            self.proxy.append(
                                tp, batch.base_offset + index, record.key, record.value
                            )
                            appended += 1
                offset = self.proxy.partition(tp).end_offset
            self._fetch(tp, offset)
        positions = self.proxy.commit()
        if positions:
            self.commits.append(self.client.commit(self.group_id, positions))
        return appended

    def _fetch(self, tp: TopicPartition, offset: int) -> None:
        self._fetches[tp] = (offset, self.client.fetch(tp, offset, max_wait_ms=self.max_wait_ms))

"""A fetch session's partitions, active or idle: what makes an idle partition nearly free.

An incremental fetch session (KIP-227, ``apis.fetch_session``) fetches every partition it
holds, with the fetch data it remembers. Most of them usually have nothing to send: a
follower follows every partition its leader leads, ``__consumer_offsets`` included, and only
a few get records. This module keeps a session's partitions in two sets so that a fetch
costs in proportion to the partitions that may have something to send.

A partition is *idle* when the last read sent for it in the session found nothing to send:
no error, no diverging epoch, no records, its fetch offset at the end offset of the fetch's
isolation (the log end offset for a follower in the ISR, the high watermark for a consumer).
The read that found it so records the partition, its log's
:attr:`~replica.log.Log.change_marker` and the position it stood at (:class:`IdlePartition`).
While the marker stands, its log has not changed, so a read would find the same nothing: a
fetch neither reads it nor answers it, and a follower's fetch of it is recorded as a fetch at
the log end, on the follower's :class:`~replica.replica.Replica` the entry keeps
(:meth:`~replica.replica.Replica.record_idle_fetch`). Once the
marker moves (records, a high watermark or log start offset sent to the fetcher, a leadership
change, the partition's removal), the next fetch *wakes* it: it is active again, read and
answered.

Every other partition is *active*: read by every fetch. New partitions start active; one whose
fetch data the fetcher changes (or that a read found with something to send) becomes active.

The sets are the :class:`~replica.replica_manager.ReplicaManager`'s to update (it reads the
markers; :meth:`wake`, :meth:`rest`) and the session's (``apis``) to fill (:meth:`put`,
:meth:`forget`). A fetch reads its partitions in the order they joined the session
(:meth:`in_order`), whichever set they are in: the order of a response decides the order in
which a consumer hands records on, so it must not depend on which partitions were idle.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from replica.partition import Partition
from replica.replica import Replica
from replica.types import LogOffsetMetadata, PartitionFetchInfo, TopicPartition

__all__ = ["IdlePartition", "SessionPartitions"]


class IdlePartition:
    """An idle partition of a session: the hosted partition and its log's change marker when a
    read last found it with nothing to send, where that read stood (the end offset of the
    fetch's isolation, with its segment position: where a waiting fetch counts new bytes from),
    its fetch data, and for a follower's session the follower's :class:`Replica` on the
    leader (None for a consumer's). (A partition removed from its broker, or whose leadership
    or replicas change, has its log's marker moved, so an entry never needs to look the
    partition or the replica up again while the marker stands.)"""

    __slots__ = ("end", "info", "marker", "partition", "replica")

    def __init__(
        self,
        partition: Partition,
        marker: int,
        end: LogOffsetMetadata,
        info: PartitionFetchInfo,
        replica: Replica | None = None,
    ) -> None:
        self.partition = partition
        self.marker = marker
        self.end = end
        self.info = info
        self.replica = replica

    def __repr__(self) -> str:
        return f"IdlePartition(marker={self.marker}, end={self.end!r}, info={self.info!r})"


class SessionPartitions:
    """The partitions of one fetch session with their fetch data: ``active`` (read by every
    fetch) and ``idle`` (skipped while unchanged). A partition is in one of the two."""

    __slots__ = ("_joined", "_position", "active", "idle")

    def __init__(self, fetch_infos: Mapping[TopicPartition, PartitionFetchInfo] = {}) -> None:
        self.active: dict[TopicPartition, PartitionFetchInfo] = {}
        self.idle: dict[TopicPartition, IdlePartition] = {}
        self._position: dict[TopicPartition, int] = {}  # when each partition joined
        self._joined = 0
        for tp, info in fetch_infos.items():
            self.put(tp, info)

    def __len__(self) -> int:
        return len(self.active) + len(self.idle)

    def __contains__(self, tp: object) -> bool:
        return tp in self.active or tp in self.idle

    def __iter__(self) -> Iterator[TopicPartition]:
        """Every partition, active first."""
        yield from self.active
        yield from self.idle

    def put(self, tp: TopicPartition, info: PartitionFetchInfo) -> None:
        """The fetcher added ``tp`` or changed its fetch data: it is active."""
        self.idle.pop(tp, None)
        self.active[tp] = info
        if tp not in self._position:
            self._position[tp] = self._joined
            self._joined += 1

    def forget(self, tps: Iterable[TopicPartition]) -> None:
        """The fetcher dropped ``tps`` from the session."""
        for tp in tps:
            self.active.pop(tp, None)
            self.idle.pop(tp, None)
            self._position.pop(tp, None)

    def in_order(
        self, infos: dict[TopicPartition, PartitionFetchInfo]
    ) -> dict[TopicPartition, PartitionFetchInfo]:
        """``infos`` (partitions of the session) in the order they joined it: a copy, not
        sorted again when it is in that order already (as a fetch's few active partitions
        usually are)."""
        if len(infos) > 1:
            position = self._position
            last = -1
            for tp in infos:
                joined_at = position[tp]
                if joined_at < last:
                    joined = sorted([(position[tp], tp) for tp in infos])  # positions are unique
                    return {tp: infos[tp] for _, tp in joined}
                last = joined_at
        return dict(infos)

    def wake(self, tp: TopicPartition) -> PartitionFetchInfo:
        """Idle ``tp``'s log changed: it is active again. Returns its fetch data."""
        info = self.idle.pop(tp).info
        self.active[tp] = info
        return info

    def rest(
        self,
        tp: TopicPartition,
        partition: Partition,
        marker: int,
        end: LogOffsetMetadata,
        replica: Replica | None = None,
    ) -> None:
        """A read sent for active ``tp`` (hosted as ``partition``) found nothing to send, at
        ``end``, with its log's marker at ``marker``: it is idle (``replica``: the fetching
        follower's, None for a consumer). A partition the session no longer holds is left
        out."""
        info = self.active.pop(tp, None)
        if info is not None:
            self.idle[tp] = IdlePartition(partition, marker, end, info, replica)

    def __repr__(self) -> str:
        return f"SessionPartitions(active={list(self.active)}, idle={list(self.idle)})"

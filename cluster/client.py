"""Client: build the common requests and send them where they belong.

A convenience for tests, examples and the state machine. It routes with the controller's
current view (the partition leader, the group coordinator) instead of Metadata and
FindCoordinator round trips, so it never sends to a stale leader unless told to with
``destination``. It does not retry: every :class:`~cluster.cluster.Call` carries the
broker's answer, errors included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from apis.fetch import FetchRequest, PartitionFetchInfo
from apis.heartbeat import HeartbeatRequest
from apis.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from apis.leave_group import LeaveGroupRequest
from apis.offset_commit import OffsetCommitRequest, OffsetCommitRequestPartition
from apis.offset_fetch import OffsetFetchRequest
from apis.produce import ProduceRequest
from apis.request_channel import RequestBody, ResponseBody
from apis.sync_group import SyncGroupRequest
from cluster.cluster import Call, Cluster
from replica.records import Record
from replica.types import TopicPartition

__all__ = ["Client"]


class Client:
    """Sends requests into ``cluster`` as node ``client_id``.

    ``on_response``, if given, is called with each response to a request this client sent,
    once its :class:`~cluster.cluster.Call` holds it: a driver whose transport answers later
    (a simulator's) learns there that a call is done.
    """

    def __init__(
        self,
        cluster: Cluster,
        client_id: str = "client",
        *,
        on_response: Callable[[ResponseBody], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.client_id = client_id
        self._on_response = on_response

    def __repr__(self) -> str:
        return f"Client({self.client_id!r})"

    def produce(
        self,
        tp: TopicPartition,
        values: Sequence[bytes | Record],
        *,
        acks: int = -1,
        timeout_ms: int = 30_000,
        destination: int | None = None,
    ) -> Call:
        """Produce ``values`` (bytes become key-less records stamped with the clock) to
        ``tp``'s leader (or ``destination``)."""
        now = self.cluster.clock.now
        records = [v if isinstance(v, Record) else Record(None, v, now) for v in values]
        return self._send(
            self.cluster.leader(tp) if destination is None else destination,
            ProduceRequest(acks=acks, timeout_ms=timeout_ms, records={tp: records}),
        )

    def fetch(
        self,
        tp: TopicPartition,
        offset: int,
        *,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        partition_max_bytes: int = 1_048_576,
        destination: int | None = None,
    ) -> Call:
        """A consumer fetch of ``tp`` from ``offset`` at its leader (or ``destination``)."""
        return self._send(
            self.cluster.leader(tp) if destination is None else destination,
            FetchRequest(
                fetch_data={tp: PartitionFetchInfo(offset, partition_max_bytes)},
                max_wait_ms=max_wait_ms,
                min_bytes=min_bytes,
            ),
        )

    def commit(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        metadata: str = "",
        generation_id: int = -1,
        member_id: str = "",
        destination: int | None = None,
    ) -> Call:
        """Commit ``offsets`` for ``group_id`` at its coordinator (or ``destination``), as
        ``member_id`` of generation ``generation_id`` (default: from outside the group)."""
        return self._send(
            self.cluster.coordinator(group_id) if destination is None else destination,
            OffsetCommitRequest(
                group_id,
                {tp: OffsetCommitRequestPartition(o, metadata) for tp, o in offsets.items()},
                generation_id,
                member_id,
            ),
        )

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        destination: int | None = None,
    ) -> Call:
        """Fetch ``group_id``'s committed offsets (None: all) from its coordinator."""
        return self._send(
            self.cluster.coordinator(group_id) if destination is None else destination,
            OffsetFetchRequest(group_id, None if partitions is None else tuple(partitions)),
        )

    def join_group(
        self,
        group_id: str,
        member_id: str = "",
        *,
        protocols: Mapping[str, bytes] | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 30_000,
        destination: int | None = None,
    ) -> Call:
        """JoinGroup ``group_id`` at its coordinator with ``protocols`` (name -> metadata, in
        order of preference; default ``{"range": b""}``). Sent as version 0, so a new member
        joins at once instead of getting MEMBER_ID_REQUIRED first."""
        chosen = {"range": b""} if protocols is None else protocols
        return self._send(
            self.cluster.coordinator(group_id) if destination is None else destination,
            JoinGroupRequest(
                group_id,
                session_timeout_ms,
                [JoinGroupRequestProtocol(name, meta) for name, meta in chosen.items()],
                member_id,
                rebalance_timeout_ms=rebalance_timeout_ms,
            ),
        )

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: Mapping[str, bytes] | None = None,
        *,
        destination: int | None = None,
    ) -> Call:
        """SyncGroup: the leader sends ``assignments`` (member id -> assignment)."""
        return self._send(
            self.cluster.coordinator(group_id) if destination is None else destination,
            SyncGroupRequest(group_id, generation_id, member_id, dict(assignments or {})),
        )

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, *, destination: int | None = None
    ) -> Call:
        """Heartbeat of ``member_id`` in generation ``generation_id``."""
        return self._send(
            self.cluster.coordinator(group_id) if destination is None else destination,
            HeartbeatRequest(group_id, generation_id, member_id),
        )

    def leave_group(
        self, group_id: str, member_ids: Sequence[str], *, destination: int | None = None
    ) -> Call:
        """LeaveGroup for ``member_ids``."""
        return self._send(
            self.cluster.coordinator(group_id) if destination is None else destination,
            LeaveGroupRequest(group_id, list(member_ids)),
        )

    def _send(self, destination: int, body: RequestBody) -> Call:
        return self.cluster.send(destination, body, self._on_response, source=self.client_id)

"""Where partitions start: the group's committed offsets, else ``auto_offset_reset``.

Two lookups fill in :class:`~sim.clients.consumer_positions.Positions`:

* :meth:`OffsetLookup.fetch_committed` (consumers of a group, once at start): find the group's
  coordinator in the metadata view, send it an OffsetFetch for the assigned partitions, and
  start every partition with a committed offset there. The rest are reset. It drives the
  lifecycle through LOOKING_UP_COORDINATOR and FETCHING_COMMITTED_OFFSETS to CONSUMING
  (:mod:`sim.clients.consumer_state`): a missing coordinator, or an answer saying it is gone,
  refreshes the metadata and tries again; any other error retries after a back-off.
* :meth:`OffsetLookup.reset` (partitions without a committed offset, consumers without a group,
  OFFSET_OUT_OF_RANGE): forget the partitions' positions and ask each one's leader for its
  earliest or latest offset (ListOffsets, one request per leader). Partitions without a known
  leader, or whose answer is missing or an error, are tried again after a metadata refresh.

Answers to lookups made before a rebalance revoked the assignment (an older
:attr:`~sim.clients.consumer_positions.Positions.epoch`) are dropped.

Each time positions become known, ``on_found`` runs (the fetcher then fetches what it can),
so partitions start fetching one leader's answer at a time, not all together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from apis.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from apis.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from replica.errors import Errors
from replica.types import TopicPartition
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_positions import Positions
from sim.clients.consumer_requests import COORDINATOR_ERRORS, ConsumerRequests
from sim.clients.consumer_state import LifecycleEvent
from sim.clients.network import MetadataView

__all__ = ["OffsetLookup"]


class OffsetLookup:
    """OffsetFetch at start and ListOffsets resets for one consumer (see the module doc)."""

    __slots__ = ("_config", "_metadata", "_on_found", "_positions", "_requests", "_transition")

    def __init__(
        self,
        config: ConsumerConfig,
        metadata: MetadataView,
        requests: ConsumerRequests,
        positions: Positions,
        *,
        transition: Callable[[LifecycleEvent], None],
        on_found: Callable[[], None],
    ) -> None:
        self._config = config
        self._metadata = metadata
        self._requests = requests
        self._positions = positions
        self._transition = transition
        self._on_found = on_found

    def fetch_committed(self, partitions: tuple[TopicPartition, ...]) -> None:
        """Start ``partitions`` from the group's committed offsets (reset those without one).
        Only for a consumer with a ``group_id``, in LOOKING_UP_COORDINATOR or
        FETCHING_COMMITTED_OFFSETS."""
        group_id = self._config.group_id
        assert group_id is not None
        coordinator = self._metadata.coordinator_for(group_id)
        if coordinator is None:
            self._transition(LifecycleEvent.COORDINATOR_NEEDED)
            self._requests.after_refresh(self._retry_fetch_committed(partitions))
            return
        self._transition(LifecycleEvent.COORDINATOR_FOUND)
        request = OffsetFetchRequest(group_id, partitions)
        epoch = self._positions.epoch

        def answered(response: OffsetFetchResponse | None) -> None:
            if self._positions.epoch != epoch:
                return  # revoked meanwhile
            error = Errors.REQUEST_TIMED_OUT if response is None else response.error
            if error != Errors.NONE:
                if error in COORDINATOR_ERRORS:
                    self._transition(LifecycleEvent.COORDINATOR_NEEDED)
                    self._requests.after_refresh(self._retry_fetch_committed(partitions))
                else:
                    self._requests.later(self._retry_fetch_committed(partitions))
                return
            assert response is not None
            self._transition(LifecycleEvent.COMMITTED_OFFSETS_FETCHED)
            missing = []
            for tp in partitions:
                answer = response.offsets.get(tp)
                if answer is not None and answer.error == Errors.NONE and answer.offset >= 0:
                    self._positions.resume_from_committed(tp, answer.offset)
                else:
                    missing.append(tp)
            self.reset(missing)
            self._on_found()

        self._requests.send(coordinator, request, answered)

    def _retry_fetch_committed(self, partitions: tuple[TopicPartition, ...]) -> Callable[[], None]:
        """:meth:`fetch_committed` again, unless the assignment was revoked meanwhile."""
        epoch = self._positions.epoch

        def retry() -> None:
            if self._positions.epoch == epoch:
                self.fetch_committed(partitions)

        return retry

    def reset(self, partitions: Iterable[TopicPartition]) -> None:
        """Forget the positions of ``partitions`` and look them up with ``auto_offset_reset``,
        retrying after a metadata refresh until each has one."""
        timestamp = (
            EARLIEST_TIMESTAMP if self._config.auto_offset_reset == "earliest" else LATEST_TIMESTAMP
        )
        by_leader: dict[int, list[TopicPartition]] = {}
        unknown: list[TopicPartition] = []
        for tp in partitions:
            self._positions.forget(tp)
            leader = self._metadata.leader_for(tp)
            if leader is None:
                unknown.append(tp)
            else:
                by_leader.setdefault(leader, []).append(tp)
        if unknown:
            self._requests.after_refresh(self._retry_reset(unknown))
        for leader, tps in by_leader.items():
            request = ListOffsetsRequest({tp: timestamp for tp in tps})
            self._requests.send(leader, request, self._reset_answer(tps))

    def _reset_answer(
        self, partitions: list[TopicPartition]
    ) -> Callable[[ListOffsetsResponse | None], None]:
        """The handler of one leader's ListOffsets answer for ``partitions``."""
        epoch = self._positions.epoch

        def answered(response: ListOffsetsResponse | None) -> None:
            if self._positions.epoch != epoch:
                return  # revoked meanwhile
            retry: list[TopicPartition] = []
            for tp in partitions:
                answer = None if response is None else response.responses.get(tp)
                if answer is not None and answer.error == Errors.NONE:
                    self._positions.start_at(tp, answer.offset)
                else:
                    retry.append(tp)
            if retry:
                self._requests.after_refresh(self._retry_reset(retry))
            self._on_found()

        return answered

    def _retry_reset(self, partitions: list[TopicPartition]) -> Callable[[], None]:
        """:meth:`reset` again, unless the assignment was revoked meanwhile."""
        epoch = self._positions.epoch

        def retry() -> None:
            if self._positions.epoch == epoch:
                self.reset(partitions)

        return retry

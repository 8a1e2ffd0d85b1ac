"""The two things a simulated client needs from the cluster: a transport and a metadata view.

Both are Protocols so that a client runs unchanged against the in-process cluster, a
test double or a broker model with no network at all.

``ClientNetwork`` carries ``apis`` request objects (``ProduceRequest``, ``FetchRequest``,
``OffsetCommitRequest``, ``OffsetFetchRequest``, ``ListOffsetsRequest``, ``MetadataRequest``,
``FindCoordinatorRequest``) to a broker and hands the matching response object back.

``MetadataView`` answers "who leads this partition" and "who coordinates this group" from a
possibly stale cache; a client that gets NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR (or finds
no leader) calls :meth:`MetadataView.refresh` and retries when it completes.
:class:`sim.clients.metadata.ClientMetadata` implements it with Metadata and FindCoordinator
requests over a ``ClientNetwork``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from replica.types import TopicPartition

__all__ = ["ClientNetwork", "MetadataView"]


class ClientNetwork(Protocol):
    """Request/response transport from one client to the brokers.

    Contract for implementations:

    * ``on_response`` is called at most once, with the response object of the request's type,
      and never from inside ``send`` itself (always from a later simulator event), so clients
      need no re-entrancy guards.
    * It may never be called: a request to a dead broker or a dropped message. Clients
      protect themselves with their ``request_timeout_ms``.
    * An ``acks=0`` produce gets no response; it is called only if the produce's connection
      broke (a NETWORK_EXCEPTION response), which is also how the client learns that the
      broker refused the produce (Kafka's broker closes the connection then, e.g. on
      NOT_LEADER_OR_FOLLOWER, so that the client refreshes its metadata).
    """

    def send(self, broker_id: int, request: Any, on_response: Callable[[Any], None]) -> None: ...


class MetadataView(Protocol):
    """A client's cached view of partition leadership and group coordinators."""

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The broker id leading ``tp``, or None if unknown / no leader."""
        ...

    def partition_count(self, topic: str) -> int | None:
        """How many partitions ``topic`` has, or None if the topic is unknown."""
        ...

    def coordinator_for(self, group_id: str) -> int | None:
        """The broker id coordinating ``group_id``, or None if unknown."""
        ...

    def refresh(self, on_done: Callable[[], None]) -> None:
        """Bring the view up to date, then call ``on_done()`` (possibly synchronously, from
        inside this call; possibly much later). ``on_done`` is always called, even if the
        refresh failed: the caller re-reads the view and backs off if it is still unusable."""
        ...

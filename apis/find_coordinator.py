"""FindCoordinator: which broker coordinates a group (Kafka API key 10).

Not among the refactoring document's requests, but every consumer needs it before it can
commit: the coordinator is the leader of the group's partition of ``__consumer_offsets``.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from apis.header import ApiKeys
from apis.metadata import BrokerEndpoint
from replica.errors import Errors

__all__ = ["FindCoordinatorRequest", "FindCoordinatorResponse"]


@attrs.define(frozen=True)
class FindCoordinatorRequest:
    """Ask which broker coordinates ``key`` (a group id)."""

    API_KEY: ClassVar[ApiKeys] = ApiKeys.FIND_COORDINATOR

    key: str

    def error_response(self, error: Errors) -> FindCoordinatorResponse:
        """A response with ``error`` and no coordinator."""
        return FindCoordinatorResponse(error, None)


@attrs.define(frozen=True)
class FindCoordinatorResponse:
    """The coordinator's endpoint, or an error (COORDINATOR_NOT_AVAILABLE, INVALID_GROUP_ID)."""

    error: Errors
    coordinator: BrokerEndpoint | None
    throttle_time_ms: int = 0

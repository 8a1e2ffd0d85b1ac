"""How a consumer waits on the outside world: requests, back-offs and metadata refreshes.

Every other part of the consumer reaches brokers and the metadata view only through
:class:`ConsumerRequests`, which gives three primitives:

* :meth:`~ConsumerRequests.send`: schedule the client-side timeout (``request_timeout_ms``
  unless the request needs longer, as JoinGroup does),
  then hand the request to the network. Whichever comes first, the response or the timeout,
  settles the request: ``on_answer`` runs once, with the response or None, and the other is
  dropped. A request is outstanding exactly while its timeout timer is held.
* :meth:`~ConsumerRequests.later`: run an action after ``retry_backoff_ms``.
* :meth:`~ConsumerRequests.after_refresh`: refresh the metadata view, then back off, then run
  the action. One refresh is in flight at a time; an action asked for meanwhile only backs off
  (the refresh in flight will have updated the view by the time it runs, or soon after).

Once the consumer has stopped (the ``stopped`` predicate), none of them runs anything: answers,
time-outs and back-offs that come due afterwards are ignored. That is the only place the
consumer's callbacks are cut off, so the rest of the consumer never sees a late answer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final

from replica.errors import Errors
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.network import ClientNetwork, MetadataView
from sim.core.engine import Event, Scheduler

__all__ = ["COORDINATOR_ERRORS", "ConsumerRequests"]

_US_PER_MS: Final = 1000

COORDINATOR_ERRORS: Final = frozenset(
    {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.NETWORK_EXCEPTION}
)
"""Errors after which the group's coordinator is looked up again (metadata refresh) before a
retry. A broken connection (NETWORK_EXCEPTION) counts: the broker may be gone and the group
coordinated elsewhere."""


class ConsumerRequests:
    """Request/timeout, back-off and refresh plumbing of one consumer (see the module doc)."""

    __slots__ = ("_config", "_metadata", "_network", "_refreshing", "_scheduler", "_stopped")

    def __init__(
        self,
        scheduler: Scheduler,
        network: ClientNetwork,
        metadata: MetadataView,
        config: ConsumerConfig,
        *,
        stopped: Callable[[], bool],
    ) -> None:
        self._scheduler = scheduler
        self._network = network
        self._metadata = metadata
        self._config = config
        self._stopped = stopped
        self._refreshing = False  # a metadata refresh is in flight (it has no request object)

    def send(
        self,
        broker_id: int,
        request: Any,
        on_answer: Callable[[Any], None],
        timeout_ms: int | None = None,
    ) -> None:
        """Send ``request``; ``on_answer`` gets the response, or None on the client timeout
        (``timeout_ms``, default ``request_timeout_ms``). Nothing is called once the consumer
        has stopped."""
        timer: Event | None = None  # set until the request is settled

        def settle(response: Any) -> None:
            nonlocal timer
            if timer is None:
                return
            timer.cancel()
            timer = None
            if not self._stopped():
                on_answer(response)

        # partial, not a lambda: a closure over `settle` would make the compiled build keep
        # `settle` in the shared environment, a reference cycle per request.
        if timeout_ms is None:
            timeout_ms = self._config.request_timeout_ms
        timer = self._scheduler.call_later(timeout_ms * _US_PER_MS, partial(settle, None))
        self._network.send(broker_id, request, settle)

    def later(self, action: Callable[[], None]) -> None:
        """Run ``action`` after ``retry_backoff_ms``, unless the consumer stopped meanwhile."""

        def run() -> None:
            if not self._stopped():
                action()

        self._scheduler.call_later(self._config.retry_backoff_ms * _US_PER_MS, run)

    def after_refresh(self, action: Callable[[], None]) -> None:
        """Refresh metadata, back off, then run ``action`` (one refresh at a time)."""
        if self._refreshing:
            self.later(action)
            return
        self._refreshing = True

        def refreshed() -> None:
            self._refreshing = False
            self.later(action)

        self._metadata.refresh(refreshed)

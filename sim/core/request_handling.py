"""A broker's request handling: Kafka's request queue and its ``num.io.threads`` handler pool.

Requests enter a FIFO queue on arrival; each of ``num_io_threads`` handler threads takes the
oldest one, is busy for the request's *local time* (drawn per request), and at the end of it
hands the request to ``handler(request, queue_time)``: the model of ``KafkaApis.handle``
running on a handler thread. Broker code is instantaneous in virtual time, so its effects
(appends, responses) happen at the end of the local time. ``queue_time`` is the time from
arrival to a thread taking the request (Kafka's ``RequestQueueTimeMs``).

``queued.max.requests`` bounds Kafka's queue; when it is full Kafka's network threads stop
reading sockets until there is room. Here the request waits just the same, in arrival order,
and the arrival is counted in :attr:`PoolStats.blocked_arrivals` (Kafka's symptom: network
processors blocked on the request channel); nothing is dropped.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

import attrs

from sim.core.distributions import Distribution
from sim.core.engine import Event, Scheduler

__all__ = ["PoolStats", "RequestHandlerPool", "local_time_sampler"]

R = TypeVar("R")


@attrs.define
class PoolStats:
    """Counters of one pool. Times are microseconds."""

    arrivals: int = 0  # requests submitted
    started: int = 0  # requests a thread took
    handled: int = 0  # requests handed to the handler
    queue_time_total: int = 0  # summed over started requests
    queue_time_max: int = 0
    blocked_arrivals: int = 0  # arrivals that found queued.max.requests waiting
    queue_length_area: int = 0  # integral of the number waiting over time (us * requests)

    @property
    def mean_queue_time(self) -> float:
        """Mean queueing time of the started requests (0.0 if none started)."""
        return self.queue_time_total / self.started if self.started else 0.0


def local_time_sampler(distribution: Distribution, rng: random.Random) -> Callable[[object], int]:
    """A ``local_time`` function drawing every request's local time from ``distribution``."""

    draw = distribution.sampler(rng).draw

    def local_time(_request: object) -> int:
        return draw()

    return local_time


class RequestHandlerPool(Generic[R]):
    """``num_io_threads`` handler threads serving one FIFO request queue (see module doc).

    Raises ValueError for a thread count or queue bound below 1.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        num_io_threads: int,
        queued_max_requests: int,
        local_time: Callable[[R], int],
        handler: Callable[[R, int], object],
    ) -> None:
        if num_io_threads < 1:
            raise ValueError(f"num_io_threads must be >= 1, got {num_io_threads}")
        if queued_max_requests < 1:
            raise ValueError(f"queued_max_requests must be >= 1, got {queued_max_requests}")
        self._scheduler = scheduler
        self.num_io_threads = num_io_threads
        self.queued_max_requests = queued_max_requests
        self._local_time = local_time
        self._handler = handler
        self._queue: deque[tuple[R, int]] = deque()  # (request, arrival time)
        # Token -> the end-of-local-time event and the request, in start order. A token, not
        # the event, is what the event's callback holds: no reference cycle per request.
        self._in_service: dict[int, tuple[Event, R]] = {}
        self._tokens = itertools.count()
        self._last_change = scheduler.now
        self.stats = PoolStats()

    @property
    def queue_size(self) -> int:
        """Requests waiting for a thread."""
        return len(self._queue)

    @property
    def busy_threads(self) -> int:
        """Threads serving a request."""
        return len(self._in_service)

    def submit(self, request: R) -> None:
        """A request arrives now: start it on an idle thread or queue it."""
        stats = self.stats
        stats.arrivals += 1
        now = self._scheduler.now
        if len(self._in_service) < self.num_io_threads:
            self._start(request, 0)
            return
        self._account_queue(now)
        if len(self._queue) >= self.queued_max_requests:
            stats.blocked_arrivals += 1
        self._queue.append((request, now))

    def drop_all(self) -> list[R]:
        """Forget every queued and in-service request (a broker crash); return them, oldest first.

        In-service requests never reach the handler. The statistics keep what already happened.
        """
        self._account_queue(self._scheduler.now)
        dropped = []
        for event, request in self._in_service.values():
            event.cancel()
            dropped.append(request)
        self._in_service.clear()
        dropped.extend(request for request, _ in self._queue)
        self._queue.clear()
        return dropped

    def account(self) -> None:
        """Bring :attr:`PoolStats.queue_length_area` up to now (call before reading it)."""
        self._account_queue(self._scheduler.now)

    def _account_queue(self, now: int) -> None:
        self.stats.queue_length_area += len(self._queue) * (now - self._last_change)
        self._last_change = now

    def _start(self, request: R, queue_time: int) -> None:
        stats = self.stats
        stats.started += 1
        stats.queue_time_total += queue_time
        if queue_time > stats.queue_time_max:
            stats.queue_time_max = queue_time
        token = next(self._tokens)
        finish = _Finish(self, token, request, queue_time)
        event = self._scheduler.call_later(self._local_time(request), finish)
        self._in_service[token] = (event, request)

    def _finish(self, token: int, request: R, queue_time: int) -> None:
        del self._in_service[token]
        self.stats.handled += 1
        if self._queue:
            now = self._scheduler.now
            self._account_queue(now)
            waiting, arrived = self._queue.popleft()
            self._start(waiting, now - arrived)
        self._handler(request, queue_time)


class _Finish(Generic[R]):
    """The end of a request's local time, scheduled when a thread takes it: calling it runs
    ``pool._finish``. One object per request where a partial would be three (itself, its
    arguments and a bound method), and a native call in the compiled build."""

    __slots__ = ("pool", "queue_time", "request", "token")

    def __init__(
        self, pool: RequestHandlerPool[R], token: int, request: R, queue_time: int
    ) -> None:
        self.pool = pool
        self.token = token
        self.request = request
        self.queue_time = queue_time

    def __call__(self) -> None:
        self.pool._finish(self.token, self.request, self.queue_time)

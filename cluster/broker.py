"""BrokerNode: one broker of the in-process cluster, wired from the real layers.

A node owns a :class:`~replica.replica_manager.ReplicaManager`, an
:class:`~coordinator.offset_manager.OffsetManager` and the
:class:`~coordinator.group_coordinator.GroupCoordinator` on it, a
:class:`~apis.metadata_cache.MetadataCache`,
a :class:`~apis.request_channel.RequestChannel` and the :class:`~apis.kafka_apis.KafkaApis` that
ties them together. It adds what a broker process adds around them:

* connections: each request it receives is remembered with its ``reply`` until its response
  comes out of the request channel (:meth:`BrokerNode.drain_responses`);
* a task queue for the OffsetManager's asynchronous loads (:meth:`BrokerNode.run_tasks`);
* its replica fetchers' requests (:meth:`BrokerNode.ready_fetches`), unless they are paused;
* its timers: the ReplicaManager's (Produce and Fetch purgatories, scheduler) and the group
  coordinator's (Heartbeat and Rebalance purgatories), advanced together;
* being stopped and started again: a stopped broker answers nothing (its connections fail with
  NETWORK_EXCEPTION), runs no timers and no fetchers. Its in-memory state is kept, so a
  restarted broker is like one that was cut off from the cluster, not a fresh process.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from apis.config import KafkaConfig
from apis.kafka_apis import KafkaApis
from apis.metadata import BrokerEndpoint
from apis.metadata_cache import MetadataCache
from apis.request_channel import Request, RequestChannel
from cluster.errors import BrokerStateError, DuplicateResponseError
from cluster.transport import ResponseCallback
from coordinator.group_coordinator import GroupCoordinator
from coordinator.offset_manager import OffsetManager
from replica.errors import Errors
from replica.replica_fetcher import ReplicaFetcher, ReplicaFetchRequest
from replica.replica_manager import ReplicaManager

__all__ = ["BrokerNode"]


class BrokerNode:
    """Broker ``broker_id`` running the real broker layers on ``clock`` (ms)."""

    def __init__(self, broker_id: int, config: KafkaConfig, clock: Callable[[], int]) -> None:
        self.broker_id = broker_id
        self.config = config
        self.endpoint = BrokerEndpoint(broker_id, f"broker-{broker_id}", 9092)
        self._clock = clock
        self._tasks: deque[Callable[[], None]] = deque()
        self.metadata_cache = MetadataCache()
        self.replica_manager = ReplicaManager(
            broker_id,
            config.broker,
            clock,
            metadata_contains=self.metadata_cache.contains_partition,
        )
        self._fetcher_manager = self.replica_manager.fetcher_manager
        self.offset_manager = OffsetManager(
            broker_id, self.replica_manager, config.offsets, clock, scheduler=self._tasks.append
        )
        self.group_coordinator = GroupCoordinator(
            broker_id, self.offset_manager, config.group, clock
        )
        self.request_channel = RequestChannel()
        self.apis = KafkaApis(
            broker_id,
            self.replica_manager,
            self.group_coordinator,
            self.metadata_cache,
            config,
            self.request_channel,
        )
        #: False while stopped.
        self.running = True
        #: Bumped by every stop: answers meant for an earlier incarnation are dropped.
        self.incarnation = 0
        self._in_flight: dict[Request, ResponseCallback] = {}
        self._abandoned: set[Request] = set()
        #: Set by whatever may give this broker work to settle (responses to send, offset
        #: loads, ready fetches): a request it receives, its timers, a response to one of its
        #: fetches, a start, its fetchers resuming. The cluster visits only brokers with it
        #: set and clears it when a visit finds nothing (see ``Cluster.run_until_idle``).
        self.has_work = True

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        paused = ", fetchers paused" if self.fetchers_paused else ""
        return f"BrokerNode({self.broker_id}, {state}{paused}, in_flight={len(self._in_flight)})"

    @property
    def in_flight(self) -> int:
        """Requests received and not answered yet."""
        return len(self._in_flight)

    # -- requests ---------------------------------------------------------------------------

    def receive(self, request: Request, reply: ResponseCallback) -> None:
        """Handle ``request``; ``reply`` gets its response (now or later, exactly once).

        A stopped broker replies NETWORK_EXCEPTION at once (the connection is refused).
        """
        if not self.running:
            reply(request.body.error_response(Errors.NETWORK_EXCEPTION))
            return
        self._in_flight[request] = reply
        self.has_work = True
        self.apis.handle(request)

    def drain_responses(self) -> bool:
        """Send every response in the request channel to its connection. Responses to
        requests abandoned by a stop are dropped. Returns True if any response came out.

        Raises:
            DuplicateResponseError: a response to a request that was already answered.
        """
        responses = self.request_channel.receive_responses()
        for response in responses:
            reply = self._in_flight.pop(response.request, None)
            if reply is not None:
                reply(response.body)
            elif response.request in self._abandoned:
                self._abandoned.discard(response.request)
            else:
                raise DuplicateResponseError(
                    f"broker {self.broker_id} answered correlation id "
                    f"{response.correlation_id} ({type(response.body).__name__}) twice"
                )
        return bool(responses)

    # -- background work --------------------------------------------------------------------

    def run_tasks(self) -> bool:
        """Run queued tasks (offset loads) while running. Returns True if any ran."""
        ran = False
        while self.running and self._tasks:
            self._tasks.popleft()()
            ran = True
        return ran

    def ready_fetches(self, now: int) -> list[tuple[ReplicaFetcher, ReplicaFetchRequest]]:
        """Build the fetch of every replica fetcher that is ready at ``now`` (none while
        stopped or paused). Each returned request is in flight until its fetcher is given
        the response or the failure."""
        if not self.running:
            return []
        return self._fetcher_manager.ready_fetches(now)  # in leader id order

    def next_deadline(self) -> int | None:
        """The earliest time something is due here: a timer of the ReplicaManager (its
        purgatories' and its scheduler's: ISR checks, fetchers' back-offs) or of the group
        coordinator (sessions, rebalances); None while stopped or if nothing is scheduled."""
        if not self.running:
            return None
        replica = self.replica_manager.next_deadline()
        group = self.group_coordinator.next_deadline()
        if group is None:
            return replica
        return group if replica is None else min(replica, group)

    def advance_clock(self, now: int) -> None:
        """Fire the ReplicaManager's and the group coordinator's timers due at ``now``
        (nothing while stopped)."""
        if self.running:
            self.has_work = True
            self.replica_manager.advance_clock(now)
            self.group_coordinator.advance_clock(now)

    @property
    def fetchers_paused(self) -> bool:
        """True while the replica fetchers send no new fetches (a stalled follower)."""
        return self._fetcher_manager.paused

    @fetchers_paused.setter
    def fetchers_paused(self, paused: bool) -> None:
        self._fetcher_manager.paused = paused
        self.has_work = True

    # -- faults -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop: every request in flight here is answered NETWORK_EXCEPTION (its connection
        broke) and its eventual response dropped; fetches in flight fail.

        Raises:
            BrokerStateError: the broker is already stopped.
        """
        if not self.running:
            raise BrokerStateError(f"broker {self.broker_id} is already stopped")
        self.running = False
        self.incarnation += 1
        now = self._clock()
        for fetcher in self._fetcher_manager.fetchers.values():
            if fetcher.in_flight is not None:
                fetcher.handle_fetch_failure(now)
        in_flight, self._in_flight = self._in_flight, {}
        for request, reply in in_flight.items():
            self._abandoned.add(request)
            reply(request.body.error_response(Errors.NETWORK_EXCEPTION))

    def start(self) -> None:
        """Start a stopped broker again, with the state it had when it stopped.

        Raises:
            BrokerStateError: the broker is running.
        """
        if self.running:
            raise BrokerStateError(f"broker {self.broker_id} is already running")
        self.running = True
        self.has_work = True

"""Helpers for tests and benchmarks: brokers wired by direct calls.

:class:`DirectCluster` runs several :class:`~replica.replica_manager.ReplicaManager` on one
:class:`purgatory.ManualClock`; a follower's fetch is a direct call of the leader's
``fetch_messages`` whose callback hands the response to the follower's fetcher (no network, no
delay). A fetch the leader parks in its Fetch purgatory stays in flight until a later append,
state change or ``advance`` completes it, exactly like a long poll::

    cluster = DirectCluster((0, 1, 2))
    cluster.elect(TopicPartition("t", 0), leader=0)
    cluster.pump()   # followers fetch until their fetches are parked at the leader
    cluster.brokers[0].append_messages(1000, -1, {tp: [Record(None, b"v")]}, print)
    cluster.pump()   # followers report their new log end offsets: the produce completes
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from purgatory import ManualClock
from replica.config import BrokerConfig
from replica.replica_fetcher import ReplicaFetcher
from replica.replica_manager import ReplicaManager
from replica.types import FetchPartitionData, IsolationLevel, PartitionState, TopicPartition


class DirectCluster:
    """Brokers ``broker_ids`` sharing ``config``, one :class:`ManualClock` and one view of the
    metadata: every partition :meth:`elect` was called for exists, for every broker (a
    partition a broker does not host is then NOT_LEADER_OR_FOLLOWER there)."""

    def __init__(
        self, broker_ids: Iterable[int] = (0, 1, 2), config: BrokerConfig | None = None
    ) -> None:
        self.clock = ManualClock()
        self.config = config if config is not None else BrokerConfig()
        #: The partitions the metadata has: every partition elected so far.
        self.metadata: set[TopicPartition] = set()
        contains = self.metadata.__contains__
        self.brokers = {
            b: ReplicaManager(b, self.config, self.clock, metadata_contains=contains)
            for b in broker_ids
        }
        #: The last leader epoch :meth:`elect` used, per partition.
        self.epochs: dict[TopicPartition, int] = {}

    def elect(
        self,
        tp: TopicPartition,
        leader: int,
        replicas: Sequence[int] | None = None,
        isr: Sequence[int] | None = None,
        brokers: Iterable[int] | None = None,
    ) -> None:
        """Send ``tp``'s state with the next leader epoch to ``brokers`` (default: the
        replicas). ``replicas`` defaults to every broker, ``isr`` to the replicas."""
        replicas = tuple(replicas if replicas is not None else sorted(self.brokers))
        epoch = self.epochs.get(tp, -1) + 1
        self.epochs[tp] = epoch
        self.metadata.add(tp)
        state = PartitionState(leader, epoch, tuple(isr if isr is not None else replicas), replicas)
        for broker_id in brokers if brokers is not None else replicas:
            self.brokers[broker_id].become_leader_or_follower({tp: state})

    def send_fetches(self, broker_id: int) -> int:
        """Let broker ``broker_id``'s fetchers each send one fetch if they can (a fetch
        answered at once is applied before this returns). Returns how many were sent."""
        sent = 0
        for fetcher in list(self.brokers[broker_id].replica_fetchers.values()):
            request = fetcher.build_fetch_request(self.clock.now)
            if request is None:
                continue
            sent += 1

            def on_response(
                response: dict[TopicPartition, FetchPartitionData],
                fetcher: ReplicaFetcher = fetcher,
            ) -> None:
                fetcher.handle_fetch_response(response, self.clock.now)

            self.brokers[fetcher.leader_id].fetch_messages(
                request.replica_id,
                request.fetch_infos,
                request.min_bytes,
                request.max_wait_ms,
                request.max_bytes,
                IsolationLevel.READ_UNCOMMITTED,
                on_response,
            )
        return sent

    def pump(self, max_rounds: int = 100, brokers: Iterable[int] | None = None) -> int:
        """Let every follower (or only those of ``brokers``: the others are stalled) fetch
        until all fetches are parked at leaders (long-polling) or backing off. Returns the
        number of fetches sent.

        Raises:
            RuntimeError: fetchers were still sending after ``max_rounds`` rounds.
        """
        fetching = list(self.brokers if brokers is None else brokers)
        sent = 0
        for _ in range(max_rounds):
            sent_this_round = sum(self.send_fetches(b) for b in fetching)
            sent += sent_this_round
            if sent_this_round == 0:
                return sent
        raise RuntimeError(f"fetchers still sending after {max_rounds} rounds")

    def advance(self, ms: int) -> None:
        """Move the clock forward by ``ms`` and advance every broker to it."""
        self.clock.now += ms
        for broker in self.brokers.values():
            broker.advance_clock(self.clock.now)

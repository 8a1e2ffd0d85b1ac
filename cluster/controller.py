"""Controller: the cluster's minimal Kafka controller.

It keeps the authoritative state of every partition (leader, leader epoch, ISR, replicas) and
tells brokers about it with LeaderAndIsr and UpdateMetadata requests, like Kafka's
ZooKeeper-era controller:

* **topics**: replicas assigned round-robin over the live brokers (partition ``p``'s replicas
  are ``brokers[(p + i) % n]``, its leader the first), ISR = all replicas, epoch 0;
* **a broker stops**: every partition it led gets a new leader, the first live replica (in
  assignment order) that is in the ISR; with none the partition goes offline (leader -1, ISR
  kept: no unclean election). It is removed from the ISR of partitions it followed. Both bump
  the leader epoch;
* **a broker starts**: offline partitions whose ISR holds it get it as leader; it is sent the
  state of every partition it replicates;
* **leader moves** (:meth:`Controller.elect_leader`): to a live ISR member, with a new epoch.

Leaders change their ISR on their own (shrink on lag, expand on catch-up) without a round trip
(the replica layer has no AlterPartition), so before using a partition's ISR the controller
reads it from the leader's ReplicaManager, as Kafka's controller reads the ISR the leader wrote
to ZooKeeper; a leader that has not yet applied the current epoch is not asked.

Every change is sent as UpdateMetadata to all live brokers first, then LeaderAndIsr to the
replicas, leaders before followers (Kafka sends one batch with no order between brokers). So a
leader already hosts a partition, and knows it in its metadata cache, when its followers'
first fetch arrives, instead of answering with an error (NOT_LEADER_OR_FOLLOWER once its
metadata has the partition, UNKNOWN_TOPIC_OR_PARTITION before) and making them back off for
replica.fetch.backoff.ms. With a delaying transport that race can still happen, as in
Kafka, and the back-off resolves it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from apis.controller_requests import LeaderAndIsrRequest, UpdateMetadataRequest
from apis.metadata import BrokerEndpoint
from apis.request_channel import RequestBody
from cluster.errors import IneligibleLeaderError, InvalidTopicError, UnknownBrokerError
from replica.types import PartitionState, TopicPartition, canonical_partition

__all__ = ["Controller", "LeaderIsrLookup"]

#: ``lookup(leader_id, tp)`` -> (leader epoch, ISR) as that broker knows them, or None.
LeaderIsrLookup = Callable[[int, TopicPartition], tuple[int, tuple[int, ...]] | None]


class Controller:
    """The cluster's controller (id ``controller_id``, epoch ``controller_epoch``).

    ``send(broker_id, request_body)`` carries its requests; ``leader_isr`` reads a leader's
    current ISR (see the module docstring). All brokers in ``brokers`` start live.
    """

    def __init__(
        self,
        brokers: Sequence[BrokerEndpoint],
        send: Callable[[int, RequestBody], None],
        leader_isr: LeaderIsrLookup,
        *,
        controller_id: int = 3000,
        controller_epoch: int = 1,
    ) -> None:
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        self._endpoints = {b.broker_id: b for b in sorted(brokers)}
        self._live = set(self._endpoints)
        self._send = send
        self._leader_isr = leader_isr
        self._states: dict[TopicPartition, PartitionState] = {}

    def __repr__(self) -> str:
        return f"Controller(live={sorted(self._live)}, partitions={len(self._states)})"

    # -- queries ----------------------------------------------------------------------------

    @property
    def live_brokers(self) -> list[int]:
        """Ids of the brokers the controller considers live, sorted."""
        return sorted(self._live)

    def partitions(self) -> list[TopicPartition]:
        """Every partition, in creation order."""
        return list(self._states)

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        """The partition's current state (ISR as its leader knows it).

        Raises:
            InvalidTopicError: no such partition.
        """
        if tp not in self._states:
            raise InvalidTopicError(f"no partition {tp} (topics: {self.topics()})")
        return self._refreshed(tp)

    def topics(self) -> list[str]:
        """Names of the topics, sorted."""
        return sorted({tp.topic for tp in self._states})

    def _refreshed(self, tp: TopicPartition) -> PartitionState:
        state = self._states[tp]
        if state.leader >= 0:
            known = self._leader_isr(state.leader, tp)
            if known is not None and known[0] == state.leader_epoch and known[1] != state.isr:
                state = PartitionState(state.leader, state.leader_epoch, known[1], state.replicas)
                self._states[tp] = state
        return state

    # -- topics -----------------------------------------------------------------------------

    def startup(self) -> None:
        """Tell every live broker about the cluster (UpdateMetadata)."""
        self._send_update_metadata(self._live)

    def create_topic(
        self, name: str, num_partitions: int, replication_factor: int
    ) -> dict[TopicPartition, PartitionState]:
        """Create ``name`` and make its replicas leaders/followers; returns the states.

        Raises:
            InvalidTopicError: the topic exists, the name is empty, ``num_partitions < 1``, or
                the replication factor is not between 1 and the number of live brokers.
        """
        if not name:
            raise InvalidTopicError("topic name must not be empty")
        if name in self.topics():
            raise InvalidTopicError(f"topic {name!r} already exists")
        if type(num_partitions) is not int or num_partitions < 1:
            raise InvalidTopicError(f"num_partitions must be an int >= 1, got {num_partitions!r}")
        live = self.live_brokers
        if type(replication_factor) is not int or not 1 <= replication_factor <= len(live):
            raise InvalidTopicError(
                f"replication_factor must be between 1 and the {len(live)} live brokers, "
                f"got {replication_factor!r}"
            )
        created: dict[TopicPartition, PartitionState] = {}
        for p in range(num_partitions):
            replicas = tuple(live[(p + i) % len(live)] for i in range(replication_factor))
            tp = canonical_partition(name, p)
            created[tp] = PartitionState(replicas[0], 0, replicas, replicas)
        self._states.update(created)
        self._send_update_metadata(self._live)
        self._send_leader_and_isr(created)
        return created

    # -- elections --------------------------------------------------------------------------

    def on_broker_failure(self, broker_id: int) -> dict[TopicPartition, PartitionState]:
        """``broker_id`` stopped: re-elect leaders of its partitions, drop it from ISRs.

        Returns the partitions whose state changed. Raises UnknownBrokerError for an id that
        is not a cluster member; a broker already considered dead changes nothing.
        """
        self._check_member(broker_id)
        if broker_id not in self._live:
            return {}
        self._live.discard(broker_id)
        changed: dict[TopicPartition, PartitionState] = {}
        for tp in list(self._states):
            state = self._refreshed(tp)
            if broker_id not in state.isr or state.leader == -1:
                continue
            remaining = tuple(r for r in state.isr if r != broker_id)
            leader = state.leader
            if leader == broker_id:
                candidates = [r for r in state.replicas if r in remaining and r in self._live]
                leader = candidates[0] if candidates else -1
            isr = remaining if leader != -1 else state.isr
            changed[tp] = PartitionState(leader, state.leader_epoch + 1, isr, state.replicas)
        self._states.update(changed)
        self._send_update_metadata(self._live)
        self._send_leader_and_isr(changed)
        return changed

    def on_broker_startup(self, broker_id: int) -> dict[TopicPartition, PartitionState]:
        """``broker_id`` is back: lead the offline partitions whose ISR holds it, and learn
        the state of every partition it replicates. Returns the partitions whose state
        changed."""
        self._check_member(broker_id)
        self._live.add(broker_id)
        changed: dict[TopicPartition, PartitionState] = {}
        for tp, state in self._states.items():
            if state.leader == -1 and broker_id in state.isr:
                changed[tp] = PartitionState(
                    broker_id, state.leader_epoch + 1, (broker_id,), state.replicas
                )
        self._states.update(changed)
        own = {tp: self._refreshed(tp) for tp, s in self._states.items() if broker_id in s.replicas}
        self._send_update_metadata(self._live)
        self._send_leader_and_isr(own, only=[broker_id])
        self._send_leader_and_isr(changed, only=self._live - {broker_id})
        return changed

    def elect_leader(self, tp: TopicPartition, broker_id: int) -> PartitionState:
        """Move the leadership of ``tp`` to ``broker_id`` (a clean election: it must be live
        and in the ISR). A no-op if it already leads. Returns the new state.

        Raises:
            IneligibleLeaderError: ``broker_id`` is not a live ISR member.
            InvalidTopicError: no such partition.
        """
        state = self.partition_state(tp)
        if broker_id not in self._live or broker_id not in state.isr:
            raise IneligibleLeaderError(
                f"broker {broker_id} cannot lead {tp}: live brokers {self.live_brokers}, "
                f"ISR {list(state.isr)}"
            )
        if state.leader == broker_id:
            return state
        new = PartitionState(broker_id, state.leader_epoch + 1, state.isr, state.replicas)
        self._states[tp] = new
        self._send_update_metadata(self._live)
        self._send_leader_and_isr({tp: new})
        return new

    # -- requests ---------------------------------------------------------------------------

    def _check_member(self, broker_id: int) -> None:
        if broker_id not in self._endpoints:
            raise UnknownBrokerError(
                f"broker {broker_id} is not in the cluster (brokers: {sorted(self._endpoints)})"
            )

    def _send_leader_and_isr(
        self, states: Mapping[TopicPartition, PartitionState], only: Iterable[int] | None = None
    ) -> None:
        """LeaderAndIsr to each target broker for its replicas among ``states``: first the
        partitions it leads (to every target), then those it follows, so that a leader exists
        before its followers' first fetch."""
        targets = sorted(self._live if only is None else set(only) & self._live)
        for leading in (True, False):
            for broker_id in targets:
                mine = {
                    tp: s
                    for tp, s in states.items()
                    if broker_id in s.replicas and (s.leader == broker_id) == leading
                }
                if not mine:
                    continue
                leaders = sorted(
                    {self._endpoints[s.leader] for s in mine.values() if s.leader in self._live}
                )
                self._send(
                    broker_id,
                    LeaderAndIsrRequest(self.controller_id, self.controller_epoch, mine, leaders),
                )

    def _send_update_metadata(self, targets: Iterable[int]) -> None:
        states = {tp: self._refreshed(tp) for tp in self._states}
        live = [self._endpoints[b] for b in sorted(self._live)]
        for broker_id in sorted(targets):
            self._send(
                broker_id,
                UpdateMetadataRequest(self.controller_id, self.controller_epoch, live, states),
            )

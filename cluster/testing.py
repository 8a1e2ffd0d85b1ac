"""A hypothesis state machine of a broker cluster, checking Kafka's replication invariants.

Import :class:`ClusterStateMachine` and run it against your changes::

    from hypothesis import settings
    from hypothesis.stateful import run_state_machine_as_test
    from cluster.testing import ClusterStateMachine

    run_state_machine_as_test(
        ClusterStateMachine, settings=settings(max_examples=100, stateful_step_count=30)
    )

(or subclass it and expose ``YourSubclass.TestCase`` to pytest, as
``tests/cluster/test_state_machine.py`` does).

By default the machine runs 3 real brokers (RF 3, ``min.insync.replicas`` 2, one topic of 2
partitions). Hypothesis creates a machine without arguments, so to change that, subclass it
and pass the number of brokers, the replication factor, ``min.insync.replicas`` and a
:class:`~replica.config.BrokerConfig` to ``__init__``::

    class FiveBrokers(ClusterStateMachine):
        def __init__(self) -> None:
            super().__init__(brokers=5, replication_factor=3, min_insync_replicas=2)

The brokers talk over an :class:`~cluster.transport.ImmediateTransport` that holds follower
fetches: clients' and the controller's messages are delivered at once, but every follower
fetch waits until the machine delivers it, so hypothesis chooses how far each follower lags.
Rules: produces (acks -1/0/1, various
timeouts), consumer fetches (long polls), follower fetch deliveries, clock advances, a
follower stalling (fetchers paused) and resuming, brokers stopping and restarting (at least
one stays up), clean leader moves, and a liveness check that replication converges once no
follower is stalled.

Invariants (checked after every step, and at the moment each response is sent):

* on every leader, the high watermark never exceeds the log end offset of any ISR member and
  never decreases while it stays leader;
* a consumer never receives records at or above the high watermark;
* every request gets exactly one response, no later than its deadline (its timeout or max
  wait; at once for everything else);
* an acks=all success means every ISR member holds the records at that moment (with the
  ISR at least ``min.insync.replicas``);
* nothing acknowledged with acks=all, and nothing a consumer has read, is lost or changed by
  a clean leader change: the current leader's log holds it at the same offset.
"""

from __future__ import annotations

import itertools
from functools import partial

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from apis.config import KafkaConfig
from apis.fetch import FetchRequest, FetchResponse
from apis.produce import ProduceRequest, ProduceResponse
from apis.request_channel import Request, Response
from cluster.client import Client
from cluster.cluster import Call, Cluster
from cluster.transport import ImmediateTransport
from replica.config import BrokerConfig
from replica.errors import Errors
from replica.replica_manager import ReplicaManager
from replica.types import TopicPartition

__all__ = ["DEFAULT_BROKER_CONFIG", "ClusterStateMachine", "log_contents"]

BROKERS = 3
TOPIC = "events"
PARTITIONS = 2
MIN_INSYNC_REPLICAS = 2

DEFAULT_BROKER_CONFIG = BrokerConfig(
    min_insync_replicas=MIN_INSYNC_REPLICAS,
    replica_lag_time_max_ms=2_000,
    replica_fetch_backoff_ms=100,
)
"""The machine's broker settings unless it is given others: a short lag limit and back-off, so
that ISR changes happen within a few steps."""


def log_contents(replica_manager: ReplicaManager, tp: TopicPartition) -> dict[int, bytes | None]:
    """Offset -> record value of the local log of ``tp`` (empty if not hosted). Test
    inspection only: reads the log through the partition's public attributes."""
    partition = replica_manager.get_partition(tp)
    if partition is None:
        return {}
    return {
        batch.base_offset + i: record.value
        for segment in partition.log.segments
        for batch in segment.batches
        for i, record in enumerate(batch.records)
    }


def _is_follower_fetch(source: str, _destination: int, _request: Request) -> bool:
    return source.startswith("broker-")


@attrs.define(eq=False)
class _Tracked:
    call: Call
    deadline: int  # latest time the response may come


class ClusterStateMachine(RuleBasedStateMachine):
    """See the module docstring.

    ``brokers`` brokers (ids 0 to ``brokers - 1``) host the topic with ``replication_factor``
    replicas per partition (at most ``brokers``). ``broker_config`` (default
    :data:`DEFAULT_BROKER_CONFIG`) is every broker's configuration; ``min_insync_replicas``, if
    given, replaces its ``min_insync_replicas``.
    """

    def __init__(
        self,
        *,
        brokers: int = BROKERS,
        replication_factor: int = BROKERS,
        min_insync_replicas: int | None = None,
        broker_config: BrokerConfig = DEFAULT_BROKER_CONFIG,
    ) -> None:
        super().__init__()
        if min_insync_replicas is not None:
            broker_config = attrs.evolve(broker_config, min_insync_replicas=min_insync_replicas)
        self.brokers = brokers
        self.replication_factor = replication_factor
        self.min_insync_replicas = broker_config.min_insync_replicas
        self.transport = ImmediateTransport(hold=_is_follower_fetch)
        config = KafkaConfig(broker=broker_config)
        self.cluster = Cluster(
            brokers, config=config, transport=self.transport, create_offsets_topic=False
        )
        self.client = Client(self.cluster)
        self.partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        self.violations: list[str] = []
        #: Records that must never be lost: acked with acks=all, or read by a consumer.
        self.durable: dict[TopicPartition, dict[int, bytes | None]] = {
            tp: {} for tp in self.partitions
        }
        self.tracked: list[_Tracked] = []
        self.last_hw: dict[TopicPartition, tuple[int, int]] = {}  # tp -> (leader, hw)
        self.stalled: int | None = None  # the broker whose fetchers are paused, if any
        self.stopped: set[int] = set()
        self.values = itertools.count()
        for node in self.cluster.brokers.values():
            node.request_channel.add_listener(partial(self._on_response, node.broker_id))
        self.cluster.create_topic(TOPIC, PARTITIONS, replication_factor)

    def _violation(self, message: str) -> None:
        self.violations.append(f"t={self.cluster.clock.now}: {message}")

    def _rm(self, broker_id: int) -> ReplicaManager:
        return self.cluster.broker(broker_id).replica_manager

    # -- checks at response time ------------------------------------------------------------

    def _on_response(self, broker_id: int, response: Response) -> None:
        body, request = response.body, response.request.body
        if isinstance(body, ProduceResponse) and isinstance(request, ProduceRequest):
            if request.acks == -1:
                self._check_acked(broker_id, request, body)
        elif (
            isinstance(body, FetchResponse)
            and isinstance(request, FetchRequest)
            and request.replica_id < 0
        ):
            self._check_consumed(broker_id, body)

    def _check_acked(self, broker_id: int, request: ProduceRequest, body: ProduceResponse) -> None:
        rm = self._rm(broker_id)
        for tp, result in body.responses.items():
            if result.error is not Errors.NONE:
                continue
            isr = rm.isr(tp) or ()
            if len(isr) < self.min_insync_replicas:
                self._violation(f"acks=all success on {tp} with ISR {isr}")
            expected = {
                result.base_offset + i: record.value for i, record in enumerate(request.records[tp])
            }
            for member in isr:
                log = log_contents(self._rm(member), tp)
                missing = {o: v for o, v in expected.items() if log.get(o) != v}
                if missing:
                    self._violation(
                        f"acks=all success on {tp} but ISR member {member} lacks {missing}"
                    )
            self.durable[tp].update(expected)

    def _check_consumed(self, broker_id: int, body: FetchResponse) -> None:
        rm = self._rm(broker_id)
        for tp, data in body.responses.items():
            if data.error is not Errors.NONE:
                continue
            current_hw = rm.high_watermark(tp)
            if current_hw is None or data.high_watermark > current_hw:
                self._violation(f"{tp}: fetch response HW {data.high_watermark} > {current_hw}")
            for batch in data.records:
                if batch.last_offset >= data.high_watermark:
                    self._violation(
                        f"{tp}: consumer got offset {batch.last_offset} at HW {data.high_watermark}"
                    )
                for i, record in enumerate(batch.records):
                    self.durable[tp][batch.base_offset + i] = record.value

    # -- rules: clients ---------------------------------------------------------------------

    def _track(self, call: Call, wait: int) -> None:
        self.tracked.append(_Tracked(call, call.sent_at + wait))

    def _destination(self, tp: TopicPartition) -> int:
        leader = self.cluster.leader(tp)
        return leader if leader >= 0 else min(self.cluster.brokers)

    @rule(
        p=st.integers(0, PARTITIONS - 1),
        acks=st.sampled_from([-1, -1, 0, 1]),
        count=st.integers(1, 3),
        timeout=st.sampled_from([0, 50, 500, 3_000]),
    )
    def produce(self, p: int, acks: int, count: int, timeout: int) -> None:
        tp = self.partitions[p]
        values = [f"value-{next(self.values)}".encode() for _ in range(count)]
        call = self.client.produce(
            tp, values, acks=acks, timeout_ms=timeout, destination=self._destination(tp)
        )
        self._track(call, timeout if acks == -1 else 0)

    @rule(
        p=st.integers(0, PARTITIONS - 1),
        offset=st.integers(0, 12),
        max_wait=st.sampled_from([0, 100, 500]),
        min_bytes=st.sampled_from([1, 1, 200]),
    )
    def consumer_fetch(self, p: int, offset: int, max_wait: int, min_bytes: int) -> None:
        tp = self.partitions[p]
        call = self.client.fetch(
            tp, offset, max_wait_ms=max_wait, min_bytes=min_bytes, destination=self._destination(tp)
        )
        self._track(call, max_wait)

    # -- rules: replication and time ---------------------------------------------------------

    @precondition(lambda self: bool(self.transport.held))
    @rule(data=st.data())
    def deliver_follower_fetch(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.transport.held) - 1), label="fetch")
        self.transport.release(index)
        self.cluster.run_until_idle()

    @precondition(lambda self: bool(self.transport.held))
    @rule()
    def deliver_follower_fetch_round(self) -> None:
        """Deliver every follower fetch held now (not those they cause): one fetch round."""
        for _ in range(len(self.transport.held)):
            self.transport.release(0)
        self.cluster.run_until_idle()

    @rule(ms=st.sampled_from([1, 20, 100, 500, 1_000, 2_500]))
    def advance(self, ms: int) -> None:
        self.cluster.advance(ms)

    # -- rules: faults and elections ----------------------------------------------------------

    def _draw_broker(self, data: st.DataObject) -> int:
        return data.draw(st.integers(0, self.brokers - 1), label="broker")

    @precondition(lambda self: self.stalled is None)
    @rule(data=st.data())
    def stall_follower(self, data: st.DataObject) -> None:
        broker_id = self._draw_broker(data)
        self.cluster.pause_fetchers(broker_id)
        self.stalled = broker_id

    @precondition(lambda self: self.stalled is not None)
    @rule()
    def resume_follower(self) -> None:
        assert self.stalled is not None
        self.cluster.resume_fetchers(self.stalled)
        self.stalled = None

    @precondition(lambda self: len(self.stopped) < self.brokers - 1)
    @rule(data=st.data())
    def stop_broker(self, data: st.DataObject) -> None:
        broker_id = self._draw_broker(data)
        if broker_id not in self.stopped:
            self.cluster.stop_broker(broker_id)
            self.stopped.add(broker_id)

    @precondition(lambda self: bool(self.stopped))
    @rule(data=st.data())
    def restart_broker(self, data: st.DataObject) -> None:
        broker_id = data.draw(st.sampled_from(sorted(self.stopped)), label="broker")
        self.cluster.restart_broker(broker_id)
        self.stopped.discard(broker_id)

    @rule(p=st.integers(0, PARTITIONS - 1), data=st.data())
    def move_leader(self, p: int, data: st.DataObject) -> None:
        tp = self.partitions[p]
        state = self.cluster.controller.partition_state(tp)
        live = set(self.cluster.controller.live_brokers)
        candidates = [b for b in state.isr if b in live and b != state.leader]
        if candidates:
            self.cluster.elect_leader(tp, data.draw(st.sampled_from(candidates), label="leader"))

    @precondition(lambda self: self.stalled is None)
    @rule()
    def replication_converges(self) -> None:
        """Liveness: with no stalled follower, delivering the follower fetches and letting
        replica.fetch.wait.max.ms pass a few times brings every running replica of a led
        partition to its leader's log end offset and high watermark, and the high watermark
        to the log end offset unless the ISR is below min.insync.replicas (too few brokers
        running: the high watermark cannot move, KIP-966)."""
        wait = self.cluster.config.broker.replica_fetch_wait_max_ms
        for _ in range(10):
            for _ in range(100):
                if not self.transport.held:
                    break
                self.transport.release(0)
                self.cluster.run_until_idle()
            if self._replicas_agree():
                return
            self.cluster.advance(wait)
        raise AssertionError(f"replication did not converge: {self._replication_state()}")

    def _replicas_agree(self) -> bool:
        for tp, leader, rm in self._current_leaders():
            leo, hw = rm.log_end_offset(tp), rm.high_watermark(tp)
            if hw != leo and not self._under_min_isr(tp, rm):
                return False
            for replica in self.cluster.controller.partition_state(tp).replicas:
                node = self.cluster.broker(replica)
                if replica == leader or not node.running:
                    continue
                other = node.replica_manager
                if other.log_end_offset(tp) != leo or other.high_watermark(tp) != hw:
                    return False
        return True

    def _under_min_isr(self, tp: TopicPartition, leader: ReplicaManager) -> bool:
        """True if the leader's ISR is smaller than min.insync.replicas (capped at the
        replication factor): its high watermark cannot move (KIP-966)."""
        partition = leader.get_partition(tp)
        return partition is not None and len(partition.isr) < partition.effective_min_isr

    def _replication_state(self) -> dict[str, tuple[int | None, int | None]]:
        return {
            f"{tp} on {b}": (self._rm(b).log_end_offset(tp), self._rm(b).high_watermark(tp))
            for tp in self.partitions
            for b in self.cluster.brokers
        }

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def no_violation_at_response_time(self) -> None:
        assert not self.violations, "\n".join(self.violations)

    def _current_leaders(self) -> list[tuple[TopicPartition, int, ReplicaManager]]:
        """(tp, leader, its ReplicaManager) for partitions whose leader is running and has
        applied the controller's current state."""
        result = []
        for tp in self.partitions:
            state = self.cluster.controller.partition_state(tp)
            if state.leader < 0 or not self.cluster.broker(state.leader).running:
                continue
            rm = self._rm(state.leader)
            if rm.is_leader(tp) and rm.leader_epoch(tp) == state.leader_epoch:
                result.append((tp, state.leader, rm))
        return result

    @invariant()
    def high_watermark_within_isr_log_ends(self) -> None:
        for tp, leader, rm in self._current_leaders():
            hw = rm.high_watermark(tp)
            assert hw is not None
            for member in rm.isr(tp) or ():
                leo = self._rm(member).log_end_offset(tp)
                assert leo is not None and hw <= leo, (
                    f"{tp}: HW {hw} on leader {leader} > LEO {leo} of ISR member {member}"
                )

    @invariant()
    def high_watermark_never_decreases_on_a_leader(self) -> None:
        leaders = {tp: (leader, rm) for tp, leader, rm in self._current_leaders()}
        for tp in self.partitions:
            if tp not in leaders:
                self.last_hw.pop(tp, None)
                continue
            leader, rm = leaders[tp]
            hw = rm.high_watermark(tp)
            assert hw is not None
            previous = self.last_hw.get(tp)
            if previous is not None and previous[0] == leader:
                assert hw >= previous[1], f"{tp}: HW on leader {leader} fell {previous[1]}->{hw}"
            self.last_hw[tp] = (leader, hw)

    @invariant()
    def durable_records_survive(self) -> None:
        for tp, leader, rm in self._current_leaders():
            log = log_contents(rm, tp)
            lost = {o: v for o, v in self.durable[tp].items() if log.get(o) != v}
            assert not lost, f"{tp}: leader {leader} lost or changed acked/consumed records {lost}"

    @invariant()
    def every_request_answered_once_by_its_deadline(self) -> None:
        now = self.cluster.clock.now
        for tracked in self.tracked:
            call = tracked.call
            if call.answered_at is None:
                assert now <= tracked.deadline, (
                    f"no response to {call.request.body!r} by its deadline {tracked.deadline}"
                )
            else:
                assert call.answered_at <= tracked.deadline, (
                    f"{call.request.body!r} answered at {call.answered_at}, "
                    f"after its deadline {tracked.deadline}"
                )
        self.tracked = [t for t in self.tracked if t.call.answered_at is None]

"""Stateful property test: with min.insync.replicas = 2, nothing acknowledged with acks=all is
lost across any sequence of clean leader elections.

Three brokers host one partition. The test plays the controller and elects leaders only from
the ISR (never an unclean election): when the leader crashes (the next leader is an alive ISR
member; none alive -> the partition is offline until an ISR member restarts), on controlled
leader moves, and with same-leader epoch bumps (a ZooKeeper-mode controller removing a crashed
follower from the ISR, a restarting broker, or a bare bump). Followers may stall (they stop
fetching but stay in the ISR until replica.lag.time.max.ms), crash and restart; logs survive a
crash. This covers the KAFKA-1211 sequences: a stalled ISR follower with two quick failovers,
and followers of a re-elected leader whose own high watermark lags.

Invariants checked after every step:
* every acks=-1 write answered NONE is, as the very same batch at the same offset, in the log of
  every member of the current ISR (the leader's, or the last one while offline);
* on the leader, the high watermark is within the log end offset of every ISR member, every ISR
  member holds the very same batches below it, and it never decreases while that broker leads;
* on every replica, log start <= high watermark <= log end;
* every response callback runs at most once.
At teardown every broker restarts and catches up: all logs are then identical, and every
callback has run exactly once.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from replica import BrokerConfig, Errors, PartitionResponse, RecordBatch, TopicPartition
from tests.replica.harness import Cluster, Recorder, records

TP = TopicPartition("t", 0)
BROKERS = (0, 1, 2)


class CleanElections(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        config = BrokerConfig(
            replica_lag_time_max_ms=1000,
            replica_fetch_wait_max_ms=200,
            replica_fetch_backoff_ms=100,
            min_insync_replicas=2,
            log_segment_bytes=300,
        )
        self.cluster = Cluster(BROKERS, config)
        self.cluster.elect(TP, leader=0)
        self.leader: int | None = 0
        self.controller_isr: tuple[int, ...] = BROKERS
        self.alive = set(BROKERS)
        self.stalled: set[int] = set()
        self.hw_floor = 0
        self.recorders: list[Recorder] = []
        self.acknowledged: list[RecordBatch] = []

    # -- helpers ----------------------------------------------------------------------------

    def _log(self, broker_id: int) -> list[RecordBatch]:
        partition = self.cluster.brokers[broker_id].get_partition(TP)
        assert partition is not None
        return [b for s in partition.log.segments for b in s.batches]

    def _isr(self) -> tuple[int, ...]:
        """The ISR the controller acts on: the leader's own, or the last one while offline."""
        if self.leader is not None:
            isr = self.cluster.brokers[self.leader].isr(TP)
            assert isr is not None
            self.controller_isr = isr
        return self.controller_isr

    def _send_state(self, leader: int | None, isr: tuple[int, ...]) -> None:
        """The controller's LeaderAndIsr with the next leader epoch, to the alive replicas."""
        if leader != self.leader:
            self.hw_floor = 0
        self.leader = leader
        self.controller_isr = isr
        self.cluster.elect(
            TP,
            leader=-1 if leader is None else leader,
            isr=isr,
            brokers=sorted(self.alive),
        )

    # -- clients, replication and time ------------------------------------------------------

    @precondition(lambda self: self.leader is not None)
    @rule(acks=st.sampled_from([-1, 0, 1]), count=st.integers(1, 3), timeout=st.integers(0, 3000))
    def produce(self, acks: int, count: int, timeout: int) -> None:
        assert self.leader is not None
        leader = self.leader
        broker = self.cluster.brokers[leader]
        recorder = Recorder()

        def on_response(response: dict[TopicPartition, PartitionResponse]) -> None:
            recorder(response)  # type: ignore[arg-type]
            result = response[TP]
            if acks == -1 and result.error is Errors.NONE:
                assert broker.high_watermark(TP) >= result.base_offset + count
                (acked,) = [b for b in self._log(leader) if b.base_offset == result.base_offset]
                self.acknowledged.append(acked)

        broker.append_messages(timeout, acks, {TP: records(*[b"x" * 20] * count)}, on_response)
        self.recorders.append(recorder)

    @precondition(lambda self: self.leader is not None)
    @rule(count=st.integers(1, 3))
    def produce_and_replicate(self, count: int) -> None:
        """An acks=-1 produce, then every alive, unstalled follower fetches (it is acknowledged
        at once unless a stalled or crashed follower holds the high watermark back)."""
        self.produce(-1, count, 30_000)
        self.replicate()

    @rule(follower=st.sampled_from(BROKERS))
    def fetch(self, follower: int) -> None:
        if follower in self.alive and follower not in self.stalled:
            self.cluster.send_fetches(follower)

    @rule()
    def replicate(self) -> None:
        """Every alive, unstalled follower fetches until its fetch is parked or backing off."""
        self.cluster.pump(brokers=sorted(self.alive - self.stalled))

    @precondition(lambda self: self.leader is not None)
    @rule(min_bytes=st.integers(1, 400), wait=st.integers(0, 800), at_end=st.booleans())
    def consume(self, min_bytes: int, wait: int, at_end: bool) -> None:
        assert self.leader is not None
        hw = self.cluster.brokers[self.leader].high_watermark(TP)
        assert hw is not None
        offset = hw if at_end else 0
        self.recorders.append(
            self.cluster.consume(self.leader, TP, offset, min_bytes=min_bytes, max_wait_ms=wait)
        )

    @rule(ms=st.integers(1, 1200))
    def advance(self, ms: int) -> None:
        self.cluster.advance(ms)

    @rule(broker_id=st.sampled_from(BROKERS))
    def stall(self, broker_id: int) -> None:
        """The follower stops fetching (a GC pause, a stuck fetcher); it stays in the ISR until
        the leader's lag check drops it."""
        self.stalled.add(broker_id)

    @rule(broker_id=st.sampled_from(BROKERS))
    def resume(self, broker_id: int) -> None:
        self.stalled.discard(broker_id)

    # -- the controller ---------------------------------------------------------------------

    @precondition(lambda self: self.leader is not None)
    @rule(choice=st.integers(0, 2))
    def move_leader(self, choice: int) -> None:
        """A controlled leader move (preferred leader election, controlled shutdown)."""
        isr = self._isr()
        candidates = [b for b in isr if b != self.leader and b in self.alive]
        if candidates:
            self._send_state(candidates[choice % len(candidates)], isr)

    @precondition(lambda self: self.leader is not None)
    @rule()
    def bump_leader_epoch(self) -> None:
        """A new leader epoch with the same leader and ISR."""
        self._send_state(self.leader, self._isr())

    @precondition(lambda self: len(self.alive) > 0)
    @rule(choice=st.integers(0, 2), shrink_isr=st.booleans())
    def crash(self, choice: int, shrink_isr: bool) -> None:
        """A broker stops (its log survives). If it led, the controller elects an alive ISR
        member, or leaves the partition offline with the last ISR. A crashed follower is
        removed from the ISR with a new epoch (ZooKeeper mode) when ``shrink_isr``; otherwise
        the leader's lag check drops it later."""
        broker_id = sorted(self.alive)[choice % len(self.alive)]
        isr = self._isr()
        self.cluster.brokers[broker_id].stop_replica(TP, delete=False)
        self.alive.discard(broker_id)
        self.stalled.discard(broker_id)
        if broker_id == self.leader:
            remaining = tuple(b for b in isr if b != broker_id)
            candidates = [b for b in remaining if b in self.alive]
            if candidates:
                self._send_state(candidates[choice % len(candidates)], remaining)
            else:
                self._send_state(None, isr)
        elif shrink_isr and self.leader is not None and broker_id in isr:
            self._send_state(self.leader, tuple(b for b in isr if b != broker_id))

    @precondition(lambda self: len(self.alive) < len(BROKERS))
    @rule(choice=st.integers(0, 2))
    def restart(self, choice: int) -> None:
        """A crashed broker starts again. The controller sends it the partition state with a new
        epoch; if the partition was offline and it is in the last ISR, it becomes the leader."""
        dead = sorted(set(BROKERS) - self.alive)
        broker_id = dead[choice % len(dead)]
        self.alive.add(broker_id)
        isr = self._isr()
        if self.leader is not None:
            self._send_state(self.leader, isr)
        elif broker_id in isr:
            self._send_state(broker_id, tuple(b for b in isr if b in self.alive))

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def acknowledged_writes_are_on_every_isr_member(self) -> None:
        for member in self._isr():
            log = {id(b) for b in self._log(member)}
            assert all(id(b) in log for b in self.acknowledged), f"broker {member} lost a write"

    @invariant()
    def high_watermark_bounds(self) -> None:
        for broker_id in BROKERS:
            broker = self.cluster.brokers[broker_id]
            hw = broker.high_watermark(TP)
            start = broker.log_start_offset(TP)
            end = broker.log_end_offset(TP)
            assert start is not None and hw is not None and end is not None
            assert start <= hw <= end
        if self.leader is None:
            return
        leader = self.cluster.brokers[self.leader]
        hw = leader.high_watermark(TP)
        assert hw is not None and hw >= self.hw_floor
        self.hw_floor = hw
        committed = [b for b in self._log(self.leader) if b.last_offset < hw]
        for member in self._isr():
            end = self.cluster.brokers[member].log_end_offset(TP)
            assert end is not None and hw <= end
            assert self._log(member)[: len(committed)] == committed

    @invariant()
    def callbacks_at_most_once(self) -> None:
        assert all(len(r.calls) <= 1 for r in self.recorders)

    def teardown(self) -> None:
        while len(self.alive) < len(BROKERS):
            self.restart(0)
        self.stalled.clear()
        for _ in range(3):
            self.cluster.pump()
            self.cluster.advance(1000)
        self.cluster.pump()
        assert self.leader is not None
        self.acknowledged_writes_are_on_every_isr_member()
        leader_log = self._log(self.leader)
        assert all(self._log(b) == leader_log for b in BROKERS)
        self.cluster.advance(10_000)
        assert all(len(r.calls) == 1 for r in self.recorders)


CleanElections.TestCase.settings = settings(max_examples=100, stateful_step_count=50)
TestCleanElections = CleanElections.TestCase

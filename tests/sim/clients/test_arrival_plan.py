"""The arrival plan's incremental look-ahead finds the same critical arrival as checking every
pending arrival from scratch, whatever the order of added arrivals, batches changing under
it (with ``invalidate``), arrivals taken and arrivals dropped."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replica.types import TopicPartition
from sim.clients.arrival_plan import ArrivalPlan
from sim.clients.batching import ProducerBatch
from sim.clients.producer_config import ProducerConfig
from sim.clients.records import message_record_size

TOPIC = "t"
CONFIG = ProducerConfig(batch_size=1000, flush_messages=4, max_request_size=1200)


class Model:
    """The plan under test beside the test's own record of pending arrivals and open
    batches."""

    def __init__(self) -> None:
        self.batches: dict[TopicPartition, ProducerBatch | None] = {}
        self.plan = ArrivalPlan(CONFIG, lambda tp: self.batches.get(tp))
        self.pending: list[tuple[int, TopicPartition, int]] = []  # time, tp, record size
        self.last_time = 0
        self.ids = itertools.count()

    def reference(self) -> int | None:
        """The first critical pending arrival's time, checking each from scratch."""
        limit = CONFIG.max_request_size - 61
        state: dict[TopicPartition, list[int]] = {}
        for at, tp, size in self.pending:
            if size > limit:
                return at
            if tp not in state:
                batch = self.batches.get(tp)
                if batch is None:
                    return at
                state[tp] = [batch.size_bytes, len(batch)]
            filled = state[tp][0] + size
            if filled >= CONFIG.batch_size or state[tp][1] + 1 >= CONFIG.flush_messages:
                return at
            state[tp][0] = filled
            state[tp][1] += 1
        return None

    def add(self, gaps: list[int], partitions: list[int], value_sizes: list[int]) -> None:
        times = list(itertools.accumulate(gaps, initial=self.last_time))[1:]
        if times:
            self.last_time = times[-1]
        keys: list[bytes | None] = [None] * len(times)
        self.plan.extend(TOPIC, partitions, times, keys, value_sizes)
        for at, p, value_size in zip(times, partitions, value_sizes, strict=True):
            size = message_record_size(None, value_size)
            self.pending.append((at, TopicPartition(TOPIC, p), size))

    def change_batch(self, partition: int, size_bytes: int | None, count: int) -> None:
        tp = TopicPartition(TOPIC, partition)
        if size_bytes is None:
            self.batches[tp] = None
        else:
            batch = self.batches[tp] = ProducerBatch(tp, 0)
            for i in range(count):
                batch.add(-1 - i, None, 0, 0, 0, 0)
            batch.size_bytes = size_bytes
        self.plan.invalidate(tp)

    def take(self, back: int, at_now: bool) -> None:
        """Take the arrivals due by a time at or before the first critical one."""
        critical = self.plan.next_critical()
        bound = critical if critical is not None else self.last_time
        now = max(0, bound - back)
        until = now if at_now else now - 1
        before = {tp: len(b) for tp, b in self.batches.items() if b is not None}
        due = self.plan.take(until, now, self.ids)
        taken = [a for a in self.pending if a[0] <= until]
        self.pending = [a for a in self.pending if a[0] > until]
        if due is None:
            assert not taken
            return
        assert due.times == [a[0] for a in taken]
        assert due.partitions == [a[1].partition for a in taken]
        assert due.joined == sum(1 for a in taken if a[0] < now)
        assert due.tps == [a[1] for a in taken[due.joined :]]
        joined = list(zip(due.message_ids, taken, strict=True))[: due.joined]
        for tp, n in before.items():
            batch = self.batches[tp]
            assert batch is not None
            assert batch.message_ids[n:] == [i for i, a in joined if a[1] == tp]

    def drop(self) -> None:
        self.plan.drop_pending()
        self.pending.clear()


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.lists(
                st.tuples(
                    st.integers(0, 3), st.integers(-1, 2), st.sampled_from([10, 100, 300, 1200])
                ),
                max_size=8,
            ),
        ),
        st.tuples(
            st.just("batch"),
            st.integers(0, 2),
            st.one_of(st.none(), st.integers(61, 1100)),
            st.integers(0, 4),
        ),
        st.tuples(st.just("take"), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("drop")),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(operations)
def test_the_incremental_look_ahead_equals_a_scan_from_scratch(ops: list[Any]) -> None:
    model = Model()
    for op in ops:
        if op[0] == "add":
            model.add([a[0] for a in op[1]], [a[1] for a in op[1]], [a[2] for a in op[1]])
        elif op[0] == "batch":
            model.change_batch(op[1], op[2], op[3])
        elif op[0] == "take":
            model.take(op[1], op[2])
        else:
            model.drop()
        assert model.plan.next_critical() == model.reference()


def test_a_plan_without_a_critical_arrival_carries_on_with_new_arrivals() -> None:
    model = Model()
    model.change_batch(0, 100, 0)
    model.add([5, 5], [0, 0], [100, 100])  # two records of ~150 bytes join the batch
    assert model.plan.next_critical() is None
    model.add([5, 5], [0, 0], [100, 100])  # the 4th fills the batch (flush_messages 4)
    assert model.plan.next_critical() == 20
    model.take(0, False)  # the arrivals at 5, 10 and 15 join the batch
    batch = model.batches[TopicPartition(TOPIC, 0)]
    assert batch is not None and len(batch) == 3
    assert model.plan.next_critical() == 20

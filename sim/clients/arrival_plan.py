"""A producer's planned arrivals: those taken from its arrival source and not sent yet, and
the look-ahead for the first one that must be sent at its own time.

A producer with an arrival source (``Producer.attach``, see :mod:`sim.clients.producer`)
sends nothing per arrival by itself: it is woken at the first *critical* arrival, one whose
sending could do more than join an open batch, and every callback first joins the arrivals
due before it to their batches, silently. This module keeps the arrivals and that plan.

Lanes. Whether an arrival is critical depends on its partition alone: on the partition's
*open batch* (the batch a new message of the partition would join directly, if any: the
producer's ``open_batch`` answers) and on the partition's earlier pending arrivals, which
will have joined that batch first. An arrival is critical if the partition has no open batch,
if it fills the batch (``batch_size`` bytes or ``flush_messages`` messages), or if it is
larger than a request can carry. So the pending arrivals are kept per partition, in a *lane*,
and each lane keeps its own plan: its arrivals checked so far (they join the open batch),
the bytes and messages the batch will hold by then, and its first critical arrival, if found.
The producer's next critical arrival is the earliest of the lanes' (a heap of arrival
numbers, whose stale entries are dropped when they reach the top); while no lane has found
one, the producer asks its source for more arrivals.

Invalidation. A lane's plan holds as long as its partition's state does not change. The
producer calls :meth:`ArrivalPlan.invalidate` whenever it changes a partition's open batch
or whether the partition is in the fast lane (a batch started, filled, drained or dropped, a
retry, a chaser, a leader looked up or lost); the lane's arrivals are then checked again from
its first pending one, at the next :meth:`ArrivalPlan.next_critical`. An arrival sent at its
own time invalidates its lane too. Arrivals joining their open batch silently do not: the
plan counted them already. So an arrival is checked about once per change of its partition's
state, not once per producer callback; with a partition's batch started, filled or drained a
few times per batch, the look-ahead costs O(1) per arrival, amortised.

Lane states (``_Lane.state``): PLANNED (its plan is current), EXTEND (new arrivals came after
a plan that found no critical arrival: check them, carrying on) and REPLAN (the partition's
state changed: check again from the first pending arrival). Transitions:

=========  ==============================  =========
from       event                           to
=========  ==============================  =========
PLANNED    arrivals added, none critical   EXTEND
PLANNED    ``invalidate``                  REPLAN
EXTEND     ``invalidate``                  REPLAN
EXTEND     ``next_critical``               PLANNED
REPLAN     ``next_critical``               PLANNED
any        ``drop_pending``                REPLAN
=========  ==============================  =========

A lane not PLANNED is in the to-do list exactly once.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Final

from replica.records import RECORD_BATCH_OVERHEAD
from replica.types import TopicPartition, canonical_partition
from sim.clients.batching import ProducerBatch
from sim.clients.producer_config import ProducerConfig
from sim.clients.records import message_record_sizes

__all__ = ["ArrivalPlan", "DueArrivals"]

_US_PER_MS: Final = 1000
_TRIM_AT: Final = 4096
"""Arrivals sent before the columns drop them (a ``del`` per few thousand arrivals)."""

_PLANNED: Final = 0
_EXTEND: Final = 1
_REPLAN: Final = 2


class _Lane:
    """One partition's pending arrivals and their plan.

    ``indices[head:]`` are the numbers of the partition's pending arrivals, in order;
    ``indices[head:scan]`` join ``batch`` (the open batch when the plan was made, None if
    there was none), which then holds ``size_bytes`` bytes and ``count`` messages;
    ``critical`` is ``indices[scan]`` if the plan found a critical arrival, else -1.
    """

    __slots__ = (
        "batch",
        "count",
        "critical",
        "head",
        "indices",
        "scan",
        "size_bytes",
        "state",
        "tp",
    )

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.indices: list[int] = []
        self.head = 0
        self.scan = 0
        self.batch: ProducerBatch | None = None
        self.size_bytes = 0
        self.count = 0
        self.critical = -1
        self.state = _REPLAN


class DueArrivals:
    """Arrivals taken from the plan because they are due, as columns in arrival order:
    ``message_ids[i]`` arrived at ``times[i]`` for partition ``partitions[i]`` (-1: the
    topic's partition count was not known) with key ``keys[i]``, a value of
    ``value_sizes[i]`` bytes, ``sizes[i]`` bytes as a record. The first ``joined`` of them
    have joined their open batches; the others, due now, are the caller's to send, to
    ``tps[i - joined]``."""

    __slots__ = (
        "joined",
        "keys",
        "message_ids",
        "partitions",
        "sizes",
        "times",
        "tps",
        "value_sizes",
    )

    def __init__(
        self,
        message_ids: list[int],
        times: list[int],
        partitions: list[int],
        keys: list[bytes | None],
        value_sizes: list[int],
        sizes: list[int],
        joined: int,
        tps: list[TopicPartition],
    ) -> None:
        self.message_ids = message_ids
        self.times = times
        self.partitions = partitions
        self.keys = keys
        self.value_sizes = value_sizes
        self.sizes = sizes
        self.joined = joined
        self.tps = tps


class ArrivalPlan:
    """Pending arrivals, in lanes, and the look-ahead over them (see the module doc).

    Arrivals are numbered from 0 in the order they are added, which is their time order. The
    columns hold arrivals ``base ..`` (``base`` grows as sent ones are dropped); ``head`` is
    the number of the first pending arrival.

    ``open_batch(tp)`` must return the batch a new message of ``tp`` would join if sent now,
    without starting or filling a batch and without taking the pipeline's slow path; None if
    there is none. The caller must :meth:`invalidate` a partition whenever that answer (or
    the batch's contents, other than by :meth:`take`) may have changed.
    """

    __slots__ = (
        "_base",
        "_batch_size",
        "_flush",
        "_head",
        "_heap",
        "_keys",
        "_lanes",
        "_lanes_by_tp",
        "_max_record_size",
        "_open_batch",
        "_partitions",
        "_rows",
        "_sizes",
        "_times",
        "_todo",
        "_value_sizes",
    )

    def __init__(
        self, config: ProducerConfig, open_batch: Callable[[TopicPartition], ProducerBatch | None]
    ) -> None:
        self._batch_size = config.batch_size
        self._flush = config.flush_messages
        self._max_record_size = config.max_request_size - RECORD_BATCH_OVERHEAD
        self._open_batch = open_batch
        self._base = 0
        self._head = 0
        self._times: list[int] = []
        self._lanes: list[_Lane] = []
        self._partitions: list[int] = []
        self._keys: list[bytes | None] = []
        self._value_sizes: list[int] = []
        self._sizes: list[int] = []
        self._lanes_by_tp: dict[TopicPartition, _Lane] = {}
        self._rows: dict[str, list[_Lane]] = {}
        self._todo: list[_Lane] = []
        self._heap: list[int] = []

    def extend(
        self,
        topic: str,
        partitions: Sequence[int],
        times: Sequence[int],
        keys: Sequence[bytes | None],
        value_sizes: Sequence[int],
    ) -> None:
        """Add arrivals: arrival ``i`` at ``times[i]`` (non-decreasing, not before any added
        earlier) for partition ``partitions[i]`` of ``topic`` (-1: not known yet)."""
        row = self._row(topic, max(partitions, default=-1) + 1)
        lanes = [row[p] if p >= 0 else self._lane(TopicPartition(topic, p)) for p in partitions]
        todo = self._todo
        number = self._base + len(self._times)
        for lane in lanes:
            if lane.state == _PLANNED and lane.critical < 0:
                lane.state = _EXTEND
                todo.append(lane)
            lane.indices.append(number)
            number += 1
        self._lanes += lanes
        self._partitions += partitions
        self._times += times
        self._keys += keys
        self._value_sizes += value_sizes
        self._sizes += message_record_sizes(keys, value_sizes)

    def invalidate(self, tp: TopicPartition) -> None:
        """``tp``'s open batch, or whether it has one, may have changed: plan its arrivals
        again."""
        lane = self._lanes_by_tp.get(tp)
        if lane is not None:
            self._replan(lane)

    def next_critical(self) -> int | None:
        """The time of the first critical pending arrival; None if no pending arrival is
        critical (more arrivals may be needed to find one)."""
        todo = self._todo
        if todo:
            for lane in todo:
                old = lane.critical
                if lane.state == _REPLAN:
                    self._restart(lane)
                self._carry_on(lane)
                lane.state = _PLANNED
                if lane.critical >= 0 and lane.critical != old:
                    heapq.heappush(self._heap, lane.critical)
            todo.clear()
        heap = self._heap
        base = self._base
        while heap:
            number = heap[0]
            if number >= self._head and self._lanes[number - base].critical == number:
                return self._times[number - base]
            heapq.heappop(heap)
        return None

    def first_time(self) -> int | None:
        """The time of the first pending arrival, or None if there is none."""
        head = self._head - self._base
        return self._times[head] if head < len(self._times) else None

    def take(self, until: int, now: int, message_ids: Iterator[int]) -> DueArrivals | None:
        """Remove the pending arrivals due by ``until`` (at most ``now``), numbering them from
        ``message_ids``; those before ``now`` join their open batches (the plan proved they
        neither start nor fill one). None if none is due."""
        base = self._base
        start = self._head - base
        times = self._times
        # A few arrivals are due at a time: loops are cheaper than bisect's calls here.
        end = start
        while end < len(times) and times[end] <= until:
            end += 1
        if end == start:
            return None
        joined = start
        while joined < end and times[joined] < now:
            joined += 1
        self._head = end + base
        ids = list(islice(message_ids, end - start))
        lanes = self._lanes
        keys = self._keys
        value_sizes = self._value_sizes
        sizes = self._sizes
        for i in range(start, joined):
            lane = lanes[i]
            lane.head += 1
            batch = lane.batch
            assert batch is not None
            batch.add(ids[i - start], keys[i], value_sizes[i], times[i] // _US_PER_MS, 0, sizes[i])
        tps = []
        for i in range(joined, end):
            lane = lanes[i]
            lane.head += 1
            self._replan(lane)  # its plan counted on this arrival not being sent yet
            tps.append(lane.tp)
        due = DueArrivals(
            ids,
            times[start:end],
            self._partitions[start:end],
            keys[start:end],
            value_sizes[start:end],
            sizes[start:end],
            joined - start,
            tps,
        )
        if end >= _TRIM_AT:
            self._trim()
        return due

    def drop_pending(self) -> None:
        """Forget the arrivals not sent yet."""
        start = self._head - self._base
        for column in self._columns():
            del column[start:]
        self._heap.clear()
        self._todo.clear()
        for lane in self._lanes_by_tp.values():
            del lane.indices[lane.head :]
            lane.scan = lane.head
            lane.critical = -1
            lane.state = _PLANNED
            self._replan(lane)

    # -- internals ------------------------------------------------------------------------------

    def _replan(self, lane: _Lane) -> None:
        if lane.state == _PLANNED:
            self._todo.append(lane)
        lane.state = _REPLAN

    def _restart(self, lane: _Lane) -> None:
        """Plan ``lane`` from its first pending arrival, with the partition's open batch."""
        lane.scan = lane.head
        lane.critical = -1
        batch = lane.batch = self._open_batch(lane.tp)
        if batch is not None:
            lane.size_bytes = batch.size_bytes
            lane.count = len(batch)

    def _carry_on(self, lane: _Lane) -> None:
        """Check ``lane``'s arrivals from ``scan`` until one is critical or none is left."""
        indices = lane.indices
        scan = lane.scan
        if lane.batch is not None:
            sizes = self._sizes
            base = self._base
            limit = self._max_record_size
            batch_size = self._batch_size
            flush = self._flush
            size_bytes = lane.size_bytes
            count = lane.count
            while scan < len(indices):
                size = sizes[indices[scan] - base]
                filled = size_bytes + size
                if size > limit or filled >= batch_size or (flush > 0 and count + 1 >= flush):
                    break
                size_bytes = filled
                count += 1
                scan += 1
            lane.size_bytes = size_bytes
            lane.count = count
            lane.scan = scan
        lane.critical = indices[scan] if scan < len(indices) else -1

    def _row(self, topic: str, count: int) -> list[_Lane]:
        """The lanes of ``topic``'s partitions ``0 .. count - 1`` (at least), by partition."""
        row = self._rows.setdefault(topic, [])
        while len(row) < count:
            row.append(self._lane(canonical_partition(topic, len(row))))
        return row

    def _lane(self, tp: TopicPartition) -> _Lane:
        lane = self._lanes_by_tp.get(tp)
        if lane is None:
            lane = self._lanes_by_tp[tp] = _Lane(tp)
            self._todo.append(lane)
        return lane

    def _trim(self) -> None:
        """Drop the columns' sent arrivals, and the lanes'."""
        drop = self._head - self._base
        for column in self._columns():
            del column[:drop]
        self._base = self._head
        for lane in self._lanes_by_tp.values():
            del lane.indices[: lane.head]
            lane.scan -= lane.head
            lane.head = 0

    def _columns(
        self,
    ) -> tuple[list[int], list[_Lane], list[int], list[bytes | None], list[int], list[int]]:
        return (
            self._times,
            self._lanes,
            self._partitions,
            self._keys,
            self._value_sizes,
            self._sizes,
        )

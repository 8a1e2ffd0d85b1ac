"""Naive structures the benchmarks compare against, written as well as their design allows.

* :class:`HeapqTimer` -- a binary heap with lazy cancellation, asyncio's approach: a cancelled
  timer stays in the heap and is skipped when it reaches the top. Entries are
  ``(deadline, sequence, handle)`` tuples so every comparison runs in C (asyncio compares its
  ``TimerHandle`` objects with a Python ``__lt__``, which is slower). Unlike asyncio it never
  compacts the heap: cancelled entries stay until their deadline.
* :class:`SortedListTimer` -- ``sortedcontainers.SortedList`` of the same tuples with eager,
  O(log n) cancellation.
* :class:`NaivePurgatory` -- a dict of watch lists plus a :class:`HeapqTimer`-style heap for
  timeouts, with the real purgatory's operation semantics but none of its bookkeeping:
  completed operations leave a watch list only when that key is checked, and leave the heap
  only when their deadline passes.

All three expose the methods the benchmark drivers call, with the same contracts as
:class:`~purgatory.TimingWheel` (``schedule``/``advance``, handles with ``cancel``) and
:class:`~purgatory.DelayedOperationPurgatory` (``try_complete_else_watch``,
``check_and_complete``, ``advance_clock``, ``watched``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from heapq import heappop, heappush
from itertools import count
from typing import Generic, TypeVar

from sortedcontainers import SortedList  # type: ignore[import-untyped]  # ships no type hints

from purgatory.delayed_operation import DelayedOperation, OperationState

__all__ = ["HeapqTimer", "NaivePurgatory", "SortedListTimer"]

Op = TypeVar("Op", bound=DelayedOperation)

_PENDING = OperationState.PENDING


class HeapHandle:
    """A timer in a :class:`HeapqTimer`; ``callback`` is None once it fired or was cancelled."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback: Callable[[], object] | None = callback

    def cancel(self) -> bool:
        """Mark the timer cancelled (its heap entry stays); True if it was pending."""
        if self.callback is None:
            return False
        self.callback = None
        return True


class HeapqTimer:
    """Binary heap of ``(deadline, sequence, handle)`` with lazy cancellation."""

    __slots__ = ("_heap", "_sequence")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, HeapHandle]] = []
        self._sequence = count()  # breaks deadline ties in scheduling order

    def schedule(self, deadline: int, callback: Callable[[], object]) -> HeapHandle:
        """Call ``callback()`` at the first ``advance(now)`` with ``now >= deadline``."""
        handle = HeapHandle(callback)
        heappush(self._heap, (deadline, next(self._sequence), handle))
        return handle

    def advance(self, now: int) -> int:
        """Pop every entry due by ``now``; run the ones not cancelled. Returns how many ran."""
        heap = self._heap
        fired = 0
        while heap and heap[0][0] <= now:
            handle = heappop(heap)[2]
            callback = handle.callback
            if callback is not None:
                handle.callback = None
                fired += 1
                callback()
        return fired


class SortedHandle:
    """A timer in a :class:`SortedListTimer`; cancelling removes its entry at once."""

    __slots__ = ("_owner", "callback", "deadline", "sequence")

    def __init__(
        self, owner: SortedListTimer, deadline: int, sequence: int, callback: Callable[[], object]
    ) -> None:
        self._owner: SortedListTimer | None = owner
        self.deadline = deadline
        self.sequence = sequence
        self.callback = callback

    def cancel(self) -> bool:
        """Remove the timer's entry in O(log n); True if it was pending."""
        owner = self._owner
        if owner is None:
            return False
        self._owner = None
        # Tuples compare element by element and sequences are unique, so the handle itself is
        # only ever compared for identity.
        owner._entries.remove((self.deadline, self.sequence, self))
        return True


class SortedListTimer:
    """``SortedList`` of ``(deadline, sequence, handle)`` with eager cancellation."""

    __slots__ = ("_entries", "_sequence")

    def __init__(self) -> None:
        self._entries: SortedList = SortedList()
        self._sequence = count()

    def schedule(self, deadline: int, callback: Callable[[], object]) -> SortedHandle:
        """Call ``callback()`` at the first ``advance(now)`` with ``now >= deadline``."""
        handle = SortedHandle(self, deadline, next(self._sequence), callback)
        self._entries.add((deadline, handle.sequence, handle))
        return handle

    def advance(self, now: int) -> int:
        """Remove and run every timer due by ``now``. Returns how many ran."""
        entries = self._entries
        fired = 0
        while entries and entries[0][0] <= now:
            handle: SortedHandle = entries.pop(0)[2]
            handle._owner = None
            fired += 1
            handle.callback()
        return fired


class NaivePurgatory(Generic[Op]):
    """Watch lists in a dict plus a heap with lazy cancellation; no purging.

    Same operation protocol as :class:`~purgatory.DelayedOperationPurgatory` (try, watch under
    every key, try again, then time it with deadline ``now + timeout``; expiry runs the
    operation's ``run``), but a completed operation stays in a watch list until that key is
    checked and in the heap until its deadline passes. The time is the last ``advance_clock``.
    """

    def __init__(self) -> None:
        self._watch_lists: defaultdict[Hashable, list[Op]] = defaultdict(list)
        self._heap: list[tuple[int, int, Op]] = []
        self._sequence = count()
        self._now = 0
        self._watched = 0
        self._peak_watched = 0  # watched only shrinks in check_and_complete, which records it

    @property
    def watched(self) -> int:
        """Watch-list entries summed over all keys, completed operations included."""
        return self._watched

    @property
    def peak_watched(self) -> int:
        """The largest :attr:`watched` so far."""
        return max(self._peak_watched, self._watched)

    def try_complete_else_watch(self, operation: Op, keys: Sequence[Hashable]) -> bool:
        """Complete now, else watch under every key and time; True if it completed here."""
        if operation.try_complete():
            return True
        watch_lists = self._watch_lists
        for key in keys:  # the same loop as the real purgatory's
            watch_lists[key].append(operation)
        self._watched += len(keys)
        if operation.try_complete():
            return True
        heappush(self._heap, (self._now + operation.timeout, next(self._sequence), operation))
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try every operation watched under ``key``; drop the completed ones from its list."""
        watchers = self._watch_lists.get(key)
        if watchers is None:
            return 0
        completed = 0
        for operation in watchers:
            # _state is what the real purgatory's purge reads too: the same cheap check.
            if operation._state is _PENDING and operation.try_complete():
                completed += 1
        live = [operation for operation in watchers if operation._state is _PENDING]
        self._peak_watched = max(self._peak_watched, self._watched)
        self._watched -= len(watchers) - len(live)
        if live:
            self._watch_lists[key] = live
        else:
            del self._watch_lists[key]
        return completed

    def advance_clock(self, now: int) -> int:
        """Move to ``now`` and expire every operation due by then; returns how many expired."""
        self._now = now
        heap = self._heap
        expired = 0
        while heap and heap[0][0] <= now:
            operation = heappop(heap)[2]
            if operation._state is _PENDING:  # lazy cancellation: completed ones are skipped here
                operation.run()
                expired += 1
        return expired

"""The simulator's event loop: deterministic discrete-event scheduling over integer time.

Virtual time is an integer number of MICROSECONDS (``Simulator.now``). An event is a
zero-argument callback due at a time; events run in time order, and events due at the same
time run in the order they were scheduled (FIFO), so a run depends only on the seed and the
inputs. Randomness comes from named streams (:meth:`Simulator.rng`), each seeded from
``(seed, name)`` with SHA-256, so adding a stream never perturbs another one.

Implementation: a binary heap (:mod:`heapq`) of integer *keys* and a dict from key to
pending :class:`Event`. An event's key is ``(time << 32) | seq``, ``seq`` a counter of
scheduled events: one int orders events by time, then FIFO, and heapq compares two ints for
much less than the ``(time, seq, ...)`` tuples it used to compare (a tuple comparison is an
equality test and an order test of the items, each a rich comparison). The dict holds the
pending events: running or cancelling an event removes it, so ``Event.pending`` is a lookup
and the heap no longer holds a cancelled event, only its key (lazy cancellation: the key is
skipped when popped); the heap is rebuilt from the dict when dead keys are more than half of
it (and more than ``_COMPACT_MIN_DEAD``), so memory stays bounded when most timers are
cancelled. ``run_until`` pushes a sentinel key at the boundary (sequence number
``2**32 - 1``, which no event has: ordered after every event due then, including ones
scheduled during the run), so the hot loop checks the boundary only on a key with no event.
Keys stay machine-size ints (cheap to make and compare in the compiled build) for the first
2**30 us (~18 simulated minutes); every ``2**32 - 1`` events the pending ones are numbered
again from 0 in key order, which keeps the order. A heap of distinct times
with a FIFO list per time (same-time events in order for free) was measured too: events
scheduled at the same microsecond are rare here (3% of the default scenario's), so it paid a
list and a second dict operation per event for little: no faster compiled, slower in pure
Python. The timing wheel (:class:`purgatory.TimingWheel`) was slower still; see
docs/benchmarks.md.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any, Final, Protocol

from mypy_extensions import mypyc_attr

__all__ = [
    "Event",
    "ReentrantRunError",
    "Repeating",
    "ScheduleError",
    "Scheduler",
    "Simulator",
    "SimulatorError",
    "derive_seed",
    "every",
]

# Dead (cancelled) heap entries are compacted away once there are more than this many of them
# and they make up more than half of the heap.
_COMPACT_MIN_DEAD: Final = 1024

# A key is (time << _SEQ_BITS) | seq, seq < _SEQ_LIMIT; the sentinel's seq is _SEQ_LIMIT.
_SEQ_BITS: Final = 32
_SEQ_LIMIT: Final = (1 << _SEQ_BITS) - 1

_Key = Any
"""An event's key, an int. Typed Any where keys are passed around so that the compiled build
keeps each one a single Python int object: an int-typed variable is unboxed and boxed again
at every use (an allocation each time)."""

_heappush: Final = heappush  # compiled: a C static, not a module-dict lookup per call


@mypyc_attr(native_class=False)  # its subclasses have two built-in bases
class SimulatorError(Exception):
    """Base class of the engine's errors."""


@mypyc_attr(native_class=False)  # a native class cannot have two built-in bases
class ScheduleError(SimulatorError, ValueError):
    """An event was scheduled in the past or at a time that is not an integer."""


@mypyc_attr(native_class=False)  # a native class cannot have two built-in bases
class ReentrantRunError(SimulatorError, RuntimeError):
    """``run``/``run_until`` was called from inside an event callback."""


class Event:
    """A scheduled callback; returned by :meth:`Simulator.call_at` / ``call_later``.

    An opaque handle: ``time`` is the virtual time (us) at which it runs, ``cancel()``
    prevents it. Made by the simulator only: constructing one schedules it (one call, not
    two, per event: a Python frame in pure Python), at a ``time`` the simulator checked.
    """

    __slots__ = ("_callback", "_key", "_simulator", "time")

    def __init__(self, simulator: Simulator, time: int, callback: Callable[[], object]) -> None:
        seq = simulator._seq
        if seq == _SEQ_LIMIT:
            seq = simulator._renumber()
        simulator._seq = seq + 1
        key: _Key = (time << _SEQ_BITS) | seq
        self.time: Final = time
        self._key = key  # changed by Simulator._renumber while pending
        self._callback = callback
        self._simulator = simulator
        simulator._events[key] = self
        _heappush(simulator._heap, key)

    @property
    def pending(self) -> bool:
        """True until the event runs or is cancelled."""
        return self._simulator._events.get(self._key) is self

    def cancel(self) -> bool:
        """Prevent the event from running. O(1) amortised.

        Returns True if it was pending, False if it had already run (or was running) or had
        been cancelled. Safe from any callback, including one running at the same time.
        """
        return self._simulator._cancel(self)

    def __repr__(self) -> str:
        state = "pending" if self.pending else "done"
        return f"<Event time={self.time} {state}>"


class Scheduler(Protocol):
    """What models and clients need from the simulator (a :class:`Simulator` satisfies it)."""

    @property
    def now(self) -> int: ...

    def call_at(self, time: int, callback: Callable[[], object]) -> Event: ...

    def call_later(self, delay: int, callback: Callable[[], object]) -> Event: ...

    def more_due_now(self) -> bool: ...

    def rng(self, stream: str) -> random.Random: ...


def derive_seed(seed: int, stream: str) -> int:
    """The seed of stream ``stream`` under run seed ``seed``: 256 bits of SHA-256.

    Stable across processes, platforms and Python versions (unlike ``hash()``).
    """
    digest = hashlib.sha256(f"{seed}\x00{stream}".encode()).digest()
    return int.from_bytes(digest, "big")


class Simulator:
    """Deterministic discrete-event loop. Virtual time: integer microseconds.

    Guarantees: events run in (time, scheduling order); ``now`` never decreases; an event
    scheduled for the current time from a callback runs in the same ``run_until`` call; the
    same seed and the same calls give the same sequence of callbacks and random numbers.
    An exception raised by a callback propagates out of ``run``/``run_until``; the event that
    raised counts as processed, ``now`` is its time, and the remaining events stay scheduled.
    """

    __slots__ = (
        "_cancelled",
        "_dropped_seqs",
        "_events",
        "_heap",
        "_running",
        "_seq",
        "_stop",
        "_streams",
        "now",
        "seed",
    )

    def __init__(self, seed: int) -> None:
        if type(seed) is not int:
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.seed = seed
        self.now = 0
        self._heap: list[_Key] = []  # pending and cancelled events' keys, and the sentinel's
        self._events: dict[_Key, Event] = {}  # the pending events by key
        self._seq = 0  # the next key's sequence number: the FIFO tie-breaker
        self._dropped_seqs = 0  # sequence numbers given up by renumbering
        self._cancelled = 0  # events cancelled while pending
        self._stop = -1  # the running run_until's sentinel key, -1 if none
        self._running = False
        self._streams: dict[str, random.Random] = {}

    # -- scheduling ---------------------------------------------------------------------------

    def call_at(self, time: int, callback: Callable[[], object]) -> Event:
        """Run ``callback()`` at virtual time ``time`` (an int >= ``now``); return its Event.

        Raises ScheduleError if ``time`` is in the past or not an int.
        """
        if time < self.now or type(time) is not int:
            raise ScheduleError(
                f"cannot schedule at {time!r}: time must be an int >= now ({self.now})"
            )
        return Event(self, time, callback)

    def call_later(self, delay: int, callback: Callable[[], object]) -> Event:
        """Run ``callback()`` ``delay`` microseconds from now (an int >= 0); return its Event.

        Raises ScheduleError if ``delay`` is negative or not an int.
        """
        if delay < 0 or type(delay) is not int:
            raise ScheduleError(f"cannot schedule after {delay!r}: delay must be an int >= 0")
        return Event(self, self.now + delay, callback)

    def more_due_now(self) -> bool:
        """Whether another event (possibly a cancelled one) is queued for the current time,
        to run after the running one."""
        heap = self._heap
        # Every key in the heap is of an event due now or later, and a sentinel's is the last
        # one of its time.
        return bool(heap) and heap[0] < ((self.now + 1) << _SEQ_BITS) - 1

    def rng(self, stream: str) -> random.Random:
        """The random stream named ``stream`` (the same object on every call).

        Seeded with :func:`derive_seed` ``(seed, stream)``: streams are independent of each other
        and of the order in which they are first asked for.
        """
        generator = self._streams.get(stream)
        if generator is None:
            generator = random.Random(derive_seed(self.seed, stream))
            self._streams[stream] = generator
        return generator

    # -- running ------------------------------------------------------------------------------

    def run_until(self, time: int) -> None:
        """Run every event due at or before ``time``, then set ``now`` to ``time``.

        Events scheduled during the call run too if they are due by ``time``. Raises
        ScheduleError if ``time`` is before ``now`` and ReentrantRunError from a callback.
        """
        if time < self.now or type(time) is not int:
            raise ScheduleError(f"cannot run until {time!r}: must be an int >= now ({self.now})")
        self._enter()
        heap = self._heap
        events = self._events
        stop = (time << _SEQ_BITS) | _SEQ_LIMIT
        heappush(heap, stop)
        self._stop = stop
        pop = heappop
        try:
            while True:
                key = pop(heap)
                event = events.get(key)
                if event is None:  # cancelled, or the sentinel
                    if key == stop:
                        break
                    continue
                del events[key]
                self.now = event.time
                event._callback()
            self.now = time
        except BaseException:
            heap.remove(stop)
            heapify(heap)
            raise
        finally:
            self._stop = -1
            self._running = False

    def run(self) -> None:
        """Run events until none are left. ``now`` ends at the time of the last one.

        Raises ReentrantRunError from a callback. Never returns if callbacks keep scheduling.
        """
        self._enter()
        heap = self._heap
        events = self._events
        pop = heappop
        try:
            while heap:
                key = pop(heap)
                event = events.get(key)
                if event is None:  # cancelled
                    continue
                del events[key]
                self.now = event.time
                event._callback()
        finally:
            self._running = False

    # -- introspection ------------------------------------------------------------------------

    @property
    def events_processed(self) -> int:
        """Callbacks run so far (cancelled events are not counted). O(1)."""
        return self.events_scheduled - len(self._events) - self._cancelled

    @property
    def events_scheduled(self) -> int:
        """Events ever scheduled with ``call_at``/``call_later``."""
        return self._seq + self._dropped_seqs

    @property
    def pending(self) -> int:
        """Events scheduled and neither run nor cancelled. O(1)."""
        return len(self._events)

    # -- internals ----------------------------------------------------------------------------

    def _enter(self) -> None:
        if self._running:
            raise ReentrantRunError("run()/run_until() called from inside an event callback")
        self._running = True

    def _cancel(self, event: Event) -> bool:
        events = self._events
        key = event._key
        if events.get(key) is not event:  # ran, cancelled, or (renumbered) another's key
            return False
        del events[key]
        self._cancelled += 1
        dead = len(self._heap) - len(events)
        if dead > _COMPACT_MIN_DEAD and 2 * dead > len(self._heap):
            self._compact()
        return True

    def _compact(self) -> None:
        """Rebuild the heap from the pending events' keys and the sentinel's, in place (the
        run loop holds the list)."""
        heap = self._heap
        heap[:] = self._events
        if self._stop >= 0:
            heap.append(self._stop)
        heapify(heap)

    def _renumber(self) -> int:
        """Give the pending events sequence numbers from 0 in key order (their order stays),
        so that keys never reach the sentinel's sequence number; return the next one."""
        events = self._events
        ordered = sorted(events.items())  # keys are unique: events are never compared
        events.clear()
        for seq, (_, event) in enumerate(ordered):
            key: _Key = (event.time << _SEQ_BITS) | seq
            event._key = key
            events[key] = event
        self._dropped_seqs += self._seq - len(ordered)
        self._seq = len(ordered)
        self._compact()
        return self._seq


class Repeating:
    """Handle of a callback repeated by :func:`every`; ``cancel()`` stops it."""

    __slots__ = ("_callback", "_event", "_interval", "_scheduler")

    def __init__(
        self, scheduler: Scheduler, interval: int, callback: Callable[[], object], first: int
    ) -> None:
        self._scheduler = scheduler
        self._interval = interval
        self._callback = callback
        self._event: Event | None = scheduler.call_at(first, self._fire)

    def _fire(self) -> None:
        self._event = self._scheduler.call_later(self._interval, self._fire)
        self._callback()

    def cancel(self) -> bool:
        """Stop repeating. Returns False if already cancelled."""
        if self._event is None:
            return False
        self._event.cancel()
        self._event = None
        return True


def every(
    scheduler: Scheduler,
    interval: int,
    callback: Callable[[], object],
    *,
    first: int | None = None,
) -> Repeating:
    """Call ``callback()`` at ``first`` (default: now + interval) and every ``interval`` us after.

    Raises ScheduleError if ``interval`` is not a positive int.
    """
    if type(interval) is not int or interval <= 0:
        raise ScheduleError(f"interval must be a positive int of microseconds, got {interval!r}")
    start = scheduler.now + interval if first is None else first
    return Repeating(scheduler, interval, callback, start)

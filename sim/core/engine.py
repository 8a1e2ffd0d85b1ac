"""The simulator's event loop: deterministic discrete-event scheduling over integer time.

Virtual time is an integer number of MICROSECONDS (``Simulator.now``). An event is a
zero-argument callback due at a time; events run in time order, and events due at the same
time run in the order they were scheduled (FIFO), so a run depends only on the seed and the
inputs. Randomness comes from named streams (:meth:`Simulator.rng`), each seeded from
``(seed, name)`` with SHA-256, so adding a stream never perturbs another one.

Implementation: a binary heap (:mod:`heapq`) of events. An :class:`Event` is a small tuple
``(time, seq, callback, simulator)``: tuples compare in C, and the unique sequence number both
breaks ties FIFO and keeps callbacks from ever being compared; making the handle the heap
entry itself saves an allocation per event. Cancellation is lazy (the sequence number goes
into a set and the entry is skipped when popped), with a compaction when dead entries
outnumber live ones, so memory stays bounded when most timers are cancelled. ``run_until``
pushes a sentinel event at the boundary (ordered after every event due then, including ones
scheduled during the run) whose callback stops the loop, so the hot loop carries no
per-event boundary check. ``python -m sim bench`` measures the loop against a bare heapq loop
and against :class:`purgatory.TimingWheel` as the scheduler; the heap won (see
docs/benchmarks.md), so it is what runs here.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Protocol

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
_COMPACT_MIN_DEAD = 1024


@mypyc_attr(native_class=False)  # its subclasses have two built-in bases
class SimulatorError(Exception):
    """Base class of the engine's errors."""


@mypyc_attr(native_class=False)  # a native class cannot have two built-in bases
class ScheduleError(SimulatorError, ValueError):
    """An event was scheduled in the past or at a time that is not an integer."""


@mypyc_attr(native_class=False)  # a native class cannot have two built-in bases
class ReentrantRunError(SimulatorError, RuntimeError):
    """``run``/``run_until`` was called from inside an event callback."""


class _Stop(Exception):
    """Raised by the boundary sentinel of ``run_until`` to leave the event loop."""


def _stop() -> None:
    raise _Stop


@mypyc_attr(native_class=False)  # a native class cannot extend tuple
class Event(tuple[int, float, Callable[[], object], "Simulator"]):
    """A scheduled callback; returned by :meth:`Simulator.call_at` / ``call_later``.

    An opaque handle: ``time`` is the virtual time (us) at which it runs, ``cancel()``
    prevents it. (It is the tuple ``(time, seq, callback, simulator)`` the heap orders.)
    """

    __slots__ = ()

    @property
    def time(self) -> int:
        return self[0]

    @property
    def pending(self) -> bool:
        """True until the event runs or is cancelled."""
        return self[3]._is_pending(self[0], self[1])

    def cancel(self) -> bool:
        """Prevent the event from running. O(1) amortised.

        Returns True if it was pending, False if it had already run (or was running) or had
        been cancelled. Safe from any callback, including one running at the same time.
        """
        return self[3]._cancel(self[0], self[1])

    def __repr__(self) -> str:
        state = "pending" if self.pending else "done"
        return f"<Event time={self[0]} {state}>"


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
        "_bounded",
        "_cancelled",
        "_discarded",
        "_heap",
        "_last_seq",
        "_running",
        "_seq",
        "_streams",
        "now",
        "seed",
    )

    def __init__(self, seed: int) -> None:
        if type(seed) is not int:
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.seed = seed
        self.now = 0
        self._heap: list[Event] = []
        self._seq = 0  # events ever scheduled; also the FIFO tie-breaker
        # Every event with time < now, or time == now and seq <= _last_seq, has been popped
        # (events pop in (time, seq) order); the others are pending or cancelled.
        self._last_seq = -1.0  # a float: the run_until sentinel's seq is math.inf
        self._cancelled: set[float] = set()  # seqs of cancelled events still in the heap
        self._discarded = 0  # cancelled entries popped or compacted away
        self._running = False
        self._bounded = False  # a run_until sentinel is in the heap
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
        seq = self._seq
        self._seq = seq + 1
        event = Event((time, seq, callback, self))
        heappush(self._heap, event)
        return event

    def call_later(self, delay: int, callback: Callable[[], object]) -> Event:
        """Run ``callback()`` ``delay`` microseconds from now (an int >= 0); return its Event.

        Raises ScheduleError if ``delay`` is negative or not an int.
        """
        if delay < 0 or type(delay) is not int:
            raise ScheduleError(f"cannot schedule after {delay!r}: delay must be an int >= 0")
        seq = self._seq
        self._seq = seq + 1
        event = Event((self.now + delay, seq, callback, self))
        heappush(self._heap, event)
        return event

    def more_due_now(self) -> bool:
        """Whether another event (possibly a cancelled one) is queued for the current time,
        to run after the running one."""
        heap = self._heap
        return bool(heap) and heap[0][0] == self.now and heap[0][1] != math.inf

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
        sentinel = Event((time, math.inf, _stop, self))
        heappush(heap, sentinel)
        self._bounded = True
        cancelled = self._cancelled
        pop = heappop
        try:
            while True:
                at, seq, callback, _ = pop(heap)
                if cancelled and seq in cancelled:
                    self._drop_dead(seq)
                    continue
                self.now = at
                self._last_seq = seq
                callback()
        except _Stop:
            self._last_seq = float(self._seq - 1)  # every event due by `time` has run
        except BaseException:
            heap.remove(sentinel)
            heapify(heap)
            raise
        finally:
            self._bounded = False
            self._running = False

    def run(self) -> None:
        """Run events until none are left. ``now`` ends at the time of the last one.

        Raises ReentrantRunError from a callback. Never returns if callbacks keep scheduling.
        """
        self._enter()
        heap = self._heap
        cancelled = self._cancelled
        pop = heappop
        try:
            while heap:
                at, seq, callback, _ = pop(heap)
                if cancelled and seq in cancelled:
                    self._drop_dead(seq)
                    continue
                self.now = at
                self._last_seq = seq
                callback()
        finally:
            self._running = False

    # -- introspection ------------------------------------------------------------------------

    @property
    def events_processed(self) -> int:
        """Callbacks run so far (cancelled events are not counted). O(1)."""
        return self._seq - (len(self._heap) - self._bounded) - self._discarded

    @property
    def events_scheduled(self) -> int:
        """Events ever scheduled with ``call_at``/``call_later``."""
        return self._seq

    @property
    def pending(self) -> int:
        """Events scheduled and neither run nor cancelled. O(1)."""
        return len(self._heap) - self._bounded - len(self._cancelled)

    # -- internals ----------------------------------------------------------------------------

    def _enter(self) -> None:
        if self._running:
            raise ReentrantRunError("run()/run_until() called from inside an event callback")
        self._running = True

    def _is_pending(self, time: int, seq: float) -> bool:
        if seq in self._cancelled:
            return False
        return time > self.now or (time == self.now and seq > self._last_seq)

    def _cancel(self, time: int, seq: float) -> bool:
        if not self._is_pending(time, seq):
            return False
        cancelled = self._cancelled
        cancelled.add(seq)
        if len(cancelled) > _COMPACT_MIN_DEAD and 2 * len(cancelled) > len(self._heap):
            self._compact()
        return True

    def _drop_dead(self, seq: float) -> None:
        """Account for a cancelled entry just popped from the heap."""
        self._cancelled.discard(seq)
        self._discarded += 1

    def _compact(self) -> None:
        """Remove cancelled entries from the heap in place (the run loop holds the list)."""
        heap = self._heap
        cancelled = self._cancelled
        live = [event for event in heap if event[1] not in cancelled]
        self._discarded += len(heap) - len(live)
        cancelled.clear()
        heap[:] = live
        heapify(heap)


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

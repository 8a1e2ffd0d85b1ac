"""Expiry lateness: the engine's timers against the original's 1-second sweep, same messages.

``n`` messages are inserted at random instants (microsecond resolution) over ``spread_s``
seconds, each with a random ``ttl`` or, for the other half, a random ``hide``, of 1 to
``max_s`` whole seconds; the *exact* deadline is the insert instant plus that. Error = the
instant the expiry (deletion, or the message turning visible) takes effect minus the exact
deadline; negative is early.

* **Timers** (this package): a real :class:`~msgqueue.MessageQueue` on a memory back end,
  driven in virtual time the way its reaper drives it: the clock (integer ms, read as the
  floor of the instant) jumps to the wheel's next deadline and the engine advances there.
  The back end records when each deletion and unhide happens.
* **Sweep** (a model of the original's memory back end): deadlines are whole seconds,
  ``int(insert time) + ttl``; once a second a sweep walks every message and expires those
  whose deadline is at or before ``int(now)``. Where in the second the sweep runs (its
  phase) decides its errors, so the model runs at ``phases`` evenly spaced phases (the
  middles of equal slices of the second) and pools
  them.

Both run on the same messages in one process, in virtual time: the numbers are exact and
the same on every machine for a given seed.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterable

import attrs

from msgqueue.backend import MemoryBackend
from msgqueue.message_queue import MessageQueue
from msgqueue.model import Attributes, Message
from purgatory import ManualClock

__all__ = ["Lateness", "run_expiry"]


@attrs.frozen
class Lateness:
    """Errors (ms, effect minus exact deadline) of one kind of expiry by one mechanism."""

    mechanism: str
    kind: str  # "ttl" or "hide"
    count: int
    min_ms: float
    median_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, mechanism: str, kind: str, errors: list[float]) -> Lateness:
        ordered = sorted(errors)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        return cls(
            mechanism,
            kind,
            len(ordered),
            ordered[0],
            statistics.median(ordered),
            p99,
            ordered[-1],
        )


@attrs.frozen
class _Insert:
    at_us: int  # the insert instant, microseconds
    id: str
    kind: str
    seconds: int

    @property
    def deadline_us(self) -> int:
        return self.at_us + self.seconds * 1_000_000


def _workload(n: int, spread_s: int, max_s: int, seed: int) -> list[_Insert]:
    rng = random.Random(seed)
    inserts = [
        _Insert(
            rng.randrange(spread_s * 1_000_000),
            f"m{number}",
            "ttl" if number % 2 == 0 else "hide",
            rng.randint(1, max_s),
        )
        for number in range(n)
    ]
    return sorted(inserts, key=lambda insert: insert.at_us)


class _RecordingBackend(MemoryBackend):
    """A memory back end that notes the clock when a message is deleted or unhidden."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock
        self.deleted: dict[str, int] = {}
        self.unhidden: dict[str, int] = {}

    def delete(self, messages: Iterable[Message]) -> None:
        messages = list(messages)
        for message in messages:
            self.deleted[message.id] = self.clock.now
        super().delete(messages)

    def save(self, messages: Iterable[Message]) -> None:
        messages = list(messages)
        for message in messages:
            if message.hide_at is None:
                self.unhidden[message.id] = self.clock.now
        super().save(messages)


def _timers(inserts: list[_Insert]) -> dict[str, float]:
    """Effect instants (ms) with the engine's timers."""
    clock = ManualClock()
    backend = _RecordingBackend(clock)
    engine = MessageQueue(backend, clock=clock)

    def run_until(target: int) -> None:
        while (due := engine.purgatory.next_deadline()) is not None and due <= target:
            clock.now = max(due, clock.now)
            engine.advance(clock.now)
        clock.now = max(target, clock.now)

    for insert in inserts:
        run_until(insert.at_us // 1000)
        if insert.kind == "ttl":
            attributes = Attributes(ttl=insert.seconds)
        else:
            attributes = Attributes(ttl=0, hide=insert.seconds)
        engine.create_message("bench", "q", insert.id, "", attributes)
    run_until(10**15)
    effects = {**backend.deleted, **backend.unhidden}
    return {id: float(at) for id, at in effects.items()}


def _sweep(inserts: list[_Insert], phase_us: int) -> dict[str, float]:
    """Effect instants (ms) with a sweep at ``phase_us`` past every second over whole-second
    deadlines (the original's memory back end)."""
    pending: list[tuple[str, int]] = []  # (id, whole-second deadline), as the original stores
    effects: dict[str, float] = {}
    position = 0
    sweep_us = phase_us
    while position < len(inserts) or pending:
        while position < len(inserts) and inserts[position].at_us < sweep_us:
            insert = inserts[position]
            pending.append((insert.id, insert.at_us // 1_000_000 + insert.seconds))
            position += 1
        now_s = sweep_us // 1_000_000
        kept = []
        for id, deadline_s in pending:  # the walk over every message, once a second
            if deadline_s <= now_s:
                effects[id] = sweep_us / 1000
            else:
                kept.append((id, deadline_s))
        pending = kept
        sweep_us += 1_000_000
    return effects


def run_expiry(
    n: int = 100_000, *, spread_s: int = 10, max_s: int = 30, phases: int = 8, seed: int = 1
) -> list[Lateness]:
    """Errors of ttl and hide expiry for timers and sweep on the same ``n`` messages."""
    inserts = _workload(n, spread_s, max_s, seed)
    runs = {"timers": [_timers(inserts)]}
    runs["1 s sweep"] = [
        _sweep(inserts, (2 * phase + 1) * 1_000_000 // (2 * phases)) for phase in range(phases)
    ]
    results = []
    for mechanism, effects in runs.items():
        for kind in ("ttl", "hide"):
            errors = [
                run[insert.id] - insert.deadline_us / 1000
                for run in effects
                for insert in inserts
                if insert.kind == kind
            ]
            results.append(Lateness.of(mechanism, kind, errors))
    return results

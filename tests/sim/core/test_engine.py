"""The event loop: ordering, FIFO ties, cancellation, run_until boundaries, RNG streams."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.engine import (
    _COMPACT_MIN_DEAD,
    _SEQ_LIMIT,
    Event,
    ReentrantRunError,
    ScheduleError,
    Simulator,
    derive_seed,
    every,
)
from tests.builds import bad_argument


def test_events_run_in_time_order_and_fifo_within_a_time() -> None:
    sim = Simulator(0)
    log: list[str] = []
    sim.call_at(20, lambda: log.append("b@20"))
    sim.call_at(10, lambda: log.append("a@10"))
    sim.call_at(20, lambda: log.append("c@20"))
    sim.call_later(10, lambda: log.append("d@10"))
    sim.run()
    assert log == ["a@10", "d@10", "b@20", "c@20"]
    assert sim.now == 20


def test_event_scheduled_for_now_from_a_callback_runs_after_those_already_due() -> None:
    sim = Simulator(0)
    log: list[str] = []

    def first() -> None:
        log.append("first")
        sim.call_later(0, lambda: log.append("scheduled-by-first"))

    sim.call_at(5, first)
    sim.call_at(5, lambda: log.append("second"))
    sim.run_until(5)
    assert log == ["first", "second", "scheduled-by-first"]


@settings(max_examples=100)
@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=60))
def test_any_schedule_runs_sorted_by_time_then_scheduling_order(times: list[int]) -> None:
    sim = Simulator(0)
    ran: list[tuple[int, int]] = []
    for index, at in enumerate(times):
        sim.call_at(at, lambda at=at, index=index: ran.append((sim.now, index)))
    sim.run()
    assert ran == sorted((at, index) for index, at in enumerate(times))
    assert sim.events_processed == len(times)


def test_scheduling_in_the_past_or_with_non_integer_time_is_refused() -> None:
    sim = Simulator(0)
    sim.run_until(100)
    with pytest.raises(ScheduleError, match="must be an int >= now"):
        sim.call_at(99, lambda: None)
    with pytest.raises(ScheduleError, match="delay must be an int >= 0"):
        sim.call_later(-1, lambda: None)
    with bad_argument(ScheduleError, 100.5, where=Simulator):
        sim.call_at(100.5, lambda: None)  # type: ignore[arg-type]
    with bad_argument(ScheduleError, 1.0, where=Simulator):
        sim.call_later(1.0, lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ScheduleError):
        sim.run_until(50)


def test_cancel_prevents_running_and_reports_whether_it_was_pending() -> None:
    sim = Simulator(0)
    log: list[str] = []
    keep = sim.call_at(10, lambda: log.append("keep"))
    drop = sim.call_at(10, lambda: log.append("drop"))
    assert drop.pending
    assert drop.cancel() is True
    assert drop.cancel() is False
    assert not drop.pending
    sim.run()
    assert log == ["keep"]
    assert keep.cancel() is False  # already ran
    assert sim.events_processed == 1


def test_a_callback_can_cancel_an_event_due_at_the_same_time() -> None:
    sim = Simulator(0)
    log: list[str] = []
    later = sim.call_at(7, lambda: log.append("later"))
    sim.call_at(7, lambda: log.append(f"cancelled={later.cancel()}"))
    # `later` was scheduled first, so it runs first and can no longer be cancelled.
    sim.call_at(7, lambda: log.append("third"))
    sim.run()
    assert log == ["later", "cancelled=False", "third"]

    sim = Simulator(0)
    log.clear()
    victims: list[Event] = []
    sim.call_at(7, lambda: log.append(f"cancelled={victims[0].cancel()}"))
    victims.append(sim.call_at(7, lambda: log.append("victim")))
    sim.run()
    assert log == ["cancelled=True"]


def test_an_event_for_now_scheduled_after_a_run_is_still_pending() -> None:
    sim = Simulator(0)
    sim.call_at(10, lambda: None)
    sim.run_until(10)
    log: list[int] = []
    first = sim.call_at(10, lambda: log.append(1))
    assert first.pending
    assert first.cancel() is True and not first.pending
    second = sim.call_later(0, lambda: log.append(2))
    sim.run()
    assert log == [2]
    assert not second.pending and second.cancel() is False
    assert repr(second) == "<Event time=10 done>"


def test_a_running_event_cannot_cancel_itself() -> None:
    sim = Simulator(0)
    results: list[bool] = []
    events: list[Event] = []
    events.append(sim.call_at(3, lambda: results.append(events[0].cancel())))
    sim.run()
    assert results == [False]
    assert sim.events_processed == 1


def test_mass_cancellation_compacts_and_keeps_order_and_counts() -> None:
    sim = Simulator(0)
    ran: list[int] = []
    events = [sim.call_at(i, lambda i=i: ran.append(i)) for i in range(6000)]
    for event in events:
        if event.time % 5:
            event.cancel()
    assert sim.pending == 1200
    assert len(sim._heap) < 3000  # compacted: dead entries do not pile up
    sim.run()
    assert ran == list(range(0, 6000, 5))
    assert sim.events_processed == 1200
    assert sim.events_scheduled == 6000
    assert sim.pending == 0


def test_compaction_during_run_until_keeps_the_boundary() -> None:
    sim = Simulator(0)
    ran: list[int] = []
    victims = [sim.call_at(1000 + i, lambda: ran.append(-1)) for i in range(3 * _COMPACT_MIN_DEAD)]
    sim.call_at(1000, lambda: ran.append(1000))

    def cancel_all() -> None:
        for victim in victims:
            victim.cancel()  # compacts the heap while run_until's sentinel is in it

    sim.call_at(10, cancel_all)
    sim.call_at(20, lambda: ran.append(20))
    sim.run_until(999)
    assert ran == [20]  # the sentinel survived: nothing due after 999 ran
    assert len(sim._heap) < len(victims)  # compacted
    assert sim.now == 999 and sim.pending == 1
    sim.run_until(1000)
    assert ran == [20, 1000]
    assert sim.events_processed == 3
    assert sim.events_scheduled == 3 * _COMPACT_MIN_DEAD + 3


def test_cancelling_an_event_due_now_from_a_callback_at_now() -> None:
    sim = Simulator(0)
    log: list[str] = []
    victims: list[Event] = []

    def canceller() -> None:
        log.append(f"due={sim.more_due_now()}")
        log.append(f"cancelled={victims[0].cancel()}")
        log.append(f"again={victims[0].cancel()} pending={victims[0].pending}")
        sim.call_later(0, lambda: log.append("new"))

    sim.call_at(5, canceller)
    victims.append(sim.call_at(5, lambda: log.append("victim")))
    sim.call_at(5, lambda: log.append(f"after due={sim.more_due_now()}"))
    sim.run_until(5)
    assert log == [
        "due=True",
        "cancelled=True",
        "again=False pending=False",
        "after due=True",
        "new",
    ]
    assert sim.events_processed == 3 and sim.pending == 0
    assert sim.events_scheduled == 4


def test_an_event_scheduled_for_now_runs_in_the_same_run_until_after_the_queue() -> None:
    sim = Simulator(0)
    log: list[str] = []

    def chain(depth: int) -> None:
        log.append(f"chain{depth}")
        if depth < 3:
            sim.call_at(sim.now, lambda: chain(depth + 1))

    sim.call_at(8, lambda: chain(0))
    sim.call_at(8, lambda: log.append("other"))
    sim.run_until(8)
    assert log == ["chain0", "other", "chain1", "chain2", "chain3"]
    assert sim.now == 8 and sim.pending == 0


def test_sequence_numbers_wrap_by_renumbering_the_pending_events_in_order() -> None:
    sim = Simulator(0)
    ran: list[str] = []
    stale = sim.call_at(30, lambda: ran.append("cancelled"))  # sequence number 0
    stale.cancel()
    sim._seq = _SEQ_LIMIT - 3  # as after ~4.3 billion events
    scheduled, processed = sim.events_scheduled, sim.events_processed
    old = [
        sim.call_at(at, lambda i=i, at=at: ran.append(f"old{i}@{at}"))
        for i, at in enumerate((40, 30, 30))
    ]
    # The limit is reached: the pending events get sequence numbers from 0 in key order, so
    # the first `old` event at 30 gets the key `stale` had.
    new = [sim.call_at(at, lambda at=at: ran.append(f"new@{at}")) for at in (30, 40, 50)]
    assert sim._seq == 6
    assert not stale.pending and stale.cancel() is False
    assert all(event.pending for event in old + new)
    assert repr(stale) == "<Event time=30 done>"
    sim.run()
    assert ran == ["old1@30", "old2@30", "new@30", "old0@40", "new@40", "new@50"]
    assert sim.events_scheduled == scheduled + 6
    assert sim.events_processed == processed + 6


def test_run_until_includes_the_boundary_and_stops_before_the_next_event() -> None:
    sim = Simulator(0)
    log: list[int] = []
    for at in (10, 20, 21):
        sim.call_at(at, lambda: log.append(sim.now))
    sim.run_until(20)
    assert log == [10, 20]
    assert sim.now == 20
    assert sim.pending == 1
    sim.run_until(20)  # nothing new is due
    assert log == [10, 20]
    sim.run_until(1000)
    assert log == [10, 20, 21]
    assert sim.now == 1000  # time advances to the boundary even without events


def test_events_scheduled_at_the_boundary_during_run_until_still_run() -> None:
    sim = Simulator(0)
    log: list[str] = []
    sim.call_at(30, lambda: sim.call_later(0, lambda: log.append("chained")))
    sim.call_at(30, lambda: sim.call_later(1, lambda: log.append("too late")))
    sim.run_until(30)
    assert log == ["chained"]
    sim.run_until(31)
    assert log == ["chained", "too late"]


def test_events_processed_is_exact_from_inside_a_callback() -> None:
    sim = Simulator(0)
    seen: list[int] = []
    for at in range(5):
        sim.call_at(at, lambda: seen.append(sim.events_processed))
    sim.call_at(2, lambda: None).cancel()
    sim.run_until(10)
    assert seen == [1, 2, 3, 4, 5]
    assert sim.events_processed == 5


def test_an_exception_propagates_and_leaves_the_simulator_usable() -> None:
    sim = Simulator(0)
    log: list[int] = []

    def boom() -> None:
        raise RuntimeError("boom")

    sim.call_at(1, lambda: log.append(1))
    sim.call_at(2, boom)
    sim.call_at(3, lambda: log.append(3))
    with pytest.raises(RuntimeError, match="boom"):
        sim.run_until(10)
    assert sim.now == 2
    assert sim.events_processed == 2
    assert sim.pending == 1
    sim.run_until(10)
    assert log == [1, 3]
    assert sim.now == 10
    assert sim.events_processed == 3


def test_running_from_a_callback_is_refused() -> None:
    sim = Simulator(0)
    errors: list[Exception] = []

    def nested() -> None:
        try:
            sim.run_until(sim.now + 5)
        except ReentrantRunError as error:
            errors.append(error)

    sim.call_at(1, nested)
    sim.run()
    assert len(errors) == 1


def test_every_repeats_until_cancelled() -> None:
    sim = Simulator(0)
    times: list[int] = []
    handle = every(sim, 10, lambda: times.append(sim.now), first=0)
    sim.run_until(35)
    assert times == [0, 10, 20, 30]
    assert handle.cancel() is True
    assert handle.cancel() is False
    sim.run_until(100)
    assert times == [0, 10, 20, 30]
    with pytest.raises(ScheduleError):
        every(sim, 0, lambda: None)


# -- random streams ----------------------------------------------------------------------------


def test_streams_are_deterministic_per_seed_and_name() -> None:
    a, b = Simulator(7), Simulator(7)
    assert [a.rng("x").random() for _ in range(5)] == [b.rng("x").random() for _ in range(5)]
    assert a.rng("x") is a.rng("x")
    assert Simulator(8).rng("x").random() != Simulator(7).rng("x").random()


def test_streams_do_not_depend_on_each_other_or_on_creation_order() -> None:
    a, b = Simulator(3), Simulator(3)
    a.rng("network")
    for _ in range(1000):
        a.rng("network").random()  # heavy use of one stream...
    b.rng("other")
    # ...leaves another stream untouched, whatever was created first.
    assert [a.rng("clients").random() for _ in range(10)] == [
        b.rng("clients").random() for _ in range(10)
    ]
    assert a.rng("clients").random() != a.rng("client").random()


def test_stream_seeds_are_stable_across_processes_and_versions() -> None:
    # A golden value: SHA-256 of "1\\x00network" (never Python's salted hash()).
    golden = 0x644B1537B32A981119648E35FD146F34D9E99BBC9DBBCFB918CD576FA770CA5A
    assert derive_seed(1, "network") == golden
    assert random.Random(golden).random() == Simulator(1).rng("network").random()


def _trace(seed: int) -> list[tuple[int, float]]:
    sim = Simulator(seed)
    trace: list[tuple[int, float]] = []

    def process(name: str) -> None:
        rng = sim.rng(name)
        trace.append((sim.now, rng.random()))
        if len(trace) < 500:
            sim.call_later(rng.randrange(0, 100), lambda: process(name))

    for name in ("a", "b", "c"):
        sim.call_at(0, lambda name=name: process(name))
    sim.run()
    return trace


def test_same_seed_same_run() -> None:
    assert _trace(11) == _trace(11)
    assert _trace(11) != _trace(12)


def test_more_due_now_sees_later_events_of_the_same_instant_only() -> None:
    sim = Simulator(1)
    seen: list[bool] = []
    sim.call_at(5, lambda: seen.append(sim.more_due_now()))
    sim.call_at(5, lambda: seen.append(sim.more_due_now()))
    sim.call_at(6, lambda: seen.append(sim.more_due_now()))
    sim.run_until(6)  # the run's own end marker at 6 is not an event
    assert seen == [True, False, False]

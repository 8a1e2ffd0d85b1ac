"""Memory and SQLite behave the same: random sequences of calls, applied to an engine over
each back end at the same virtual times, give the same answers and leave the same messages
(hypothesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from msgqueue import (
    Action,
    Attributes,
    Detail,
    Filters,
    MemoryBackend,
    MessageQueue,
    Request,
    SqliteBackend,
)
from purgatory import ManualClock

_IDS = st.sampled_from(["a", "b", "c", "d"])
_QUEUES = st.sampled_from(["q1", "q2"])
_SECONDS = st.none() | st.integers(0, 3)
_CALLS = st.one_of(
    st.tuples(st.just("put"), _QUEUES, _IDS, _SECONDS, _SECONDS),
    st.tuples(st.just("update"), _QUEUES, _IDS, _SECONDS, _SECONDS),
    st.tuples(st.just("delete"), _QUEUES, _IDS),
    st.tuples(
        st.just("many"),
        st.sampled_from(list(Action)),
        _QUEUES,
        st.integers(0, 3),
        st.none() | _IDS,
        st.booleans(),
        _SECONDS,
        _SECONDS,
    ),
    st.tuples(st.just("queues"), st.integers(0, 2), st.none() | _QUEUES),
    st.tuples(st.just("sleep"), st.integers(1, 2500)),
)


def _apply(engine: MessageQueue, call: tuple[object, ...]) -> object:
    now = engine.now
    match call:
        case ("put", queue, id, ttl, hide):
            return engine.create_message("acct", queue, id, f"{id}@{now}", Attributes(ttl, hide))  # type: ignore[arg-type]
        case ("update", queue, id, ttl, hide):
            found = engine.update_message("acct", queue, id, Attributes(ttl, hide))  # type: ignore[arg-type]
            return None if found is None else found.view(Detail.ALL, now)
        case ("delete", queue, id):
            found = engine.delete_message("acct", queue, id)  # type: ignore[arg-type]
            return None if found is None else found.view(Detail.ALL, now)
        case ("many", action, queue, limit, marker, hidden, ttl, hide):
            filters = Filters(limit=limit, marker=marker, match_hidden=hidden)  # type: ignore[arg-type]
            request = Request(action, "acct", queue, filters, Attributes(ttl, hide))  # type: ignore[arg-type]
            return [m.view(Detail.ALL, now) for m in engine.execute(request)]
        case ("queues", limit, marker):
            return engine.get_queues("acct", Filters(limit=limit, marker=marker))  # type: ignore[arg-type]
    raise AssertionError(call)


def _stored(engine: MessageQueue) -> list[tuple[object, ...]]:
    return sorted((m.queue, m.id, m.body, m.ttl_at, m.hide_at) for m in engine.backend.messages())


@settings(max_examples=60)
@given(st.lists(_CALLS, max_size=25))
def test_memory_and_sqlite_answer_alike(calls: list[tuple[object, ...]]) -> None:
    clock = ManualClock()
    with tempfile.TemporaryDirectory() as directory:
        sqlite = SqliteBackend(Path(directory) / "q.db")
        engines = [MessageQueue(MemoryBackend(), clock=clock), MessageQueue(sqlite, clock=clock)]
        for call in calls:
            if call[0] == "sleep":
                clock.now += call[1]  # type: ignore[operator]
                continue
            memory, on_sqlite = (_apply(engine, call) for engine in engines)
            assert memory == on_sqlite, call
            assert _stored(engines[0]) == _stored(engines[1])
        sqlite.close()

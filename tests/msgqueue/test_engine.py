"""The engine over both back ends, in virtual time: the data model, filters, atomic updates
and deletes, ttl and hide exact to the millisecond, waiters woken by inserts and unhides."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from msgqueue import (
    ALL,
    Action,
    Attributes,
    Backend,
    Detail,
    Filters,
    InvalidArgumentError,
    MessageQueue,
    Request,
    SqliteBackend,
)
from purgatory import ManualClock


def _engine(backend: Backend, clock: ManualClock) -> MessageQueue:
    return MessageQueue(backend, clock=clock)


def _ids(engine: MessageQueue, filters: Filters = ALL, queue: str = "q") -> list[str]:
    return [m.id for m in engine.execute(Request(Action.GET, "acct", queue, filters))]


def test_insert_overwrite_keeps_place_and_default_ttl(backend: Backend) -> None:
    engine = _engine(backend, ManualClock())
    assert engine.create_message("acct", "q", "a", "one")
    assert engine.create_message("acct", "q", "b", "two")
    assert not engine.create_message("acct", "q", "a", "uno")  # overwrite: not new
    assert _ids(engine) == ["a", "b"]
    message = engine.get_message("acct", "q", "a")
    assert message is not None
    assert message.body == "uno"
    assert message.view(Detail.ALL, engine.now) == {"id": "a", "ttl": 600, "hide": 0, "body": "uno"}


def test_filters_limit_marker_hidden(backend: Backend) -> None:
    engine = _engine(backend, ManualClock())
    for id in "abcde":
        engine.create_message("acct", "q", id, id, Attributes(hide=5 if id == "c" else 0))
    assert _ids(engine) == ["a", "b", "d", "e"]
    assert _ids(engine, Filters(match_hidden=True)) == list("abcde")
    assert _ids(engine, Filters(limit=2)) == ["a", "b"]
    assert _ids(engine, Filters(marker="b")) == ["d", "e"]
    assert _ids(engine, Filters(marker="b", limit=1, match_hidden=True)) == ["c"]
    assert _ids(engine, Filters(marker="unknown")) == ["a", "b", "d", "e"]  # as the original


def test_get_and_hide_then_get_and_delete_are_atomic(backend: Backend) -> None:
    clock = ManualClock()
    engine = _engine(backend, clock)
    for id in "abc":
        engine.create_message("acct", "q", id, id)
    hide = Request(Action.UPDATE, "acct", "q", Filters(limit=2), Attributes(hide=10))
    assert [m.id for m in engine.execute(hide)] == ["a", "b"]
    assert [m.id for m in engine.execute(hide)] == ["c"]
    assert engine.execute(hide) == []
    taken = engine.execute(Request(Action.DELETE, "acct", "q", Filters(match_hidden=True)))
    assert [m.id for m in taken] == ["a", "b", "c"]
    assert engine.get_accounts() == [] and engine.get_queues("acct") == []


def test_ttl_and_hide_fire_exactly_at_their_deadline(backend: Backend) -> None:
    clock = ManualClock(1_000)
    engine = _engine(backend, clock)
    engine.create_message("acct", "q", "m", "x", Attributes(ttl=3, hide=2))
    clock.now = 2_999
    assert _ids(engine) == []  # hidden until 3_000
    message = engine.get_message("acct", "q", "m")
    assert message is not None and message.view(Detail.ATTRIBUTES, engine.now) == {
        "id": "m",
        "ttl": 2,  # 1.001 s left: rounded up
        "hide": 1,  # 1 ms left still reads as hidden
    }
    clock.now = 3_000
    assert _ids(engine) == ["m"]
    clock.now = 3_999
    assert _ids(engine) == ["m"]
    clock.now = 4_000
    assert _ids(engine) == [] and engine.get_message("acct", "q", "m") is None


def test_ttl_zero_never_expires_and_updates_rearm(backend: Backend) -> None:
    clock = ManualClock()
    engine = _engine(backend, clock)
    engine.create_message("acct", "q", "m", "x", Attributes(ttl=0))
    clock.now = 10**9
    assert _ids(engine) == ["m"]
    engine.update_message("acct", "q", "m", Attributes(ttl=1, hide=1))
    clock.now += 999
    assert _ids(engine, Filters(match_hidden=True)) == ["m"]
    clock.now += 1
    assert _ids(engine, Filters(match_hidden=True)) == []


def test_accounts_and_queues_exist_while_they_hold_messages(backend: Backend) -> None:
    engine = _engine(backend, ManualClock())
    engine.create_message("b", "q2", "m", "x")
    engine.create_message("a", "q1", "m", "x")
    engine.create_message("a", "q3", "m", "x")
    assert engine.get_accounts() == ["a", "b"]
    assert engine.get_accounts(Filters(marker="a")) == ["b"]
    assert engine.get_queues("a", Filters(limit=1)) == ["q1"]
    assert engine.delete_queues("a", Filters(marker="q1")) == ["q3"]
    assert engine.get_queues("a") == ["q1"]
    assert engine.delete_message("a", "q1", "m") is not None
    assert engine.get_accounts() == ["b"]


def test_accounts_never_see_each_other(backend: Backend) -> None:
    engine = _engine(backend, ManualClock())
    engine.create_message("alice", "q", "m", "secret")
    assert engine.execute(Request(Action.GET, "bob", "q")) == []
    assert engine.execute(Request(Action.DELETE, "bob", "q", Filters(match_hidden=True))) == []
    assert engine.get_message("bob", "q", "m") is None
    assert engine.get_queues("bob") == []
    assert engine.get_message("alice", "q", "m") is not None


@pytest.mark.parametrize(
    "make",
    [
        lambda: Attributes(ttl=-1),
        lambda: Attributes(hide=2**31),
        lambda: Filters(limit=-3),
        lambda: Request(Action.GET, "a/b", "q"),
        lambda: Request(Action.GET, "a", ""),
    ],
)
def test_bad_arguments_raise_invalid_argument(make: object) -> None:
    with pytest.raises(InvalidArgumentError):
        make()  # type: ignore[operator]


def test_restart_rebuilds_timers_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "queue.db"
    clock = ManualClock(50_000)
    first = MessageQueue(SqliteBackend(path), clock=clock, start=50_000)
    first.create_message("acct", "q", "m", "x", Attributes(ttl=5, hide=2))
    first.create_message("acct", "q", "n", "y", Attributes(ttl=1))
    first.backend.close()
    clock.now = 51_500  # "n" expired while the server was down
    second = MessageQueue(SqliteBackend(path), clock=clock, start=51_500)
    assert _ids(second, Filters(match_hidden=True)) == ["m"]
    assert _ids(second) == []
    clock.now = 52_000  # the hide deadline set before the restart
    assert _ids(second) == ["m"]
    clock.now = 55_000
    assert _ids(second, Filters(match_hidden=True)) == []
    second.backend.close()


async def test_waiters_are_woken_by_insert_and_by_unhide_each_message_to_one(
    backend: Backend,
) -> None:
    clock = ManualClock()
    engine = _engine(backend, clock)
    take = Request(Action.UPDATE, "acct", "q", Filters(limit=1), Attributes(hide=60))
    got: list[list[str]] = []

    async def worker() -> None:
        got.append([m.id for m in await engine.execute_waiting(take, 30)])

    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(worker)
        await trio.testing.wait_all_tasks_blocked()
        assert engine.purgatory.num_delayed == 5
        for id in "abc":
            engine.create_message("acct", "q", id, id)  # each insert wakes the waiters
        engine.create_message("acct", "q", "d", "d", Attributes(hide=1))
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(got) == [["a"], ["b"], ["c"]]
        clock.now = 1_000
        engine.advance(1_000)  # the hide expiry of "d" wakes one more waiter
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(got) == [["a"], ["b"], ["c"], ["d"]]
        clock.now = 30_000
        engine.advance(30_000)  # the last waiter times out empty
    assert sorted(got) == [[], ["a"], ["b"], ["c"], ["d"]]

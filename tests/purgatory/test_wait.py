"""``await purgatory.wait(op, keys)``: submit an operation and wait until it completes, on trio
(under MockClock: exact instants) and on asyncio. It tells whether the operation expired;
cancelling the waiting task cancels the operation; an operation cancelled by someone else
raises OperationCancelledError in the waiter."""

from __future__ import annotations

import asyncio

import pytest
import trio
import trio.testing

from purgatory import DelayedOperationPurgatory, OperationCancelledError
from purgatory.asyncio_reaper import asyncio_clock, open_asyncio_reaper
from purgatory.testing import ConditionOperation
from purgatory.trio_reaper import open_trio_reaper, trio_clock

Purgatory = DelayedOperationPurgatory[ConditionOperation]


def metrics(purgatory: Purgatory) -> tuple[int, int]:
    return purgatory.watched, purgatory.num_delayed


# -- trio -----------------------------------------------------------------------------------


async def test_wait_returns_false_when_the_operation_completes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory = Purgatory("p")
    op = ConditionOperation(1_000)

    async def satisfy_later() -> None:
        await trio.sleep(0.3)
        op.satisfied = True
        purgatory.check_and_complete("k")

    async with open_trio_reaper(purgatory, clock), trio.open_nursery() as nursery:
        nursery.start_soon(satisfy_later)
        assert await purgatory.wait(op, ["k"]) is False
        assert clock() == 300 and op.is_completed and not op.is_expired


async def test_wait_returns_true_when_the_operation_expires(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory = Purgatory("p", tick=10)
    async with open_trio_reaper(purgatory, clock):
        await trio.sleep(2)
        op = ConditionOperation(125)
        assert await purgatory.wait(op, ["k"]) is True
        assert clock() == 2130 and op.is_expired  # 2000 + 125, rounded up to the tick
        assert op.calls == ["try_complete", "try_complete", "on_complete", "on_expiration"]


async def test_wait_returns_at_once_for_an_operation_complete_at_submission() -> None:
    purgatory = Purgatory("p")  # no reaper needed: nothing is timed
    op = ConditionOperation(1_000, satisfied=True)
    assert await purgatory.wait(op, ["k"]) is False
    assert op.is_completed and metrics(purgatory) == (0, 0)


async def test_cancelling_the_waiting_task_cancels_the_operation(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory = Purgatory("p", group_min_keys=2)
    op, other = ConditionOperation(1_000), ConditionOperation(1_000)
    purgatory.try_complete_else_watch(other, ["a", "b"])
    async with open_trio_reaper(purgatory, clock):
        with trio.move_on_after(0.1) as scope:
            await purgatory.wait(op, ["a", "b"])
        assert scope.cancelled_caught
        assert op.is_cancelled and not op.scheduled
        assert metrics(purgatory) == (2, 1) and purgatory.watchers("a") == [other]
        await trio.sleep(2)
    assert op.calls == ["try_complete", "try_complete"]  # never completed, never expired


async def test_an_operation_cancelled_by_someone_else_raises_in_the_waiter(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    purgatory = Purgatory("p")
    async with open_trio_reaper(purgatory, clock), trio.open_nursery() as nursery:
        nursery.start_soon(_shutdown_after, purgatory, 0.2)
        with pytest.raises(OperationCancelledError, match="was cancelled while awaited"):
            await purgatory.wait(ConditionOperation(1_000), ["k"])
        assert clock() == 200


async def _shutdown_after(purgatory: Purgatory, seconds: float) -> None:
    await trio.sleep(seconds)
    purgatory.shutdown()


async def test_wait_refuses_what_try_complete_else_watch_refuses() -> None:
    purgatory = Purgatory("p")
    op = ConditionOperation(10)
    purgatory.try_complete_else_watch(op, ["k"])
    with pytest.raises(ValueError, match="already submitted"):
        await purgatory.wait(op, ["k"])
    assert metrics(purgatory) == (1, 1) and not op.is_cancelled


def test_wait_needs_trio_or_asyncio() -> None:
    coroutine = Purgatory("p").wait(ConditionOperation(10), ["k"])
    with pytest.raises(RuntimeError, match="needs a running trio or asyncio event loop"):
        coroutine.send(None)


# -- asyncio --------------------------------------------------------------------------------


def test_wait_on_asyncio_completes_expires_and_cancels() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        purgatory = Purgatory("p")
        completes, expires, abandoned = (ConditionOperation(t) for t in (5_000, 30, 5_000))

        async def satisfy_later() -> None:
            await asyncio.sleep(0.05)
            completes.satisfied = True
            purgatory.check_and_complete("c")

        async with open_asyncio_reaper(purgatory, clock), asyncio.timeout(5):
            helper = asyncio.create_task(satisfy_later())
            assert await purgatory.wait(completes, ["c"]) is False
            await helper
            assert await purgatory.wait(expires, ["e"]) is True
            assert expires.is_expired
            purgatory.purge_completed()  # the expired one lingered under "e"
            waiter = asyncio.create_task(purgatory.wait(abandoned, ["x", "y"]))
            await asyncio.sleep(0.01)
            assert metrics(purgatory) == (2, 1)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            assert abandoned.is_cancelled and metrics(purgatory) == (0, 0)
            late = asyncio.create_task(purgatory.wait(ConditionOperation(5_000), ["z"]))
            await asyncio.sleep(0.01)
            purgatory.cancel_for_key("z")
            with pytest.raises(OperationCancelledError):
                await late

    asyncio.run(main())

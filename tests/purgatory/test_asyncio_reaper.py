"""The asyncio expiry reaper, in real time with short timeouts.

asyncio has no mock clock, so these tests check occurrence, order and wake-up counts only,
never timing precision. Safety bounds (``SETTLE`` seconds) only keep a broken reaper from
hanging the suite.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable, Sequence

import pytest

from purgatory import DelayedOperation, DelayedOperationPurgatory, TimingWheel
from purgatory.asyncio_reaper import AsyncioReaper, asyncio_clock, open_asyncio_reaper
from purgatory.clock import InvalidClockError, InvalidReaperArgumentError, LoopClock

SETTLE = 5.0  # seconds: far longer than any timeout here


class Recorded(DelayedOperation):
    """Completes once ``ready()`` holds; appends its name to ``log`` when it completes.
    ``on_expiration`` raises ``fail`` if given."""

    def __init__(
        self,
        timeout: int,
        name: str,
        log: list[str],
        ready: Callable[[], bool] = lambda: False,
        fail: Exception | None = None,
    ) -> None:
        super().__init__(timeout)
        self.name = name
        self.log = log
        self.ready = ready
        self.fail = fail
        self.done = asyncio.Event()

    def try_complete(self) -> bool:
        return self.ready() and self.force_complete()

    def on_complete(self) -> None:
        self.log.append(self.name)
        self.done.set()

    def on_expiration(self) -> None:
        if self.fail is not None:
            raise self.fail


def submit(
    purgatory: DelayedOperationPurgatory[Recorded],
    timeout: int,
    name: str,
    log: list[str],
    keys: Sequence[Hashable] = ("key",),
    ready: Callable[[], bool] = lambda: False,
    fail: Exception | None = None,
) -> Recorded:
    operation = Recorded(timeout, name, log, ready, fail)
    purgatory.try_complete_else_watch(operation, keys)
    return operation


async def completed(*operations: Recorded) -> None:
    async with asyncio.timeout(SETTLE):
        for operation in operations:
            await operation.done.wait()


def new_purgatory(clock: LoopClock, tick: int = 1) -> DelayedOperationPurgatory[Recorded]:
    return DelayedOperationPurgatory("p", tick=tick, clock=clock)


def test_operations_expire_in_deadline_order() -> None:
    async def main() -> list[Recorded]:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        log: list[str] = []
        async with open_asyncio_reaper(purgatory, clock):
            operations = [
                submit(purgatory, timeout, name, log)
                for timeout, name in [(30, "a"), (10, "b"), (20, "c"), (10, "d")]
            ]
            await completed(*operations)
        assert log == ["b", "d", "c", "a"]
        assert purgatory.num_delayed == 0
        return operations

    assert all(operation.is_expired for operation in asyncio.run(main()))


def test_wheel_as_target_runs_callbacks() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        wheel = TimingWheel()
        fired = asyncio.Event()
        async with open_asyncio_reaper(wheel, clock):
            wheel.schedule(clock() + 10, fired.set)
            async with asyncio.timeout(SETTLE):
                await fired.wait()

    asyncio.run(main())


def test_earlier_deadline_added_while_sleeping_wakes_the_reaper() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        log: list[str] = []
        async with open_asyncio_reaper(purgatory, clock) as reaper:
            late = submit(purgatory, 60_000, "late", log)
            await asyncio.sleep(0.01)  # the reaper sleeps until the late deadline
            early_wakeups = reaper.early_wakeups
            early = submit(purgatory, 20, "early", log)
            await completed(early)
            assert reaper.early_wakeups == early_wakeups + 1
            assert not late.is_completed

    asyncio.run(main())


def test_later_deadline_does_not_wake_the_reaper() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock, tick=10)
        log: list[str] = []
        async with open_asyncio_reaper(purgatory, clock) as reaper:
            first = submit(purgatory, 100, "first", log)
            await asyncio.sleep(0.005)
            early_wakeups = reaper.early_wakeups
            later = submit(purgatory, 150, "later", log)
            await completed(first, later)
            assert reaper.early_wakeups == early_wakeups
            assert log == ["first", "later"]

    asyncio.run(main())


def test_timer_that_fires_early_does_not_make_the_reaper_spin() -> None:
    """asyncio runs a timer up to its clock resolution early whenever the loop wakes for
    something else. Make that 50 ms, wake the loop every millisecond, and check that the reaper
    expires what it slept for on its first wake-up instead of sleeping again and again."""

    async def busy() -> None:
        while True:
            await asyncio.sleep(0.001)

    async def main() -> None:
        asyncio.get_running_loop()._clock_resolution = 0.05  # type: ignore[attr-defined]
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        log: list[str] = []
        waker = asyncio.create_task(busy())
        async with open_asyncio_reaper(purgatory, clock) as reaper:
            operation = submit(purgatory, 100, "op", log)
            await completed(operation)
            assert operation.is_expired
            assert reaper.wakeups == 1
        waker.cancel()

    asyncio.run(main())


def test_callback_error_goes_to_on_error_and_the_rest_still_expire() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        log: list[str] = []
        errors: list[Exception] = []
        boom = RuntimeError("boom")
        async with open_asyncio_reaper(purgatory, clock, on_error=errors.append) as reaper:
            failing = submit(purgatory, 10, "failing", log, fail=boom)
            same_batch = submit(purgatory, 10, "same batch", log)
            later = submit(purgatory, 30, "later", log)
            await completed(failing, same_batch, later)
            after_error = submit(purgatory, 10, "after error", log)
            await completed(after_error)
        assert errors == [boom]
        assert reaper.errors == 1
        assert log == ["failing", "same batch", "later", "after error"]

    asyncio.run(main())


def test_callback_errors_are_logged_by_default(caplog: pytest.LogCaptureFixture) -> None:
    boom = ValueError("boom")

    async def main() -> None:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        log: list[str] = []
        async with open_asyncio_reaper(purgatory, clock):
            submit(purgatory, 5, "failing", log, fail=boom)
            await completed(submit(purgatory, 15, "later", log))

    with caplog.at_level(logging.ERROR, logger="purgatory.reaper"):
        asyncio.run(main())
    assert [record.exc_info[1] for record in caplog.records if record.exc_info] == [boom]


def test_on_error_that_raises_stops_the_reaper_and_propagates_unwrapped() -> None:
    def reraise(exc: Exception) -> None:
        raise exc

    body_cancelled = False

    async def main() -> None:
        nonlocal body_cancelled
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        async with open_asyncio_reaper(purgatory, clock, on_error=reraise):
            submit(purgatory, 5, "failing", [], fail=KeyError("fail fast"))
            try:
                await asyncio.sleep(SETTLE)
            except asyncio.CancelledError:
                body_cancelled = True
                raise

    with pytest.raises(KeyError, match="fail fast"):
        asyncio.run(main())
    assert body_cancelled


def test_body_exception_propagates_unwrapped() -> None:
    async def main() -> None:
        async with open_asyncio_reaper(TimingWheel(), asyncio_clock()):
            raise LookupError("from the body")

    with pytest.raises(LookupError, match="from the body"):
        asyncio.run(main())


def test_leaving_the_block_stops_the_reaper_and_leaves_operations_pending() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        log: list[str] = []
        async with open_asyncio_reaper(purgatory, clock):
            pending = submit(purgatory, 20, "pending", log)
        added_after = submit(purgatory, 1, "added after", log)
        await asyncio.sleep(0.05)
        assert log == []
        assert not pending.is_completed
        assert not added_after.is_completed
        assert purgatory.num_delayed == 2

    asyncio.run(main())


def test_cancelling_the_enclosing_task_ends_the_reaper() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        log: list[str] = []

        async def serve() -> None:
            async with open_asyncio_reaper(purgatory, clock):
                submit(purgatory, 60_000, "pending", log)
                await asyncio.sleep(SETTLE)

        task = asyncio.create_task(serve())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert log == []
        assert purgatory.num_delayed == 1

    asyncio.run(main())


def test_reaper_run_as_a_task_is_cancellable() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock)
        log: list[str] = []
        task = asyncio.create_task(AsyncioReaper(purgatory, clock).run())
        operation = submit(purgatory, 10, "op", log)
        await completed(operation)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        after = submit(purgatory, 1, "after", log)
        await asyncio.sleep(0.03)
        assert log == ["op"]
        assert not after.is_completed

    asyncio.run(main())


def test_purgatory_driven_by_the_reaper_with_check_and_complete_from_another_task() -> None:
    async def main() -> list[Recorded]:
        clock = asyncio_clock()
        purgatory = new_purgatory(clock, tick=5)
        high_watermark = {"a": 0, "b": 0}
        log: list[str] = []

        def reached(key: str, offset: int) -> Callable[[], bool]:
            return lambda: high_watermark[key] >= offset

        async def replicate(key: str, offset: int, delay: float) -> None:
            await asyncio.sleep(delay)
            high_watermark[key] = offset
            purgatory.check_and_complete(key)

        async with open_asyncio_reaper(purgatory, clock), asyncio.TaskGroup() as group:
            operations = [
                submit(purgatory, 1000, "satisfied", log, ["a"], reached("a", 5)),
                submit(purgatory, 20, "times out", log, ["a"], reached("a", 6)),
                submit(purgatory, 1000, "on b", log, ["b"], reached("b", 10)),
                submit(
                    purgatory,
                    1000,
                    "both",
                    log,
                    ["a", "b"],
                    lambda: high_watermark["a"] >= 1 and high_watermark["b"] >= 1,
                ),
                submit(purgatory, 40, "never", log, ["b"], reached("b", 20)),
            ]
            group.create_task(replicate("a", 5, 0.01))
            group.create_task(replicate("b", 10, 0.02))
            await completed(*operations)
        assert purgatory.num_delayed == 0
        return operations

    operations = asyncio.run(main())
    assert [(op.name, op.is_expired) for op in operations] == [
        ("satisfied", False),
        ("times out", True),
        ("on b", False),
        ("both", False),
        ("never", True),
    ]


def test_bad_arguments_are_rejected() -> None:
    async def main() -> None:
        clock = asyncio_clock()
        with pytest.raises(InvalidClockError, match="must read this event loop's time"):
            AsyncioReaper(TimingWheel(), LoopClock.anchored(time.monotonic))
        with pytest.raises(InvalidReaperArgumentError, match="TimingWheel or a Delayed"):
            AsyncioReaper(object(), clock)  # type: ignore[arg-type]
        with pytest.raises(InvalidClockError, match="units_per_second must be an int"):
            asyncio_clock(0)

    asyncio.run(main())
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio_clock()

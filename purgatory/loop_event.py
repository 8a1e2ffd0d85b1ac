"""An event of the running event loop, trio's or asyncio's: what an awaiting call waits on.

:meth:`~purgatory.DelayedOperationPurgatory.wait` is the purgatory's one awaitable method and
works under either loop. It needs only an event whose ``set()`` may be called from any
synchronous code of the loop's thread (a completion, an expiry in the reaper's task) and wakes
the waiter later, at the loop's next scheduling point; ``trio.Event`` and ``asyncio.Event``
both are one. Neither loop library is imported until a call needs an event.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["LoopEvent", "current_loop_event"]


class LoopEvent(Protocol):
    """What :func:`current_loop_event` returns (``trio.Event`` or ``asyncio.Event``)."""

    def set(self) -> None: ...

    async def wait(self) -> object: ...


def current_loop_event() -> LoopEvent:
    """A new event of the loop running the current task.

    Raises RuntimeError when called outside a trio task or a running asyncio loop.
    """
    import asyncio  # both imported here: the synchronous core never pays for them

    import trio

    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        pass
    else:
        return trio.Event()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError("this call needs a running trio or asyncio event loop") from None
    return asyncio.Event()

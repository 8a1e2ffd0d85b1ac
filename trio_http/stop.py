"""Stopping a service: SIGTERM does what Ctrl-C does.

trio turns Ctrl-C (SIGINT) into a :class:`KeyboardInterrupt` raised in the running task: the
nursery cancels the service's other tasks, their cleanup runs (a proxy commits and leaves its
group, a queue closes its back end), and the command's ``except* KeyboardInterrupt`` reports
it and exits 0. A process manager stops a service with SIGTERM instead (``kill``, systemd,
``docker stop``), whose default action ends the process on the spot, cleanup skipped. A
command starts :func:`stop_on_sigterm` beside its service so that both signals take the same
path.
"""

from __future__ import annotations

import signal

import trio

__all__ = ["stop_on_sigterm"]


async def stop_on_sigterm(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Wait for SIGTERM, then raise :class:`KeyboardInterrupt` in this task, as trio does on
    SIGINT. Start it in the service's nursery with ``await nursery.start(stop_on_sigterm)``,
    from the main thread (signal handlers can only be installed there: RuntimeError
    otherwise): ``start`` returns once the handler is installed, so a service started after it
    never announces itself while SIGTERM would still end the process on the spot."""
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        task_status.started()
        async for _ in signals:
            raise KeyboardInterrupt

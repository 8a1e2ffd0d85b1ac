"""A wall-clock time limit on one task's simulation, so a runaway run fails instead of hanging
the sweep.

The limit is a POSIX interval timer (``signal.setitimer``) whose SIGALRM handler raises
:class:`TaskTimeLimit` in the task. That was chosen over checking a deadline between the
engine's steps (``sim.runner`` advances virtual time one second at a time) because:

* it interrupts the simulation wherever it is: a single virtual second can itself take
  forever (a rate of 10^12 messages per second), and a check between steps would never run;
* it needs nothing from the run function, so a user-supplied one is limited too;
* it costs nothing while the simulation runs.

:class:`TaskTimeLimit` derives from :class:`BaseException`, like KeyboardInterrupt, so an
``except Exception`` inside the simulated components (``KafkaApis`` turns exceptions into
error responses) cannot swallow it; and the timer fires again every second until the limit
is lifted, in case something swallows it anyway. A signal handler can only be set in a
process's main thread, which is where PySpark's Python workers run their tasks.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from sim.sweep.errors import SweepError

REPEAT_S = 1.0
"""After the limit, SIGALRM is raised again this often until the limit is lifted."""


class TaskTimeLimit(BaseException):
    """A task ran longer than its time limit (see the module docstring for why it is a
    BaseException)."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`TaskTimeLimit` in the block if it runs longer than ``seconds`` of wall
    time; ``None``: no limit.

    Raises :class:`~sim.sweep.errors.SweepError` when a limit is asked for outside a main
    thread or where SIGALRM does not exist (Windows). The previous SIGALRM handler is restored
    when the block ends.
    """
    if seconds is None:
        yield
        return
    in_main_thread = threading.current_thread() is threading.main_thread()
    if not hasattr(signal, "setitimer") or not in_main_thread:
        raise SweepError(
            "a time limit needs SIGALRM in the main thread of the task's process (POSIX); "
            "run without a time limit here"
        )

    armed = [True]  # cleared first when the block ends: a late alarm then raises nothing

    def expire(signum: int, frame: FrameType | None) -> None:
        if armed[0]:
            raise TaskTimeLimit(f"the run took longer than its time limit of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, REPEAT_S)
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)

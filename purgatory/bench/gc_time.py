"""CPU time spent in CPython's cyclic garbage collector, measured with ``gc.callbacks``."""

from __future__ import annotations

import gc
import time
from types import TracebackType

__all__ = ["GcTime"]


class GcTime:
    """While entered, accumulates in :attr:`ns` the process CPU time of every collection.

    Collections are triggered by allocations, so they land inside whatever code is being timed;
    this tells how much of a measured cost the collector took.
    """

    def __init__(self) -> None:
        self.ns = 0
        self._started = 0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time_ns()
        else:
            self.ns += time.process_time_ns() - self._started

    def __enter__(self) -> GcTime:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        gc.callbacks.remove(self._callback)

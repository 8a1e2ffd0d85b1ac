"""Sarama's per-partition retry levels: how its async producer keeps order across retries.

Every message carries a retry count (its *level*). A partition producer only lets messages
of its current level, the *high watermark* (hwm), through; everything else waits in a
per-level buffer. When a message with a higher level arrives (a retry), the hwm rises to it
and the caller sends a *chaser* of level ``hwm - 1`` down the old path: the chaser comes back
(retried, so at level ``hwm``) only after every message that was ahead of it on that path has
come back too. When the chaser of the current level returns, the hwm falls, and the buffer
of each level it passes is flushed, in order, until a level still expecting its chaser, or 0.

This class is the pure bookkeeping (Sarama's ``partitionProducer.highWatermark`` and
``retryState``); sending chasers, backing off and finding the leader are the caller's job.
``retry_max`` levels exist above 0; as in Sarama, ``buffers[retry_max]`` and ``expecting[0]``
are never used.
"""

from __future__ import annotations

import enum
from typing import Generic, TypeVar

__all__ = ["RetryLevels", "Route"]

T = TypeVar("T")


class Route(enum.Enum):
    """What :meth:`RetryLevels.dispatch` decided."""

    #: Send the returned items (in order) to the partition's broker now.
    SEND = "send"
    #: The hwm rose to the item's level: send a chaser of level ``hwm - 1`` down the old
    #: path, back off, refresh the leader, then send the returned item.
    NEW_LEVEL = "new_level"
    #: Nothing to send: the item was buffered, or it was a chaser of a lower level.
    HELD = "held"


class RetryLevels(Generic[T]):
    """Order-preserving retry state of one partition (Sarama's algorithm)."""

    __slots__ = ("_buffers", "_expecting", "high_watermark")

    def __init__(self, retry_max: int) -> None:
        self.high_watermark = 0
        self._buffers: list[list[T]] = [[] for _ in range(retry_max + 1)]
        self._expecting = [False] * (retry_max + 1)

    @property
    def idle(self) -> bool:
        """True in normal operation: hwm 0, no buffered message, no chaser expected."""
        return self.high_watermark == 0 and not any(self._buffers) and not any(self._expecting)

    def dispatch(self, item: T, level: int, chaser: bool) -> tuple[Route, list[T]]:
        """Route ``item`` (a message, or a chaser if ``chaser``) whose retry count is ``level``.

        Returns the decision and the items to send now (for NEW_LEVEL: just ``item``, to be
        sent after the back-off; chasers are never returned).
        Raises ValueError if ``level`` is outside ``0..retry_max``.
        """
        if not 0 <= level < len(self._buffers):
            raise ValueError(f"retry level must be in 0..{len(self._buffers) - 1}, got {level}")
        hwm = self.high_watermark
        if level > hwm:
            if chaser:  # cannot happen with Sarama's protocol; nothing is waiting for it
                return Route.HELD, []
            self.high_watermark = level
            self._expecting[level] = True
            return Route.NEW_LEVEL, [item]
        if level < hwm:
            if chaser:
                self._expecting[level] = False
            else:
                self._buffers[level].append(item)
            return Route.HELD, []
        if not chaser:
            return Route.SEND, [item]
        if hwm == 0:  # a stray chaser in normal operation
            return Route.HELD, []
        # The chaser of the current level: everything before it is back; fall and flush.
        self._expecting[hwm] = False
        flushed: list[T] = []
        while True:
            hwm -= 1
            flushed.extend(self._buffers[hwm])
            self._buffers[hwm] = []
            if self._expecting[hwm] or hwm == 0:
                break
        self.high_watermark = hwm
        return Route.SEND, flushed

"""WatchGroup: the operations a purgatory watches under one exact sequence of keys.

A purgatory keeps one group per distinct ``keys`` tuple it has been given, and indexes each
group under every key it contains. Watching an operation is then one append to its group,
whatever the number of keys, and a purge or a check drops a completed operation from every
key's watch list at once; the per-key watch lists of Kafka's purgatory are the union, per
key, of the groups containing that key.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

from purgatory.delayed_operation import DelayedOperation

__all__ = ["WatchGroup"]

Op = TypeVar("Op", bound=DelayedOperation)


class WatchGroup(Generic[Op]):
    """Operations watched under ``keys`` (duplicates kept, each counts), in watch order.

    ``unique_keys`` are the distinct keys, in first-seen order: the keys the group is indexed
    under. ``order`` is the purgatory's watch count when the group was made or last revived:
    a key's groups are tried in that order. A group with no operations is *retired*: kept by
    the purgatory for the next operation with the same keys. ``dropped`` becomes True when the
    purgatory forgets the group (a cancel or a purge emptied it, a key of it was cancelled, or
    it was retired the longest); a dropped group is never used again. Groups hash by identity.
    """

    __slots__ = ("dropped", "keys", "operations", "order", "unique_keys")

    def __init__(self, keys: tuple[Hashable, ...], order: int = 0) -> None:
        self.keys = keys
        self.unique_keys = keys if len(keys) == 1 else tuple(dict.fromkeys(keys))
        self.operations: list[Op] = []
        self.order = order
        self.dropped = False

    def entries(self) -> int:
        """Watch-list entries the group stands for: one per (operation, key) pair."""
        return len(self.operations) * len(self.keys)

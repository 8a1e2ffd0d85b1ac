"""DelayedOperationPurgatory: holds delayed operations until they complete or expire.

Operations are watched under one or more keys; whoever changes the state an operation waits on
calls :meth:`~DelayedOperationPurgatory.check_and_complete` with the key that changed. Each
operation also sits in the purgatory's :class:`~purgatory.TimingWheel` until it completes or
its deadline passes; :meth:`~DelayedOperationPurgatory.advance_clock` (called by a reaper or a
simulator) expires the operations that are due.

A completed operation is removed from the watch list that completed it, but lingers in its
other keys' lists until they are checked or purged. Purging (walking every list and dropping
completed operations) runs when the number of operations completed since the last purge
exceeds ``purge_interval``: that bounds the lingering entries without paying O(keys) per
completion (Kafka's remedy for the unbounded growth of KAFKA-664).

Re-entrancy: ``on_complete``/``on_expiration`` may call ``check_and_complete`` or
``try_complete_else_watch`` on this or any other purgatory. Watch lists are compacted, and the
purge runs, only when no ``check_and_complete`` of this purgatory is in progress, so a nested
call never makes an outer walk skip an operation.

Errors: an exception raised by an operation's callbacks propagates to the caller of
``try_complete_else_watch`` / ``check_and_complete`` / ``advance_clock`` after the purgatory is
consistent again: the raising operation counts as completed, operations not tried yet stay
watched (and timed), and the metrics are exact.

Shutdown: like Kafka, :meth:`~DelayedOperationPurgatory.shutdown` does not complete pending
operations; it cancels them and returns them so their owner can answer them if it wants to.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from purgatory.delayed_operation import DelayedOperation
from purgatory.errors import (
    InvalidKeysError,
    OperationAlreadyWatchedError,
    PurgatoryError,
    PurgatoryShutdownError,
)
from purgatory.timing_wheel import TimingWheel

__all__ = ["DelayedOperationPurgatory"]

Op = TypeVar("Op", bound=DelayedOperation)

_PLAIN_KEY_TYPES = (tuple, list)
_SINGLE_KEY_TYPES = (str, bytes)  # a tuple: isinstance with it is cheaper than with str | bytes


class DelayedOperationPurgatory(Generic[Op]):
    """A named purgatory of delayed operations watched by key and expired by a timing wheel.

    ``tick`` is the timer's tick in time units, ``start`` its initial time (>= 0). ``clock()``
    gives the time used to compute an operation's deadline (``clock() + op.timeout``); by
    default it is the timer's time, i.e. the last :meth:`advance_clock`, which is what a
    simulator wants. A real-time driver passes a clock that reads its own time source.
    """

    def __init__(
        self,
        name: str,
        *,
        tick: int = 1,
        purge_interval: int = 1000,
        clock: Callable[[], int] | None = None,
        start: int = 0,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise PurgatoryError(f"name must be a non-empty str, got {name!r}")
        if type(purge_interval) is not int or purge_interval < 0:
            raise PurgatoryError(
                f"purge_interval must be a non-negative int, got {purge_interval!r}"
            )
        self.name = name
        self.purge_interval = purge_interval
        self.timer = TimingWheel(tick, start=start)
        self._clock = clock  # None: the timer's time (read directly on the hot path)
        self._watch_lists: defaultdict[Hashable, list[Op]] = defaultdict(list)
        self._watched = 0  # entries over all watch lists (PurgatorySize)
        # Operations watched since the last purge, each counted once (Kafka's estimate).
        self._estimated_watched_ops = 0
        self._check_depth = 0  # check_and_complete calls of this purgatory in progress
        self._shut_down = False

    def __repr__(self) -> str:
        return (
            f"DelayedOperationPurgatory({self.name!r}, watched={self._watched}, "
            f"num_delayed={len(self.timer)})"
        )

    # -- metrics ----------------------------------------------------------------------------

    @property
    def watched(self) -> int:
        """PurgatorySize: watch-list entries summed over all keys (completed ones included
        until they are removed)."""
        return self._watched

    @property
    def num_delayed(self) -> int:
        """NumDelayedOperations: operations waiting in the timer."""
        return len(self.timer)

    @property
    def now(self) -> int:
        """The purgatory's current time, as its clock reports it."""
        return self.timer.now if self._clock is None else self._clock()

    def next_deadline(self) -> int | None:
        """The earliest time at which :meth:`advance_clock` expires something, or None."""
        return self.timer.next_deadline()

    def watch_keys(self) -> list[Hashable]:
        """The keys that currently have a watch list."""
        return list(self._watch_lists)

    # -- operations -------------------------------------------------------------------------

    def try_complete_else_watch(self, operation: Op, keys: Sequence[Hashable]) -> bool:
        """Complete ``operation`` now if it can, else watch it under every key and time it.

        In Kafka's order: 1. try to complete; 2. add it to the watch list of every key;
        3. try again (its condition may have changed meanwhile); 4. if still not completed,
        add it to the timer with deadline ``clock() + operation.timeout``. Returns True if the
        operation completed during this call.

        Raises InvalidKeysError for empty keys, a str/bytes given as keys, or an unhashable key
        (keys are hashed only when the operation has to be watched, i.e. not after step 1);
        OperationAlreadyWatchedError if the operation was submitted before; and
        PurgatoryShutdownError after :meth:`shutdown`. Nothing is watched when it raises.
        """
        if self._shut_down:
            raise PurgatoryShutdownError(f"purgatory {self.name!r} has been shut down")
        if operation._watched:
            raise OperationAlreadyWatchedError(
                f"{operation!r} was already submitted to a purgatory; create a new operation"
            )
        if not (type(keys) in _PLAIN_KEY_TYPES and keys):  # the usual keys need no more checks
            _check_keys(keys)
        operation._watched = True
        if operation.try_complete():
            return True
        self._watch(operation, keys)
        try:
            if operation.try_complete():
                return True
        finally:  # even if the second try raised: a watched operation must also be timed
            if not operation._done:
                timer = self.timer
                # The purgatory's time (see `now`), without two Python calls in the default case.
                now = timer._now if self._clock is None else self._clock()
                timer.add(operation, now + operation.timeout)
        self._maybe_purge()
        return False

    def _watch(self, operation: Op, keys: Sequence[Hashable]) -> None:
        lists = self._watch_lists
        try:
            # The hot path when an operation has many keys. A plain loop is the fastest form on
            # CPython 3.11 (list.append is specialised); a missing key gets a new list.
            for key in keys:
                lists[key].append(operation)
        except TypeError:
            self._unwatch_prefix(operation, keys)
            operation._watched = False
            raise InvalidKeysError(
                f"every key must be hashable; got {[k for k in keys if not _hashable(k)]!r}"
            ) from None
        self._watched += len(keys)
        self._estimated_watched_ops += 1

    def _unwatch_prefix(self, operation: Op, keys: Sequence[Hashable]) -> None:
        """Undo a partial :meth:`_watch` that stopped at the first unhashable key."""
        for key in keys:
            if not _hashable(key):
                return
            watchers = self._watch_lists[key]
            if watchers and watchers[-1] is operation:
                watchers.pop()
            if not watchers:
                del self._watch_lists[key]

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete every operation watched under ``key``; return how many completed.

        Completed operations are dropped from this key's list, and the key is forgotten when
        its list empties. Operations added to the list while it is being walked (by callbacks)
        are tried too.
        """
        try:
            watchers = self._watch_lists.get(key)
        except TypeError:
            raise InvalidKeysError(f"key must be hashable, got {key!r}") from None
        if watchers is None:
            return 0
        completed = 0
        self._check_depth += 1
        try:
            position = 0
            while position < len(watchers):
                operation = watchers[position]
                position += 1
                if not operation._done and operation.try_complete():
                    completed += 1
        finally:
            self._check_depth -= 1
            if self._check_depth == 0:
                self._compact(key, watchers)
                self._maybe_purge()
        return completed

    def cancel_for_key(self, key: Hashable) -> list[Op]:
        """Forget ``key``'s watch list; cancel its pending operations without completing them.

        Cancelled operations leave the timer and never complete (their ``on_complete`` never
        runs); returns them in watch order.
        """
        try:
            watchers = self._watch_lists.pop(key, None)
        except TypeError:
            raise InvalidKeysError(f"key must be hashable, got {key!r}") from None
        if watchers is None:
            return []
        self._watched -= len(watchers)
        cancelled = []
        for operation in watchers:
            if not operation._done:
                operation._cancel_without_completing()
                cancelled.append(operation)
        return cancelled

    def advance_clock(self, now: int) -> int:
        """Advance the timer to ``now``, expiring every operation whose deadline has passed.

        Returns how many expired. May purge completed operations from the watch lists.
        """
        expired = self.timer.advance(now)
        if self._check_depth == 0:
            self._maybe_purge()
        return expired

    def purge_completed(self) -> int:
        """Drop completed operations from every watch list now; return how many entries went."""
        removed = 0
        lists = self._watch_lists
        for key in list(lists):
            watchers = lists[key]
            live = [operation for operation in watchers if not operation._done]
            if len(live) != len(watchers):
                removed += len(watchers) - len(live)
                if live:
                    # A new list, not an in-place rewrite: a check_and_complete walking the old
                    # one (purge called from a callback) must not see its positions shift.
                    lists[key] = live
                else:
                    del lists[key]
        self._watched -= removed
        self._estimated_watched_ops = self.timer._size  # len(self.timer), minus a Python call
        return removed

    def shutdown(self) -> list[Op]:
        """Stop the purgatory: cancel and return every pending operation, uncompleted.

        Afterwards the watch lists are empty, ``num_delayed`` is 0 and
        :meth:`try_complete_else_watch` raises PurgatoryShutdownError. Kafka's purgatory also
        leaves pending operations uncompleted at shutdown; the caller decides whether to answer
        them (for example by calling ``force_complete`` on each).
        """
        self._shut_down = True
        pending: dict[Op, None] = {}
        for watchers in self._watch_lists.values():
            for operation in watchers:
                if not operation._done:
                    pending[operation] = None
        for operation in pending:
            operation._cancel_without_completing()
        self._watch_lists.clear()
        self._watched = 0
        self._estimated_watched_ops = 0
        return list(pending)

    # -- internals --------------------------------------------------------------------------

    def _compact(self, key: Hashable, watchers: list[Op]) -> None:
        """Drop completed operations from ``key``'s list (if it is still that key's list)."""
        if self._watch_lists.get(key) is not watchers:
            return  # cancelled or purged away meanwhile
        live = [operation for operation in watchers if not operation._done]
        if len(live) == len(watchers):
            return
        self._watched -= len(watchers) - len(live)
        if live:
            watchers[:] = live
        else:
            del self._watch_lists[key]

    def _maybe_purge(self) -> None:
        """Purge when more than ``purge_interval`` watched operations are no longer delayed."""
        # timer._size is len(self.timer) without the __len__ call: this runs on every submission.
        if (
            self._estimated_watched_ops - self.timer._size > self.purge_interval
            and self._check_depth == 0
        ):
            self.purge_completed()


def _hashable(key: object) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _check_keys(keys: Sequence[Hashable]) -> None:
    if isinstance(keys, _SINGLE_KEY_TYPES):
        raise InvalidKeysError(
            f"keys must be a sequence of keys, not a single {type(keys).__name__}: {keys!r}"
        )
    try:
        count = len(keys)
    except TypeError:
        raise InvalidKeysError(f"keys must be a non-empty sequence, got {keys!r}") from None
    if count == 0:
        raise InvalidKeysError("keys must not be empty: an operation needs at least one key")

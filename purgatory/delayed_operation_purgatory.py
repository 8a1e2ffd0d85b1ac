"""DelayedOperationPurgatory: holds delayed operations until they complete or expire.

Operations are watched under one or more keys; whoever changes the state an operation waits on
calls :meth:`~DelayedOperationPurgatory.check_and_complete` with the key that changed. Each
operation also sits in the purgatory's :class:`~purgatory.TimingWheel` until it completes or
its deadline passes; :meth:`~DelayedOperationPurgatory.advance_clock` (called by a reaper or a
simulator) expires the operations that are due.

Watch lists: an operation with fewer than ``group_min_keys`` keys is appended to one list per
key, as in Kafka. An operation with more keys joins the *group* of operations submitted with
the same keys (:class:`~purgatory.watch_group.WatchGroup`), which is indexed under each of
them: watching costs one append whatever the number of keys, which pays when many operations
share a large key set (a follower fetching the same partitions, a produce to the same
partitions), and costs a group object when key sets never repeat. ``watched`` counts one entry
per (operation, key) either way. A group whose operations have all completed when one of its
keys is checked is *retired*, not forgotten: it stays indexed, empty, and the next operation
with the same keys revives it, so a key set that keeps coming back (a follower's fetch
session) is indexed once, not once per operation. A key's groups are tried in the order they
were made or last revived (each group records the watch count of that moment,
``WatchGroup.order``), so a revived group comes last, where a new group would go, and reviving
does not touch the index. An empty group is invisible to every method; at most
``_RETIRED_GROUPS_MAX`` are kept, the longest retired dropped first. A completed operation
leaves a key's list when that key is
checked, and a group's lists when any of its keys is checked; otherwise it lingers until a
purge. Purging (walking every list and group, dropping completed operations) runs when the
number of operations completed since the last purge exceeds ``purge_interval``: that bounds
the lingering entries without paying O(keys) per completion (Kafka's remedy for the unbounded
growth of KAFKA-664).

Re-entrancy: ``on_complete``/``on_expiration`` may call ``check_and_complete`` or
``try_complete_else_watch`` on this or any other purgatory. Watch lists are compacted, and the
purge runs, only when no ``check_and_complete`` of this purgatory is in progress, so a nested
call never makes an outer walk skip an operation.

Errors: an exception raised by an operation's callbacks propagates to the caller of
``try_complete_else_watch`` / ``check_and_complete`` / ``advance_clock`` after the purgatory is
consistent again: the raising operation counts as completed, operations not tried yet stay
watched (and timed), and the metrics are exact.

Cancelling one operation (:meth:`DelayedOperation.cancel`) is eager, unlike completion: the
operation knows its keys (or its group), so it leaves every list at once, in O(length of
those lists), and ``watched`` and ``num_delayed`` are exact right away.

Shutdown: like Kafka, :meth:`~DelayedOperationPurgatory.shutdown` does not complete pending
operations; it cancels them and returns them so their owner can answer them if it wants to.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Final, Generic, TypeVar

from mypy_extensions import mypyc_attr

from purgatory.delayed_operation import DelayedOperation, OperationState
from purgatory.errors import (
    InvalidGroupMinKeysError,
    InvalidKeysError,
    InvalidNameError,
    InvalidPurgeIntervalError,
    OperationAlreadyWatchedError,
    OperationCancelledError,
    PurgatoryShutdownError,
)
from purgatory.loop_event import current_loop_event
from purgatory.timing_wheel import TimingWheel
from purgatory.watch_group import WatchGroup

__all__ = ["DelayedOperationPurgatory"]

_PENDING: Final = OperationState.PENDING

Op = TypeVar("Op", bound=DelayedOperation)

DEFAULT_GROUP_MIN_KEYS: Final = 8
"""Operations with at least this many keys are watched as a group (see the module docstring)."""

_RETIRED_GROUPS_MAX: Final = 64
"""Emptied groups kept for reuse per purgatory (see the module docstring)."""

_PLAIN_KEY_TYPES: Final = (tuple, list)
# A tuple: isinstance with it is cheaper than with str | bytes.
_SINGLE_KEY_TYPES: Final = (str, bytes)
_UNORDERED_KEY_TYPES: Final = (set, frozenset)


@mypyc_attr(allow_interpreted_subclasses=True)  # users subclass it (compiled build)
class DelayedOperationPurgatory(Generic[Op]):
    """A named purgatory of delayed operations watched by key and expired by a timing wheel.

    ``tick`` is the timer's tick in time units (an operation expires at its deadline rounded
    up to the tick, never early: see :meth:`TimingWheel.add`), ``start`` its initial time
    (>= 0). ``clock()`` gives the time used to compute an operation's deadline (``clock() +
    op.timeout``); by default it is the timer's time, i.e. the last :meth:`advance_clock`,
    which is what a simulator wants. A real-time reaper binds a purgatory created without
    ``clock=`` to its own clock, and refuses one that reads another clock (see
    :class:`purgatory.clock.Reaper`). Operations with at least ``group_min_keys`` keys (an int
    >= 1) are watched as groups.

    Raises InvalidNameError unless ``name`` is a non-empty str, InvalidPurgeIntervalError
    unless ``purge_interval`` is an int >= 0, InvalidGroupMinKeysError unless
    ``group_min_keys`` is an int >= 1, and the timing wheel's errors for a bad ``tick``,
    ``start`` or ``clock`` (ClockNotCallableError; InvalidDeadlineError if ``clock()`` does not
    return an int).
    """

    def __init__(
        self,
        name: str,
        *,
        tick: int = 1,
        purge_interval: int = 1000,
        clock: Callable[[], int] | None = None,
        start: int = 0,
        group_min_keys: int = DEFAULT_GROUP_MIN_KEYS,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidNameError(f"name must be a non-empty str, got {name!r}")
        if type(purge_interval) is not int or purge_interval < 0:
            raise InvalidPurgeIntervalError(
                f"purge_interval must be a non-negative int, got {purge_interval!r}"
            )
        if type(group_min_keys) is not int or group_min_keys < 1:
            raise InvalidGroupMinKeysError(
                f"group_min_keys must be an int >= 1, got {group_min_keys!r}"
            )
        self.name = name
        self.purge_interval = purge_interval
        self.group_min_keys = group_min_keys
        # The timer holds the clock (None: its own time), so that a reaper can bind it.
        self.timer = TimingWheel(tick, start=start, clock=clock)
        # Operations with fewer than group_min_keys keys: one list per key.
        self._watch_lists: defaultdict[Hashable, list[Op]] = defaultdict(list)
        # The others: one group per distinct keys tuple, indexed under each of its keys.
        self._groups: dict[tuple[Hashable, ...], WatchGroup[Op]] = {}
        self._groups_by_key: dict[Hashable, dict[WatchGroup[Op], None]] = {}
        # Groups emptied by a check, kept for reuse (the oldest first); only they are empty.
        self._retired: dict[WatchGroup[Op], None] = {}
        self._watch_count = 0  # operations watched so far: their watch order
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
        clock = self.timer._clock
        return self.timer._now if clock is None else clock()

    def next_deadline(self) -> int | None:
        """The earliest time at which :meth:`advance_clock` expires something, or None."""
        return self.timer.next_deadline()

    def watch_keys(self) -> list[Hashable]:
        """The keys that currently have a watch list."""
        grouped = [key for key, groups in self._groups_by_key.items() if _any_watched(groups)]
        return list(dict.fromkeys([*self._watch_lists, *grouped]))

    def watchers(self, key: Hashable) -> list[Op]:
        """The operations listed under ``key``, in the order :meth:`check_and_complete` tries
        them: the key's own list, then its groups (each in watch order). Completed ones stay
        listed until a check, cancel or purge removes them; an operation watched with ``key``
        twice in its keys is listed twice. Raises InvalidKeysError for an unhashable key."""
        try:
            listed = list(self._watch_lists.get(key, ()))
        except TypeError:
            raise InvalidKeysError(f"key must be hashable, got {key!r}") from None
        for group in _live_since(self._groups_by_key.get(key, {}), 0):
            listed += [op for op in group.operations for _ in range(group.keys.count(key))]
        return listed

    # -- operations -------------------------------------------------------------------------

    def try_complete_else_watch(self, operation: Op, keys: Sequence[Hashable]) -> bool:
        """Complete ``operation`` now if it can, else watch it under every key and time it.

        In Kafka's order: 1. try to complete; 2. add it to the watch list of every key;
        3. try again (its condition may have changed meanwhile); 4. if still not completed,
        add it to the timer with deadline ``clock() + operation.timeout``. Returns True if the
        operation completed during this call.

        Raises InvalidKeysError for empty keys, a str/bytes or a set given as keys, or an
        unhashable key (keys are hashed only when the operation has to be watched, i.e. not
        after step 1); OperationAlreadyWatchedError if the operation was submitted before (or
        completed or cancelled before its submission); and PurgatoryShutdownError after
        :meth:`shutdown`; an exception a key's ``__hash__`` raises propagates. Nothing is
        watched when it raises, and after an error about the keys the operation may be
        submitted again.
        """
        if self._shut_down:
            raise PurgatoryShutdownError(f"purgatory {self.name!r} has been shut down")
        if operation._purgatory is not None or operation._state is not _PENDING:
            raise _resubmission_error(operation)
        if not (type(keys) in _PLAIN_KEY_TYPES and keys):  # the usual keys need no more checks
            _check_keys(keys)
        operation._purgatory = self
        if operation.try_complete():
            return True
        if len(keys) < self.group_min_keys:
            self._watch(operation, keys)
        else:
            self._watch_as_group(operation, keys)
        operation._watch_order = self._watch_count
        self._watch_count += 1
        self._watched += len(keys)
        self._estimated_watched_ops += 1
        try:
            if operation.try_complete():
                return True
        finally:  # even if the second try raised: a watched operation must also be timed
            if operation._state is _PENDING:
                timer = self.timer
                # The purgatory's time (see `now`), without two Python calls in the default case.
                clock = timer._clock
                now = timer._now if clock is None else clock()
                timer.add(operation, now + operation.timeout)
        self._maybe_purge()
        return False

    async def wait(self, operation: Op, keys: Sequence[Hashable]) -> bool:
        """Submit ``operation`` (as :meth:`try_complete_else_watch`) and wait until it is done;
        return True if it expired, False if it completed otherwise (satisfied or forced).

        For trio or asyncio (whichever runs the calling task); something must expire the
        operation in time, normally a reaper (:mod:`purgatory.trio_reaper`,
        :mod:`purgatory.asyncio_reaper`). Returns without suspending if the operation completes
        at submission. Its callbacks have run when this returns. Cancelling the waiting task
        cancels the operation (:meth:`DelayedOperation.cancel`) if it is still pending. Raises
        OperationCancelledError if someone else cancels it (its ``cancel()``,
        :meth:`cancel_for_key`, :meth:`shutdown`), RuntimeError outside trio and asyncio, and
        whatever :meth:`try_complete_else_watch` raises.
        """
        done = current_loop_event()
        if not self.try_complete_else_watch(operation, keys) and operation._state is _PENDING:
            operation._waiter = done.set
            try:
                await done.wait()
            except BaseException:  # the waiting task was cancelled (or worse)
                operation.cancel()
                raise
        if operation._state is OperationState.CANCELLED:
            raise OperationCancelledError(
                f"{operation!r} was cancelled while awaited in purgatory {self.name!r}"
            )
        return operation._state is OperationState.EXPIRED

    def _watch(self, operation: Op, keys: Sequence[Hashable]) -> None:
        lists = self._watch_lists
        try:
            # A plain loop is the fastest form on CPython 3.11 (list.append is specialised); a
            # missing key gets a new list.
            for key in keys:
                lists[key].append(operation)
        except BaseException as error:  # a key could not be hashed (or its __hash__ raised)
            self._unwatch_prefix(operation, keys)
            operation._purgatory = None
            if isinstance(error, TypeError):
                raise _unhashable_keys_error(keys) from None
            raise
        # A copy: the caller may reuse its list, and cancel() must find every entry.
        operation._watched_under = keys if type(keys) is tuple else tuple(keys)

    def _unwatch_prefix(self, operation: Op, keys: Sequence[Hashable]) -> None:
        """Undo a partial :meth:`_watch` that stopped at the first key it could not hash."""
        for key in keys:
            if not _hashable(key):
                return
            watchers = self._watch_lists[key]
            if watchers and watchers[-1] is operation:
                watchers.pop()
            if not watchers:
                del self._watch_lists[key]

    def _watch_as_group(self, operation: Op, keys: Sequence[Hashable]) -> None:
        group_keys = keys if type(keys) is tuple else tuple(keys)
        try:
            group = self._groups.get(group_keys)  # hashes every key: nothing changes if one fails
        except BaseException as error:
            operation._purgatory = None
            if isinstance(error, TypeError):
                raise _unhashable_keys_error(keys) from None
            raise
        if group is None:
            group = self._add_group(group_keys)
        elif not group.operations:
            del self._retired[group]  # revived: tried after the groups made or revived so far
            group.order = self._watch_count
        group.operations.append(operation)
        operation._watched_under = group

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete every operation watched under ``key``; return how many completed.

        Operations are tried in :meth:`watchers` order, each with its
        :meth:`~DelayedOperation.try_complete_for_key` (``key``). Completed ones are then
        dropped from ``key``'s list and from every list of the groups walked, and a key is
        forgotten when its last operation goes. Operations added under ``key`` while the lists
        are walked (by callbacks) are tried too.
        """
        try:
            watchers = self._watch_lists.get(key)
            groups = self._groups_by_key.get(key) if self._groups_by_key else None
        except TypeError:
            raise InvalidKeysError(f"key must be hashable, got {key!r}") from None
        if watchers is None and (groups is None or not _any_watched(groups)):
            return 0
        completed = 0
        walked: list[WatchGroup[Op]] = []
        self._check_depth += 1
        try:
            if watchers is not None:
                completed += _try_each(watchers, key)
            if groups is not None:
                # Then the groups made or revived by callbacks meanwhile (a retired group is
                # skipped until revived): a walked group is never revived during the walk.
                since = 0
                while fresh := _live_since(groups, since):
                    since = self._watch_count
                    for group in fresh:
                        walked.append(group)
                        completed += _try_each(group.operations, key)
        finally:
            self._check_depth -= 1
            if self._check_depth == 0:
                if watchers is not None:
                    self._compact(key, watchers)
                for group in walked:
                    self._compact_group(group)
                self._maybe_purge()
        return completed

    def cancel_for_key(self, key: Hashable) -> list[Op]:
        """Forget ``key``'s watch list; cancel its pending operations without completing them.

        Cancelled operations leave the timer and never complete (their ``on_complete`` never
        runs); returns them in the order they were watched. The groups holding ``key`` are
        forgotten too, under all of their keys.
        """
        try:
            watchers = self._watch_lists.pop(key, None)
            groups = self._groups_by_key.get(key)
        except TypeError:
            raise InvalidKeysError(f"key must be hashable, got {key!r}") from None
        cancelled = []
        if watchers is not None:
            self._watched -= len(watchers)
            cancelled += watchers
        if groups is not None:
            for group in _live_since(groups, 0):
                cancelled += group.operations
            for group in list(groups):
                self._watched -= group.entries()
                self._drop_group(group)
        pending = _pending(dict.fromkeys(cancelled))
        for operation in pending:
            operation._cancel_without_completing()
        pending.sort(key=_by_watch_order)
        return pending

    def _cancel(self, operation: DelayedOperation, /) -> None:
        """Cancel pending ``operation`` (:meth:`DelayedOperation.cancel`): out of the timer and
        of every watch list, with exact metrics.

        A pending operation is in the list of each of its keys (or in its group): only
        cancelling it (this, ``cancel_for_key``, ``shutdown``) takes it out. The lists are
        replaced, not edited in place, so that a ``check_and_complete`` walking one (the
        cancel came from a callback) does not see its positions shift.
        """
        operation._cancel_without_completing()
        # Unset when it was cancelled during its first try_complete, before it was watched.
        under = getattr(operation, "_watched_under", None)
        if isinstance(under, WatchGroup):
            live = [op for op in under.operations if op is not operation]
            self._watched -= len(under.keys)
            if live:
                under.operations = live
            else:
                self._drop_group(under)
        elif isinstance(under, tuple):
            self._unwatch(operation, under)
        else:  # never watched
            return
        self._estimated_watched_ops -= 1  # it will not linger in any list

    def _unwatch(self, operation: DelayedOperation, keys: tuple[Hashable, ...]) -> None:
        """Take ``operation`` out of the list of each of ``keys`` (see :meth:`_cancel`)."""
        lists = self._watch_lists
        for key in dict.fromkeys(keys):
            watchers = lists[key]
            live = [op for op in watchers if op is not operation]
            self._watched -= len(watchers) - len(live)
            if live:
                lists[key] = live
            else:
                del lists[key]

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
            live = _pending(watchers)
            if len(live) != len(watchers):
                removed += len(watchers) - len(live)
                if live:
                    # A new list, not an in-place rewrite: a check_and_complete walking the old
                    # one (purge called from a callback) must not see its positions shift.
                    lists[key] = live
                else:
                    del lists[key]
        for group in list(self._groups.values()):
            watchers = group.operations
            live = _pending(watchers)
            if len(live) != len(watchers):
                removed += (len(watchers) - len(live)) * len(group.keys)
                if live:
                    group.operations = live  # a new list, as above
                else:
                    self._drop_group(group)
        self._watched -= removed
        self._estimated_watched_ops = self.timer._size  # len(self.timer), minus a Python call
        return removed

    def shutdown(self) -> list[Op]:
        """Stop the purgatory: cancel and return every pending operation, uncompleted.

        The operations come back in the order they were watched. Afterwards the watch lists
        are empty, ``num_delayed`` is 0 and :meth:`try_complete_else_watch` raises
        PurgatoryShutdownError. Kafka's purgatory also leaves pending operations uncompleted at
        shutdown; the caller decides whether to answer them (for example by calling
        ``force_complete`` on each).
        """
        self._shut_down = True
        watched = [op for watchers in self._watch_lists.values() for op in watchers]
        watched += [op for group in self._groups.values() for op in group.operations]
        pending = _pending(dict.fromkeys(watched))
        pending.sort(key=_by_watch_order)
        for operation in pending:
            operation._cancel_without_completing()
        for group in self._groups.values():
            group.dropped = True
            group.operations = []  # see _drop_group
        self._watch_lists.clear()
        self._groups.clear()
        self._groups_by_key.clear()
        self._retired.clear()
        self._watched = 0
        self._estimated_watched_ops = 0
        return pending

    # -- internals --------------------------------------------------------------------------

    def _compact(self, key: Hashable, watchers: list[Op]) -> None:
        """Drop completed operations from ``key``'s list (if it is still that key's list)."""
        if self._watch_lists.get(key) is not watchers:
            return  # cancelled or purged away meanwhile
        removed = _drop_done(watchers)
        if removed:
            self._watched -= removed
            if not watchers:
                del self._watch_lists[key]

    def _add_group(self, keys: tuple[Hashable, ...]) -> WatchGroup[Op]:
        group: WatchGroup[Op] = WatchGroup(keys, self._watch_count)
        self._groups[keys] = group
        by_key = self._groups_by_key
        for key in group.unique_keys:
            groups = by_key.get(key)
            if groups is None:
                by_key[key] = {group: None}
            else:
                groups[group] = None
        return group

    def _drop_group(self, group: WatchGroup[Op]) -> None:
        """Forget ``group`` (its entries must already be subtracted from ``_watched``).

        Its list of operations is replaced, not cleared: the operations left in it point back
        at the group, a cycle only a garbage collection would free, and a check walking the
        old list walks it to its end."""
        group.dropped = True
        group.operations = []
        self._retired.pop(group, None)
        del self._groups[group.keys]
        by_key = self._groups_by_key
        for key in group.unique_keys:
            groups = by_key[key]
            del groups[group]
            if not groups:
                del by_key[key]

    def _compact_group(self, group: WatchGroup[Op]) -> None:
        """Drop completed operations from ``group`` (unless it was dropped meanwhile); retire
        it if none is left."""
        if group.dropped:
            return
        removed = _drop_done(group.operations)
        if removed:
            self._watched -= removed * len(group.keys)
            if not group.operations:
                self._retire(group)

    def _retire(self, group: WatchGroup[Op]) -> None:
        """Keep emptied ``group`` (its list emptied in place) for the next operation with its
        keys (see the module docstring); drop the longest retired group beyond
        ``_RETIRED_GROUPS_MAX``."""
        retired = self._retired
        retired[group] = None
        if len(retired) > _RETIRED_GROUPS_MAX:
            self._drop_group(next(iter(retired)))

    def _maybe_purge(self) -> None:
        """Purge when more than ``purge_interval`` watched operations are no longer delayed."""
        # timer._size is len(self.timer) without the __len__ call: this runs on every submission.
        if (
            self._estimated_watched_ops - self.timer._size > self.purge_interval
            and self._check_depth == 0
        ):
            self.purge_completed()


def _try_each(watchers: list[Op], key: Hashable) -> int:
    """Try every operation of ``watchers`` not done yet for a change of ``key``, including
    ones appended meanwhile; return how many completed."""
    completed = 0
    position = 0
    while position < len(watchers):
        operation = watchers[position]
        position += 1
        if operation._state is _PENDING and operation.try_complete_for_key(key):
            completed += 1
    return completed


def _any_watched(groups: Iterable[WatchGroup[Op]]) -> bool:
    """Whether any of ``groups`` holds an operation (is not retired)."""
    return any(group.operations for group in groups)  # a loop in the compiled build


def _live_since(groups: Iterable[WatchGroup[Op]], since: int) -> list[WatchGroup[Op]]:
    """The groups of ``groups`` holding operations, made or revived at watch count ``since``
    or later, in the order they were (see the module docstring)."""
    live = [group for group in groups if group.operations and group.order >= since]
    if len(live) > 1:
        live.sort(key=_by_order)
    return live


def _by_order(group: WatchGroup[Op]) -> int:
    return group.order


def _drop_done(watchers: list[Op]) -> int:
    """Drop the operations no longer pending from ``watchers``, in place and in order (no
    check may be walking it); return how many went. Allocates nothing when none went."""
    kept = 0
    for operation in watchers:
        if operation._state is _PENDING:
            watchers[kept] = operation
            kept += 1
    removed = len(watchers) - kept
    if removed:
        del watchers[kept:]
    return removed


def _pending(operations: Iterable[Op]) -> list[Op]:
    """The operations not completed (nor cancelled) yet, in order."""
    return [operation for operation in operations if operation._state is _PENDING]


def _resubmission_error(operation: DelayedOperation) -> OperationAlreadyWatchedError:
    if operation._purgatory is not None:
        done = "was already submitted to a purgatory"
    elif operation._state is OperationState.CANCELLED:
        done = "was cancelled before it was submitted"
    else:
        done = "was completed before it was submitted"
    return OperationAlreadyWatchedError(
        f"{operation!r} {done}; an operation is submitted once: create a new one"
    )


def _unhashable_keys_error(keys: Sequence[Hashable]) -> InvalidKeysError:
    return InvalidKeysError(
        f"every key must be hashable; got {[k for k in keys if not _hashable(k)]!r}"
    )


def _by_watch_order(operation: DelayedOperation) -> int:
    return operation._watch_order


def _hashable(key: object) -> bool:
    """False for a key ``hash`` refuses (TypeError) or whose ``__hash__`` raises."""
    try:
        hash(key)
    except Exception:
        return False
    return True


def _check_keys(keys: Sequence[Hashable]) -> None:
    if isinstance(keys, _SINGLE_KEY_TYPES):
        raise InvalidKeysError(
            f"keys must be a sequence of keys, not a single {type(keys).__name__}: {keys!r}"
        )
    if isinstance(keys, _UNORDERED_KEY_TYPES):
        raise InvalidKeysError(
            f"keys must be ordered, but a {type(keys).__name__} iterates in an arbitrary order "
            "(for str keys it changes from run to run), which would make the watch order and "
            f"the watch groups unpredictable; pass a list or a tuple (sorted, say): {keys!r}"
        )
    try:
        count = len(keys)
    except TypeError:
        raise InvalidKeysError(f"keys must be a non-empty sequence, got {keys!r}") from None
    if count == 0:
        raise InvalidKeysError("keys must not be empty: an operation needs at least one key")

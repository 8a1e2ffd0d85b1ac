"""DelayedOperation: an operation that completes when a condition holds or its timeout passes.

The completion protocol (as in Kafka's ``DelayedOperation``):

* :meth:`~DelayedOperation.try_complete` checks the condition and, when it holds, calls
  :meth:`~DelayedOperation.force_complete`; otherwise it returns False and changes nothing.
* :meth:`~DelayedOperation.force_complete` completes the operation **exactly once**: the first
  caller wins, cancels the timer entry and runs :meth:`~DelayedOperation.on_complete`; every
  later call returns False.
* Expiry (the timer firing) is "if force_complete() succeeds, run on_expiration()", so
  ``on_complete`` always runs before ``on_expiration`` and never twice. :attr:`is_expired` is
  already True while ``on_complete`` runs for an expiry, so ``on_complete`` can tell the two
  cases apart.

Which key changed: :meth:`~purgatory.DelayedOperationPurgatory.check_and_complete` names the
key whose state changed, and tries each operation watched under it with
:meth:`~DelayedOperation.try_complete_for_key`. By default that is ``try_complete()``: the
whole condition is checked again. An operation watched under many keys whose condition is a
sum or a conjunction over its keys can override it to re-examine only that key's part and
keep the rest from earlier checks, so that a check costs O(1) rather than O(keys). The
contract: it completes exactly when ``try_complete()`` would, provided every change to the
state the operation waits on is followed by a check of the key it changed (the purgatory's
rule anyway). The first tries, at submission, are always ``try_complete()``.

An operation's lifecycle is an :class:`OperationState`: it is PENDING until exactly one of
three transitions, which are final: to COMPLETED (satisfied or forced), to EXPIRED (its timer
fired) or to CANCELLED (:meth:`~DelayedOperation.cancel`); :data:`TRANSITIONS` is the table.
Completion and expiry of one operation are serialised by construction: everything runs on one
thread, and the state changes before any callback runs, so a callback that re-enters the
purgatory sees the operation as done.

An operation class is checked when its first operation is created (once per class), before any
purgatory sees it: it must implement ``try_complete`` and ``on_complete`` (an intermediate base
class that is never instantiated need not), and must not compare by value. The purgatory and
its timer keep operations in dicts and sets, by identity; a class that defines ``__eq__`` (as
attrs classes do unless ``eq=False``) would be unhashable, or would make two equal operations
one.

Cancellation is the other way out: :meth:`~DelayedOperation.cancel` drops a pending operation
without completing it (no callback runs) and takes it out of its purgatory's timer and every
watch list at once. An operation is a :class:`~purgatory.TimerTask` only for the wheel's sake:
it overrides ``cancel``, and leaves the timer alone (on completion, or inside ``cancel``)
through ``TimerTask.cancel`` itself, which nothing else calls on an operation.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Mapping
from typing import Final, Protocol

from mypy_extensions import mypyc_attr

from purgatory.errors import InvalidOperationTypeError, InvalidTimeoutError
from purgatory.timing_wheel import TimerTask

__all__ = ["TRANSITIONS", "DelayedOperation", "OperationState"]


class OperationState(enum.Enum):
    """Where a delayed operation is in its lifecycle (see the module docstring)."""

    PENDING = "pending"
    COMPLETED = "completed"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


TRANSITIONS: Mapping[OperationState, frozenset[OperationState]] = {
    OperationState.PENDING: frozenset(
        {OperationState.COMPLETED, OperationState.EXPIRED, OperationState.CANCELLED}
    ),
    OperationState.COMPLETED: frozenset(),
    OperationState.EXPIRED: frozenset(),
    OperationState.CANCELLED: frozenset(),
}
"""The states each state may move to: out of PENDING once, then never again. The methods below
make exactly these moves (``tests/purgatory/test_delayed_operation.py`` checks them)."""

# Final: the compiled build reads them from C statics, not from the module's dict.
_PENDING: Final = OperationState.PENDING
_COMPLETED: Final = OperationState.COMPLETED
_EXPIRED: Final = OperationState.EXPIRED
_CANCELLED: Final = OperationState.CANCELLED

# The operation classes _check_type() accepted, each checked once (see the module docstring).
# A set, not a flag on each class: compiled, a class-body flag would be a per-instance field.
_checked_types: set[type[DelayedOperation]] = set()


class _Purgatory(Protocol):
    """What an operation needs of the purgatory holding it (a DelayedOperationPurgatory)."""

    def _cancel(self, operation: DelayedOperation, /) -> None: ...


@mypyc_attr(allow_interpreted_subclasses=True)  # users subclass it (compiled build)
class DelayedOperation(TimerTask):
    """Base class of the operations a :class:`~purgatory.DelayedOperationPurgatory` holds.

    Subclasses implement :meth:`try_complete` and :meth:`on_complete`, and may override
    :meth:`on_expiration`. ``timeout`` is in the purgatory's time units (>= 0); the deadline is
    fixed when the purgatory starts watching the operation.
    """

    __slots__ = (
        "_purgatory",
        "_state",
        "_waiter",
        "_watch_order",
        "_watched_under",
        "timeout",
    )

    # Set by the purgatory when it watches the operation: its watch order, and where it
    # watches it (its keys, a tuple, or its WatchGroup; unset before, see cancel()).
    _watch_order: int
    _watched_under: object

    def __init__(self, timeout: int) -> None:
        if type(self) not in _checked_types:
            _check_type(type(self))
        # TimerTask's fields, set here rather than by super().__init__(): every request creates
        # an operation, and the extra call is a visible share of a purgatory's cost.
        self.deadline = 0
        self._slot = None
        if type(timeout) is not int or timeout < 0:
            raise InvalidTimeoutError(
                f"timeout must be a non-negative int (time units), got {timeout!r}"
            )
        self.timeout = timeout
        self._state = _PENDING
        self._purgatory: _Purgatory | None = None  # where it was submitted (only once)
        # Called once when the operation is done (completed or cancelled), before on_complete:
        # the wake-up of DelayedOperationPurgatory.wait, which only schedules the waiter.
        self._waiter: Callable[[], object] | None = None

    # -- the subclass's part ----------------------------------------------------------------

    def try_complete(self) -> bool:
        """Check whether the operation can complete; if so ``return self.force_complete()``.

        Must return False without side effects when the condition does not hold yet.
        """
        raise NotImplementedError

    def try_complete_for_key(self, key: Hashable) -> bool:
        """Like :meth:`try_complete`, knowing that only the state watched under ``key`` changed
        since the last try (see the module docstring); the purgatory's
        ``check_and_complete(key)`` calls it. By default, ``return self.try_complete()``.
        """
        return self.try_complete()

    def on_complete(self) -> None:
        """The operation's completion logic; runs exactly once (satisfied, forced or expired)."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Runs after :meth:`on_complete` when the operation completed because it expired."""

    # -- the protocol -----------------------------------------------------------------------

    def force_complete(self) -> bool:
        """Complete now unless already completed. Returns True only for the call that completed.

        Cancels the timer entry before running :meth:`on_complete`. If ``on_complete`` raises,
        the operation still counts as completed and the error propagates.
        """
        if self._state is not _PENDING:
            return False
        self._state = _COMPLETED
        self._finish()
        return True

    def _finish(self) -> None:
        """The completion that follows the move out of PENDING: leave the timer, wake a
        waiter, run on_complete."""
        if self._slot is not None:  # not when it expired: the wheel took it out already
            TimerTask.cancel(self)  # the timer entry only (a direct call, compiled)
        if self._waiter is not None:
            self._waiter()
        self.on_complete()

    def cancel(self) -> bool:
        """Drop the operation without completing it: no callback runs, ever.

        A watched operation leaves its purgatory's timer and every watch list (its keys' lists
        or its watch group) at once, and the purgatory's ``watched`` and ``num_delayed`` drop
        accordingly. Returns True if this call cancelled the operation, False if it had already
        completed or been cancelled. An operation cancelled before it was submitted cannot be
        submitted. Safe to call from any callback.
        """
        if self._state is not _PENDING:
            return False
        purgatory = self._purgatory
        if purgatory is None:
            self._cancel_without_completing()
        else:
            purgatory._cancel(self)
        return True

    def run(self) -> None:
        """Timer expiry: complete as EXPIRED (unless done already), then run
        :meth:`on_expiration`."""
        if self._state is not _PENDING:
            return
        self._state = _EXPIRED
        self._finish()
        self.on_expiration()

    @property
    def state(self) -> OperationState:
        """Where the operation is in its lifecycle."""
        return self._state

    @property
    def is_completed(self) -> bool:
        """True once the operation has completed, by satisfaction, forcing or expiry."""
        return self._state is _COMPLETED or self._state is _EXPIRED

    @property
    def is_expired(self) -> bool:
        """True if the operation completed because its timeout passed (already while its
        ``on_complete`` runs)."""
        return self._state is _EXPIRED

    @property
    def is_cancelled(self) -> bool:
        """True if the purgatory dropped the operation without completing it."""
        return self._state is _CANCELLED

    def _cancel_without_completing(self) -> None:
        """Mark the operation cancelled and take it out of the timer (its watch lists are the
        purgatory's business): no completion will ever run."""
        self._state = _CANCELLED
        TimerTask.cancel(self)
        if self._waiter is not None:
            self._waiter()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} timeout={self.timeout} {self._state.value}>"


def _check_type(cls: type[DelayedOperation]) -> None:
    """Refuse an operation class that misses a method or compares by value (see the module
    docstring)."""
    missing = [
        f"{name}()"
        for name in ("try_complete", "on_complete")
        if getattr(cls, name) is getattr(DelayedOperation, name)
    ]
    if missing:
        raise InvalidOperationTypeError(
            f"{cls.__qualname__} does not override {' nor '.join(missing)}: a DelayedOperation "
            "subclass must implement try_complete() and on_complete()"
        )
    if cls.__eq__ is not object.__eq__ or cls.__hash__ is None:
        unhashable = "is unhashable and " if cls.__hash__ is None else ""
        raise InvalidOperationTypeError(
            f"{cls.__qualname__} {unhashable}compares operations by value (it defines "
            "__eq__), but a purgatory and its timer keep operations in dicts and sets by "
            "identity. Declare it with @attrs.define(eq=False) (or @attrs.frozen(eq=False)) "
            "if it is an attrs class; otherwise remove __eq__ and __hash__"
        )
    _checked_types.add(cls)

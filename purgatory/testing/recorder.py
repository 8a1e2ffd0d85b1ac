"""Recording the callbacks of any DelayedOperation type, and checking their local contract."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar, cast

from purgatory.delayed_operation import DelayedOperation

__all__ = [
    "ON_COMPLETE",
    "ON_COMPLETE_EXPIRED",
    "ON_EXPIRATION",
    "CallbackRecorder",
    "LifecycleViolation",
]

Op = TypeVar("Op", bound=DelayedOperation)

ON_COMPLETE = "on_complete"
ON_COMPLETE_EXPIRED = "on_complete(expired)"  # on_complete ran while is_expired was True
ON_EXPIRATION = "on_expiration"


class LifecycleViolation(AssertionError):
    """An operation or a purgatory broke the delayed-operation protocol."""


class CallbackRecorder:
    """Records the completion callbacks of the operations it instruments, in order.

    :meth:`instrument` switches an operation to a subclass of its own type (one per type, with
    no extra slots, so any type whose instances allow ``__class__`` assignment works) whose
    ``try_complete``, ``try_complete_for_key``, ``on_complete`` and ``on_expiration`` record
    the call, check the protocol, and then run the original method. The protocol checks raise
    :class:`LifecycleViolation` on the spot:

    * ``on_complete`` runs at most once;
    * ``on_expiration`` runs only right after an ``on_complete`` that saw ``is_expired``;
    * ``try_complete`` and ``try_complete_for_key`` return True exactly when that call
      completed the operation (i.e. it returned ``self.force_complete()``).

    ``describe(op)``, if given, says more about an operation than its repr (the lifecycle
    machine gives its history); it is appended to every violation message.
    """

    def __init__(self, describe: Callable[[DelayedOperation], str] | None = None) -> None:
        self.describe = describe
        self.callbacks: dict[DelayedOperation, list[str]] = {}
        #: Every operation whose on_complete ran, in the order it ran.
        self.completions: list[DelayedOperation] = []
        self._types: dict[type[DelayedOperation], type[DelayedOperation]] = {}

    def instrument(self, operation: Op) -> list[str]:
        """Start recording ``operation``'s callbacks; return its (live) list of callbacks.

        Raises LifecycleViolation for an operation already recorded (a factory must return a
        new operation each time) or one that has already completed.
        """
        if operation in self.callbacks:
            raise LifecycleViolation(
                f"{operation!r} was returned twice: make_operation must create a new operation"
            )
        if operation.is_completed or operation.is_cancelled or operation.scheduled:
            raise LifecycleViolation(f"make_operation returned a used operation: {operation!r}")
        cls = type(operation)
        instrumented = self._types.get(cls)
        if instrumented is None:
            instrumented = self._types[cls] = self._subclass(cls)
        try:
            operation.__class__ = cast("type[Op]", instrumented)
        except TypeError as error:
            raise TypeError(
                f"cannot record the callbacks of {cls.__qualname__}: its instances do not allow "
                f"__class__ assignment to a subclass ({error})"
            ) from None
        log: list[str] = []
        self.callbacks[operation] = log
        return log

    def _violation(self, op: DelayedOperation, message: str) -> LifecycleViolation:
        details = f"\n{self.describe(op)}" if self.describe is not None else ""
        return LifecycleViolation(f"{op!r}: {message}{details}")

    def _subclass(self, cls: type[DelayedOperation]) -> type[DelayedOperation]:
        recorder = self
        base_try_complete = cls.try_complete
        base_try_complete_for_key = cls.try_complete_for_key
        base_on_complete = cls.on_complete
        base_on_expiration = cls.on_expiration

        def check_try(op: DelayedOperation, name: str, result: bool, done_before: bool) -> bool:
            if result and (done_before or not op.is_completed):
                raise recorder._violation(
                    op,
                    f"{name}() returned True but did not complete the operation; "
                    "it must `return self.force_complete()` when the condition holds",
                )
            if not result and not done_before and op.is_completed:
                raise recorder._violation(
                    op, f"{name}() completed the operation but returned False"
                )
            return result

        def try_complete(op: DelayedOperation) -> bool:
            done_before = op.is_completed or op.is_cancelled
            return check_try(op, "try_complete", base_try_complete(op), done_before)

        def try_complete_for_key(op: DelayedOperation, key: Hashable) -> bool:
            done_before = op.is_completed or op.is_cancelled
            result = base_try_complete_for_key(op, key)
            return check_try(op, "try_complete_for_key", result, done_before)

        def on_complete(op: DelayedOperation) -> None:
            log = recorder.callbacks[op]
            log.append(ON_COMPLETE_EXPIRED if op.is_expired else ON_COMPLETE)
            recorder.completions.append(op)
            runs = sum(call != ON_EXPIRATION for call in log)
            if runs > 1:
                raise recorder._violation(
                    op, f"on_complete ran {runs} times ({log}); it must run exactly once"
                )
            base_on_complete(op)

        def on_expiration(op: DelayedOperation) -> None:
            log = recorder.callbacks[op]
            log.append(ON_EXPIRATION)
            if log != [ON_COMPLETE_EXPIRED, ON_EXPIRATION]:
                raise recorder._violation(
                    op,
                    "on_expiration must run once, right after on_complete of an expired "
                    f"operation; callbacks so far: {log}",
                )
            base_on_expiration(op)

        namespace: dict[str, Callable[..., Any] | str | tuple[()]] = {
            "__slots__": (),
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "try_complete": try_complete,
            "try_complete_for_key": try_complete_for_key,
            "on_complete": on_complete,
            "on_expiration": on_expiration,
        }
        return cast("type[DelayedOperation]", type(cls.__name__, (cls,), namespace))

"""ConditionOperation: the simplest useful delayed operation, for tests and examples."""

from __future__ import annotations

from collections.abc import Callable

from purgatory.delayed_operation import DelayedOperation

__all__ = ["ConditionOperation"]


class ConditionOperation(DelayedOperation):
    """A delayed operation whose condition is a flag: it can complete once ``satisfied`` is True.

    Every callback the purgatory runs is appended to :attr:`calls` (``"try_complete"``,
    ``"on_complete"``, ``"on_expiration"``), so a test can assert the order of the protocol.
    ``on_complete_callback(op)``, if given, runs inside :meth:`on_complete`, after the call is
    recorded: use it to re-enter a purgatory from a completion, or to raise from one.
    :meth:`try_complete` has no side effect besides the recording.
    """

    __slots__ = ("calls", "on_complete_callback", "satisfied")

    def __init__(
        self,
        timeout: int,
        *,
        satisfied: bool = False,
        on_complete_callback: Callable[[ConditionOperation], object] | None = None,
    ) -> None:
        super().__init__(timeout)
        self.satisfied = satisfied
        self.on_complete_callback = on_complete_callback
        self.calls: list[str] = []

    def try_complete(self) -> bool:
        self.calls.append("try_complete")
        if self.satisfied:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.calls.append("on_complete")
        if self.on_complete_callback is not None:
            self.on_complete_callback(self)

    def on_expiration(self) -> None:
        self.calls.append("on_expiration")

"""purgatory.testing: property-test the lifecycle of your own delayed operations.

Needs ``hypothesis`` (the ``test`` extra: ``pip install 'kafka-purgatory[test]'``); the rest of
the ``purgatory`` package never imports it, nor does this package import pytest.

* :class:`PurgatoryLifecycleMachine` -- a hypothesis ``RuleBasedStateMachine`` that drives a
  purgatory with random submissions, satisfactions, checks, clock advances, forced
  completions, cancellations, purges and a shutdown, and checks every lifecycle invariant
  (exactly-once completion, expiry vs. satisfaction, metrics, ordering) for your operation
  type. Subclass it and override ``make_operation(timeout, keys)`` and ``satisfy(op)``.
* :class:`ConditionOperation` -- an operation whose condition is a flag, recording its calls.
* :class:`CallbackRecorder` / :class:`LifecycleViolation` -- the protocol checks the machine
  applies to every callback.
"""

try:
    import hypothesis  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "purgatory.testing needs hypothesis; install it with `pip install "
        "'kafka-purgatory[test]'` (or `pip install hypothesis`)"
    ) from error

from purgatory.testing.condition_operation import ConditionOperation
from purgatory.testing.lifecycle_machine import (
    Lifecycle,
    OperationRecord,
    PurgatoryLifecycleMachine,
)
from purgatory.testing.recorder import CallbackRecorder, LifecycleViolation

__all__ = [
    "CallbackRecorder",
    "ConditionOperation",
    "Lifecycle",
    "LifecycleViolation",
    "OperationRecord",
    "PurgatoryLifecycleMachine",
]

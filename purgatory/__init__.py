"""purgatory: a hierarchical timing wheel and a generic delayed-operation purgatory.

Knows nothing about Kafka: use it for any keyed wait (long polls, acks, leases, visibility
timeouts). Everything here is synchronous and single-threaded (but for the awaitable
:meth:`DelayedOperationPurgatory.wait`, for trio or asyncio); time is an integer passed in.
Real-time drivers live in :mod:`purgatory.trio_reaper` and :mod:`purgatory.asyncio_reaper`.
"""

from purgatory.delayed_operation import DelayedOperation, OperationState
from purgatory.delayed_operation_purgatory import DelayedOperationPurgatory
from purgatory.errors import (
    AlreadyScheduledError,
    ClockNotCallableError,
    ClockWentBackwardsError,
    InvalidDeadlineError,
    InvalidDelayError,
    InvalidGroupMinKeysError,
    InvalidKeysError,
    InvalidNameError,
    InvalidOperationTypeError,
    InvalidPurgeIntervalError,
    InvalidStartError,
    InvalidTickError,
    InvalidTimeoutError,
    OperationAlreadyWatchedError,
    OperationCancelledError,
    PurgatoryError,
    PurgatoryShutdownError,
    ReentrantAdvanceError,
)
from purgatory.manual_clock import ManualClock
from purgatory.timing_wheel import TimerTask, TimingWheel

__all__ = [
    "AlreadyScheduledError",
    "ClockNotCallableError",
    "ClockWentBackwardsError",
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "InvalidDeadlineError",
    "InvalidDelayError",
    "InvalidGroupMinKeysError",
    "InvalidKeysError",
    "InvalidNameError",
    "InvalidOperationTypeError",
    "InvalidPurgeIntervalError",
    "InvalidStartError",
    "InvalidTickError",
    "InvalidTimeoutError",
    "ManualClock",
    "OperationAlreadyWatchedError",
    "OperationCancelledError",
    "OperationState",
    "PurgatoryError",
    "PurgatoryShutdownError",
    "ReentrantAdvanceError",
    "TimerTask",
    "TimingWheel",
]

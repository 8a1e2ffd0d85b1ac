"""Exceptions raised for bad arguments to the purgatory library.

Every exception is a :class:`PurgatoryError` and also derives from the built-in exception a
caller would expect (``ValueError``, ``TypeError`` or ``RuntimeError``), so both
``except PurgatoryError`` and ``except ValueError`` work. Messages say what was wrong and what
is allowed.
"""


class PurgatoryError(Exception):
    """Base class of every exception the purgatory library raises on purpose."""


class InvalidTickError(PurgatoryError, ValueError):
    """A timing wheel was given a tick size that is not a positive integer."""


class InvalidStartError(PurgatoryError, ValueError):
    """A timing wheel was given a negative start time."""


class InvalidDeadlineError(PurgatoryError, TypeError):
    """A deadline or time value is not an integer."""


class InvalidDelayError(PurgatoryError, ValueError):
    """``TimingWheel.call_later`` was given a delay that is not a non-negative integer."""


class ClockWentBackwardsError(PurgatoryError, ValueError):
    """``advance(now)`` was called with a time earlier than the wheel's current time."""


class ClockNotCallableError(PurgatoryError, TypeError):
    """A wheel or purgatory was given a ``clock`` that is not callable."""


class AlreadyScheduledError(PurgatoryError, RuntimeError):
    """A task that is already scheduled was added to a timing wheel again."""


class ReentrantAdvanceError(PurgatoryError, RuntimeError):
    """A timer callback called ``advance`` on the wheel that is running it."""


class InvalidNameError(PurgatoryError, ValueError):
    """A purgatory was given a name that is not a non-empty str."""


class InvalidPurgeIntervalError(PurgatoryError, ValueError):
    """A purgatory was given a ``purge_interval`` that is not a non-negative integer."""


class InvalidGroupMinKeysError(PurgatoryError, ValueError):
    """A purgatory was given a ``group_min_keys`` that is not an integer >= 1."""


class InvalidTimeoutError(PurgatoryError, ValueError):
    """A delayed operation was given a timeout that is not a non-negative integer."""


class InvalidOperationTypeError(PurgatoryError, TypeError):
    """A delayed operation's class cannot work in a purgatory: it does not implement
    ``try_complete``/``on_complete``, or it compares operations by value (defines ``__eq__``;
    attrs does unless ``eq=False``)."""


class InvalidKeysError(PurgatoryError, ValueError):
    """``try_complete_else_watch`` was given no keys, a string or a set as keys, or an
    unhashable key."""


class OperationAlreadyWatchedError(PurgatoryError, ValueError):
    """The same delayed operation was passed to ``try_complete_else_watch`` twice, or one that
    was completed or cancelled before it was submitted."""


class OperationCancelledError(PurgatoryError, RuntimeError):
    """An operation awaited with ``DelayedOperationPurgatory.wait`` was cancelled by someone else
    (its ``cancel()``, ``cancel_for_key`` or ``shutdown``) before it completed."""


class PurgatoryShutdownError(PurgatoryError, RuntimeError):
    """An operation was submitted to a purgatory after ``shutdown()``."""

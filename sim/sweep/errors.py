"""The exceptions of the sweep pipeline.

Every message is one line that says what was wrong and what is allowed, so a command-line
entry point can print ``str(error)`` instead of a traceback.
"""


class SweepError(Exception):
    """Base class of every error raised by :mod:`sim.sweep`."""


class StudyError(SweepError):
    """A study file is missing, is not valid TOML, or has a bad field (the message names it)."""


class JavaNotFoundError(SweepError):
    """No Java 17+ runtime was found; the message says how to install one."""


class RunnerError(SweepError):
    """A run function is unavailable, could not be imported, or returned malformed tables."""


class OutputConflictError(SweepError):
    """The output directory holds something a sweep would delete: files that are not a
    sweep's, or finished runs the study does not have (the message says what to do)."""

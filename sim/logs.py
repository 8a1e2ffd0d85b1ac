"""The project's logging, set by ``--log-level`` (``sim run``, ``sim sweep``).

Modules log to loggers under ``sim`` (``logging.getLogger(__name__)``); :func:`configure_logging`
sends that tree to stderr as ``HH:MM:SS LEVEL logger: message`` at the chosen level, without
touching the root logger (an application embedding the simulator keeps its own set-up when it
does not call it). What each level shows:

* ``warning`` (the default): nothing beyond warnings; the commands' own output is unchanged;
* ``info``: what a command did and how long it took, in wall time and process CPU time:
  simulating a run, writing its files and plots; starting Spark, the sweep job, the analysis,
  the report, stopping Spark;
* ``debug``: more detail, e.g. the Spark configuration a sweep starts with.

A sweep passes the same level to Spark (:func:`spark_level`): to the driver JVM's log4j
configuration from its start (``sim/sweep/log4j2.properties`` reads it as the system property
``sim.log.level``) and to the running context (``SparkContext.setLogLevel``).
"""

from __future__ import annotations

import logging
import sys

__all__ = ["DEFAULT_LEVEL", "LEVELS", "configure_logging", "spark_level"]

LEVELS = ("debug", "info", "warning", "error")
"""The names ``--log-level`` accepts, most verbose first."""
DEFAULT_LEVEL = "warning"
_SPARK_LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARN", "error": "ERROR"}
_handler: logging.Handler | None = None


def configure_logging(level: str) -> None:
    """Log the ``sim`` loggers at ``level`` (one of :data:`LEVELS`) to the current stderr.

    Calling it again replaces the previous set-up (a new stderr is picked up). Raises
    :class:`ValueError` for a level not in :data:`LEVELS`.
    """
    global _handler
    if level not in LEVELS:
        raise ValueError(f"log level {level!r}: expected one of {', '.join(LEVELS)}")
    logger = logging.getLogger("sim")
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    )
    logger.addHandler(_handler)
    logger.setLevel(level.upper())
    logger.propagate = False


def spark_level(level: str) -> str:
    """Spark's (log4j's) name of ``level``: ``warning`` is ``WARN``."""
    return _SPARK_LEVELS[level]

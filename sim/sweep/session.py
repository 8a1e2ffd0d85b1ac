"""Starting a SparkSession for sweeps: Java found, workers on this interpreter, quiet logs.

Without a master URL the session uses whatever ``spark-submit`` configured, or ``local[*]``
when the program was started with plain ``python``. Python workers run ``sys.executable``
(``PYSPARK_PYTHON`` and ``spark.pyspark.python``; a ``PYSPARK_PYTHON`` already set wins), so in
local mode they import the project from the same virtualenv as the driver. On a cluster that
interpreter path must exist on every worker with the project installed, or the project must be
shipped with ``--py-files`` / ``spark.submit.pyFiles`` to workers whose ``PYSPARK_PYTHON`` has
its dependencies. Under spark-submit, whose JVM is already running, none of this is changed:
spark-submit's own settings apply.

The driver JVM of a session started here compiles with the C1 JIT only and collects with the
serial GC (:data:`DRIVER_JAVA_OPTIONS`): it lives for one sweep and mostly schedules tasks and
reads small Parquet files, and on a busy 2-core machine the default C2 compiler threads made
the first queries of a sweep about twice as slow. Executors on a cluster are not affected; a
``spark.driver.extraJavaOptions`` given by the caller wins.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from sim.sweep.java import ensure_java

LOG_LEVEL = "WARN"
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def launched_by_spark_submit() -> bool:
    """True when spark-submit started this Python driver (and so its JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def start_session(
    master: str | None = None,
    *,
    app_name: str = "sim-sweep",
    ui: bool = True,
    shuffle_partitions: int = 8,
    extra_conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Start (or reuse) the SparkSession a sweep runs on.

    Raises :class:`~sim.sweep.errors.JavaNotFoundError` before touching Spark when no Java 17+
    runtime exists. ``ui=False`` turns the web UI off (tests, benchmarks); Spark's own console
    progress bar is always off because the sweep draws its own. ``extra_conf`` is applied
    last. The session's log level is ``WARN``.
    """
    conf = {
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
    }
    if not launched_by_spark_submit():
        ensure_java()
        conf["spark.pyspark.python"] = os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        conf["spark.driver.extraJavaOptions"] = DRIVER_JAVA_OPTIONS
    conf.update(extra_conf or {})
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(LOG_LEVEL)
    return session

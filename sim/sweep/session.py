"""Starting a SparkSession for sweeps: Java found, workers on this interpreter, quiet logs.

Without a master URL the session uses whatever ``spark-submit`` configured, or ``local[*]``
when the program was started with plain ``python``. A local master gets task retries
(:func:`with_task_retries`): Spark's ``spark.task.maxFailures`` does not apply in local mode,
where a task is tried once unless the master says ``local[N, maxFailures]``, so without this a
Python worker killed once (by the OOM killer, say) would fail the whole sweep.

Python workers run ``sys.executable`` (``PYSPARK_PYTHON`` and ``spark.pyspark.python``; a
``PYSPARK_PYTHON`` already set wins), so in local mode they import the project from the same
virtualenv as the driver. On a cluster that interpreter path must exist on every worker with
the project installed, or the project must be shipped with ``--py-files`` /
``spark.submit.pyFiles`` to workers whose ``PYSPARK_PYTHON`` has its dependencies. Under
spark-submit, whose JVM is already running, none of this is changed: spark-submit's own
settings (its master and ``spark.task.maxFailures``) apply.

A session started here does not let pyspark's accumulator server (a thread of the driver that
reads task updates from the JVM) print a traceback when the JVM dies mid-job: the sweep says
so in one line instead (see :func:`quiet_accumulator_server`).

A session started here is quiet: the driver JVM logs through ``sim/sweep/log4j2.properties``
(at the level given, warnings and errors by default, without the start-up notice about native
Hadoop libraries nor "Using Spark's default log4j profile"), query plans are not truncated in
the logs (so Spark does not warn that it truncated one), and a local master binds to the
loopback address (``SPARK_LOCAL_IP``, unless already set), so Spark does not warn that the
host name resolves to it.

The driver JVM of a session started here compiles with the C1 JIT only and collects with the
serial GC (:data:`DRIVER_JAVA_OPTIONS`): it lives for one sweep and mostly schedules tasks and
reads small Parquet files, and on a busy 2-core machine the default C2 compiler threads made
the first queries of a sweep about twice as slow. Executors on a cluster are not affected; a
``spark.driver.extraJavaOptions`` given by the caller wins.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping
from importlib import resources

from pyspark import SparkContext
from pyspark.sql import SparkSession

from sim.logs import DEFAULT_LEVEL, spark_level
from sim.sweep.java import ensure_java

DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_log = logging.getLogger(__name__)
TASK_MAX_FAILURES = 4
"""Attempts of a task before its job fails, as ``spark.task.maxFailures``' default on a
cluster."""
_LOCAL = re.compile(r"local(?:\[\s*(\d+|\*)\s*\])?")


def with_task_retries(master: str) -> str:
    """``master`` with :data:`TASK_MAX_FAILURES` attempts per task when it is ``local`` or
    ``local[N]`` / ``local[*]`` (as ``local[N, 4]``); any other master unchanged."""
    match = _LOCAL.fullmatch(master.strip())
    if match is None:
        return master
    return f"local[{match[1] or 1}, {TASK_MAX_FAILURES}]"


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
    log_level: str = DEFAULT_LEVEL,
) -> SparkSession:
    """Start (or reuse) the SparkSession a sweep runs on.

    Raises :class:`~sim.sweep.errors.JavaNotFoundError` before touching Spark when no Java 17+
    runtime exists. A local master, given or the default ``local[*]``, retries failed tasks
    (:func:`with_task_retries`). ``ui=False`` turns the web UI off (tests, benchmarks);
    Spark's own console progress bar is always off because the sweep draws its own.
    ``extra_conf`` is applied last. ``log_level`` (a :data:`sim.logs.LEVELS` name) is Spark's
    log level: the driver JVM's from its start (when started here) and the context's.
    """
    conf = {
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.debug.maxToStringFields": "1000",
    }
    if not launched_by_spark_submit():
        master = with_task_retries(master or "local[*]")
        ensure_java()
        conf["spark.pyspark.python"] = os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        log_config = resources.files("sim.sweep").joinpath("log4j2.properties")
        conf["spark.driver.extraJavaOptions"] = (
            f"{DRIVER_JAVA_OPTIONS} -Dlog4j.configurationFile=file:{log_config} "
            f"-Dsim.log.level={spark_level(log_level).lower()}"
        )
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf.update(extra_conf or {})
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    _log.debug("starting Spark: master %s, %s", master, conf)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(spark_level(log_level))
    quiet_accumulator_server(session.sparkContext)
    return session


def quiet_accumulator_server(sc: SparkContext) -> None:
    """Turn off the traceback pyspark's accumulator server prints (from its own thread, with
    ``socketserver``'s ``handle_error``) when the JVM it reads from dies; the sweep reports a
    dead JVM itself. A context without that server (a pyspark that has none) is left as is."""
    server = getattr(sc, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = _ignore_request_error


def _ignore_request_error(request: object, client_address: object) -> None:
    """``socketserver.BaseServer.handle_error`` that prints nothing."""

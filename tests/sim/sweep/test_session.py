"""The session's log level, without starting Spark: what start_session asks of Spark's builder."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

from sim.sweep import session as session_module
from tests.sim.sweep.conftest import FAKE_RUNNER, TINY_STUDY


class _Context:
    def __init__(self) -> None:
        self.levels: list[str] = []

    def setLogLevel(self, level: str) -> None:
        self.levels.append(level)


class _Builder:
    """Records what start_session configures; getOrCreate gives a session-like object."""

    def __init__(self) -> None:
        self.conf: dict[str, str] = {}
        self.sparkContext = _Context()

    def appName(self, name: str) -> _Builder:
        return self

    def master(self, master: str) -> _Builder:
        return self

    def config(self, key: str, value: str) -> _Builder:
        self.conf[key] = value
        return self

    def getOrCreate(self) -> _Builder:
        return self


@pytest.mark.parametrize(("level", "spark"), [("warning", "WARN"), ("info", "INFO")])
def test_the_log_level_reaches_the_driver_jvm_and_the_context(
    monkeypatch: pytest.MonkeyPatch, level: str, spark: str
) -> None:
    builder = _Builder()

    class Session:
        pass

    Session.builder = builder  # type: ignore[attr-defined]
    monkeypatch.setattr(session_module, "SparkSession", Session)
    monkeypatch.setattr(session_module, "ensure_java", lambda: None)
    for name in ("PYSPARK_GATEWAY_PORT", "PYSPARK_PYTHON", "SPARK_LOCAL_IP"):
        monkeypatch.delenv(name, raising=False)  # start_session sets the last two: restored
    started: Any = session_module.start_session("local[1]", log_level=level)
    assert started is builder
    assert f"-Dsim.log.level={spark.lower()}" in builder.conf["spark.driver.extraJavaOptions"]
    assert builder.sparkContext.levels == [spark]


def test_the_log4j_file_takes_its_level_from_the_system_property() -> None:
    lines = resources.files("sim.sweep").joinpath("log4j2.properties").read_text().splitlines()
    assert "rootLogger.level = ${sys:sim.log.level:-warn}" in lines
    # Or pyspark's gateway would reset the root level to WARN.
    assert "logger.gateway.level = ${sys:sim.log.level:-warn}" in lines


@pytest.mark.slow
def test_log_level_info_reaches_spark_from_its_start(tmp_path: Path) -> None:
    argv = [str(TINY_STUDY), "--out", str(tmp_path), "--runner", FAKE_RUNNER, "--no-progress"]
    completed = subprocess.run(
        [sys.executable, "-m", "sim", "sweep", *argv, "--log-level", "info"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "INFO SparkContext: Running Spark version" in completed.stderr  # the JVM's start
    assert "Setting default log level" not in completed.stderr
    for step in ("Spark session ready in", "sweep job:", "analysis:", "Spark stopped in"):
        assert f"INFO sim.sweep.cli: {step}" in completed.stderr

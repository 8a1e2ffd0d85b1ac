"""Fixtures of the sweep tests: one local[2] SparkSession and one finished sweep per session.

The sweep runs the command-line entry point on ``tiny.toml`` (2 x 2 points, 2 seeds, one
simulated second) with the stand-in world of :mod:`tests.sim.sweep.fake_world`; the tests
then read what it wrote. Spark runs quietly: log level ERROR, no web UI, 2 shuffle partitions.

pyspark is imported only inside the Spark fixtures, so the tests that need no Spark run without
it; those that do skip themselves (``pytest.importorskip``) before they would request them.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HERE = Path(__file__).resolve().parent
TINY_STUDY = HERE / "tiny.toml"
FAKE_RUNNER = "tests.sim.sweep.fake_world:run_point"


@attrs.frozen
class FinishedSweep:
    """The output directory of the session's sweep and what the command printed."""

    out_dir: Path
    status: int
    stdout: str
    stderr: str


def run_cli(main: object, argv: list[str]) -> tuple[int, str, str]:
    """Call an entry point ``main(argv)``; return (status, stdout, stderr)."""
    assert callable(main)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = main(argv)
    assert isinstance(status, int)
    return status, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from sim.sweep.session import start_session

    session = start_session("local[2]", app_name="sim-sweep-tests", ui=False, shuffle_partitions=2)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def finished_sweep(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> FinishedSweep:
    from sim.sweep.cli import sweep_main

    out_dir = tmp_path_factory.mktemp("sweep") / "tiny"
    argv = [str(TINY_STUDY), "--master", "local[2]", "--out", str(out_dir), "--runner", FAKE_RUNNER]
    status, stdout, stderr = run_cli(sweep_main, argv)
    return FinishedSweep(out_dir, status, stdout, stderr)

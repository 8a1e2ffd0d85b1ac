"""scripts/build_compiled.py: which modules the optional compiled build covers, and that an
installed build matches the sources (a stale extension module would shadow an edited one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "build_compiled.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_the_build_compiles_the_hot_packages_and_leaves_the_rest_interpreted() -> None:
    listed = _run("--list")
    assert listed.returncode == 0, listed.stderr
    modules = set(listed.stdout.split())
    assert {
        "purgatory/timing_wheel.py", "purgatory/delayed_operation_purgatory.py",
        "replica/partition.py", "replica/replica_manager.py", "sim/core/engine.py",
    } <= modules  # fmt: skip
    assert not {
        "purgatory/__init__.py", "purgatory/errors.py", "purgatory/compiled.py",
        "purgatory/bench/timer.py", "sim/cli.py", "sim/runner.py", "replica/config.py",
    } & modules  # fmt: skip
    assert not any(module.startswith(("sim/sweep/", "sim/output/")) for module in modules)


def test_an_installed_compiled_build_matches_the_sources() -> None:
    checked = _run("--check")
    assert checked.returncode == 0, checked.stderr

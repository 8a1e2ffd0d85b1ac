"""scripts/build_compiled.py: which modules the optional compiled build covers, and that an
installed build matches the sources (a stale extension module would shadow an edited one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from purgatory.watch_group import WatchGroup
from tests.builds import compiled

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
    assert not any(module.startswith("sim/sweep/") for module in modules)
    # A single hot module of a package that otherwise stays interpreted (pyproject's `modules`).
    assert {module for module in modules if module.startswith("sim/output/")} == {
        "sim/output/recorder.py"
    }


def test_an_installed_compiled_build_matches_the_sources() -> None:
    checked = _run("--check")
    assert checked.returncode == 0, checked.stderr


_WEAKLY_REFERENCED = """
import gc, weakref
from purgatory.watch_group import WatchGroup
from replica.records import RecordColumns
instances = [WatchGroup(("key",)), RecordColumns("h", [1], [2], [3])]
called = []
refs = []
for instance in instances:
    try:
        refs.append(weakref.ref(instance, called.append))
    except TypeError:  # pure Python: RecordColumns has __slots__ and no __weakref__
        pass
del instance, instances
gc.collect()
assert all(ref() is None for ref in refs) and len(called) == len(refs), (refs, called)
print(len(refs))
"""


def test_weakly_referenced_compiled_instances_die_cleanly() -> None:
    # A compiled class with a Python base (Generic, Sequence) has a __weakref__ slot that
    # mypyc 2.4 mishandles; scripts/build_compiled.py corrects its C (fix_weak_references).
    # Uncorrected, the instance's death freed its weak reference and the interpreter crashed:
    # run in a subprocess, so that shows as a failure and not as a crashed test run.
    ran = subprocess.run(
        [sys.executable, "-c", _WEAKLY_REFERENCED],
        capture_output=True, text=True, check=False, cwd=SCRIPT.parent.parent,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    # Compiled, both classes take weak references; pure Python, neither has __weakref__.
    assert int(ran.stdout) == (2 if compiled(WatchGroup) else 0)

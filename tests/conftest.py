"""Shared pytest configuration: hypothesis profiles, and tests that watch the pure sources.

The ``ci`` profile (selected by ``HYPOTHESIS_PROFILE=ci``, which ``scripts/test.sh`` sets) is
derandomized and has no deadline, so CI runs are reproducible and never fail on a slow machine.

``@pytest.mark.pure_python``: the test counts calls by monkeypatching methods of the project's
classes. On the compiled build such patches do not reach compiled callers (they call native
methods directly), so there the test runs again, whole, in a subprocess on the pure-Python
sources (``python -m purgatory.compiled --pure pytest NODEID``) and passes or fails with it.
Both builds thereby check what the test asserts about the code's logic.
"""

import os
import subprocess
from collections.abc import Callable

import pytest
from hypothesis import settings

from purgatory.compiled import compiled_packages, pure_python_command

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

_PACKAGES = ("purgatory", "replica", "coordinator", "apis", "cluster", "sim")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not any(compiled_packages(_PACKAGES).values()):
        return
    for item in items:
        if item.get_closest_marker("pure_python") is not None and isinstance(item, pytest.Function):
            item.obj = _on_pure_python(item)


def _on_pure_python(item: pytest.Function) -> Callable[..., None]:
    """A stand-in for ``item``'s body: the same test run on the pure-Python sources."""

    def run(**fixtures: object) -> None:
        command = pure_python_command("pytest", ["-q", "-p", "no:cacheprovider", item.nodeid])
        ran = subprocess.run(command, capture_output=True, text=True, cwd=item.config.rootpath)
        if ran.returncode != 0:
            pytest.fail(
                f"on pure Python, {item.nodeid} failed:\n{ran.stdout[-4000:]}{ran.stderr[-2000:]}",
                pytrace=False,
            )

    return run

"""Which build is running, compiled or pure Python, and how to run the pure one anyway.

The project is pure Python. Its optional compiled build (``scripts/setup.sh --compiled``, see
docs/benchmarks.md) puts a mypyc extension module beside each compiled module's source, as
``timing_wheel.cpython-311-x86_64-linux-gnu.so`` beside ``timing_wheel.py``; Python's import
system prefers the extension. So a module is *compiled* when it was loaded from an extension
file that has its ``.py`` source beside it, which is true of mypyc's in-place build and of
no ordinary C extension.

:func:`compiled_packages` says, per top-level package, whether any of its loaded modules is
compiled. ``python -m purgatory.compiled --pure MODULE [ARGS...]`` runs ``MODULE`` as
``python -m MODULE ARGS...`` would, on the pure-Python sources even where the compiled build is
installed: it forgets the modules loaded so far from every package holding a compiled module
(``purgatory`` itself, imported to run this module) and puts a finder in front of the import
system that loads the source of every module the compiled build covers. The benchmarks use it to
report the pure-Python figure beside the compiled one, in the same run.

This module is never compiled and imports nothing of the project.
"""

from __future__ import annotations

import importlib.machinery
import os
import runpy
import sys
from collections.abc import Iterable, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from importlib.util import spec_from_file_location
from types import ModuleType

__all__ = ["compiled_packages", "pure_python_command", "run_pure"]

_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _source_of(path: str | None) -> str | None:
    """The ``.py`` beside an extension module, if there is one (mypyc's layout), else None."""
    if not path or not path.endswith(_EXTENSION_SUFFIXES):
        return None
    directory, filename = os.path.split(path)
    source = os.path.join(directory, filename.split(".", 1)[0] + ".py")
    return source if os.path.exists(source) else None


def _compiled_tops() -> set[str]:
    """Top-level packages with at least one loaded compiled module."""
    return {
        name.partition(".")[0]
        for name, module in list(sys.modules.items())
        if _source_of(getattr(module, "__file__", None))
    }


def compiled_packages(packages: Iterable[str]) -> dict[str, bool]:
    """``{package: compiled}``: whether any loaded module of each top-level package is
    compiled. Only modules already imported count, so ask after the work being measured."""
    tops = _compiled_tops()
    return {package: package in tops for package in packages}


def pure_python_command(module: str, args: Sequence[str] = ()) -> list[str]:
    """The command line that runs ``python -m module args`` on pure Python."""
    return [sys.executable, "-m", "purgatory.compiled", "--pure", module, *args]


class _SourceFinder:
    """A meta-path finder: where the import system would load a compiled module, it loads the
    module's source instead; it leaves every other module to the finders after it."""

    @staticmethod
    def find_spec(
        fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        spec = PathFinder.find_spec(fullname, path, target)
        source = _source_of(spec.origin if spec is not None else None)
        return None if source is None else spec_from_file_location(fullname, source)


def run_pure(module: str, args: Sequence[str]) -> None:
    """Run ``module`` as ``__main__`` with ``args`` (as ``python -m``), on pure Python."""
    loaded = _compiled_tops()
    for name in [name for name in sys.modules if name.partition(".")[0] in loaded]:
        del sys.modules[name]
    sys.meta_path.insert(0, _SourceFinder)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "--pure":
        sys.exit("usage: python -m purgatory.compiled --pure MODULE [ARGS...]")
    run_pure(sys.argv[2], sys.argv[3:])

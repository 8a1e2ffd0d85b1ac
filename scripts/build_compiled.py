"""Compile the hot modules with mypyc, in place, beside their sources; or remove them.

    python scripts/build_compiled.py            # build (skipped when the build is current)
    python scripts/build_compiled.py --clean    # back to pure Python
    python scripts/build_compiled.py --check    # exit 1 unless the build matches the sources

Which modules: every ``.py`` under the packages listed in pyproject.toml's
``[tool.kafka-purgatory.compiled] packages``, plus the single modules listed in ``modules``
(a hot module in a package that otherwise stays interpreted), minus the globs in ``exclude``
(the reasons are written there) and minus the modules mypyc gets wrong (see
:data:`UNSUPPORTED`). The list is by package, so a new module in a compiled package is
compiled without editing anything.

How: mypyc translates the modules to C (one shared library for all of them, so calls between
modules stay native) and setuptools' ``build_ext --inplace`` compiles it. Each module gets a
small extension module beside its ``.py`` (``timing_wheel.cpython-311-x86_64-linux-gnu.so``),
which Python's import system prefers to the source; the shared library sits at the checkout's
root. setuptools is driven programmatically: ``setup()`` would read pyproject.toml, which the
build does not need (and which older setuptools refuse, for its SPDX ``license`` string).

mypyc 2.4 gets weak references wrong, and the build corrects its C before compiling it
(:func:`fix_weak_references`): a native class with a Python class in its bases (``Generic``,
``Sequence``) gets a ``__weakref__`` slot, which mypyc's generated code treats as a reference
the instance owns: the collector visits it, and the deallocator decrements it instead of
clearing the instance's weak references (mypyc/mypyc#1102). An instance that died while weakly
referenced freed its first weak reference object, which then dangled: the compiled
``RecordColumns`` crashed the interpreter under hypothesis, and so would any weakly referenced
``DelayedOperationPurgatory`` or ``WatchGroup``.

The build records the SHA-256 of every compiled source in ``build/mypyc/manifest.json``; a
later run with the same sources (and the same Python, mypyc and options) does nothing, and
``--check`` (run by the test suite) fails on a build that no longer matches its sources: an
edited module whose stale extension would still be imported.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.machinery
import json
import os
import re
import shutil
import sys
import time
import tomllib
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build" / "mypyc"
MANIFEST = BUILD_DIR / "manifest.json"
OPT_LEVEL = "3"
WEAKREF_FIX = 1
"""Version of :func:`fix_weak_references`, recorded in the manifest (a change rebuilds)."""
UNSUPPORTED = ("attrs.field(", "ClassVar[")
"""Modules containing these stay interpreted, whatever the configuration says: mypyc (2.4)
builds an attrs class (a non-native class to it) with a wrong class body when an attribute's
value is an ``attrs.field(...)`` call (it casts the call to the attribute's type, which fails
at import) or an annotation is a ``ClassVar`` (it drops the ``ClassVar``, so attrs takes the
class constant for a field). attrs classes are not native classes anyway: little is lost."""


def _config() -> dict[str, list[str]]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        section: dict[str, list[str]] = tomllib.load(file)["tool"]["kafka-purgatory"]["compiled"]
    section.setdefault("modules", [])
    return section


def compiled_sources() -> list[str]:
    """The sources to compile, as sorted paths relative to the checkout's root."""
    config = _config()
    excluded: set[Path] = set()
    for pattern in config["exclude"]:
        excluded.update(ROOT.glob(pattern))
    candidates = [path for package in config["packages"] for path in (ROOT / package).rglob("*.py")]
    candidates += [ROOT / module for module in config["modules"]]
    return sorted(
        {
            path.relative_to(ROOT).as_posix()
            for path in candidates
            if path not in excluded and not any(mark in path.read_text() for mark in UNSUPPORTED)
        }
    )


def _manifest(sources: list[str]) -> dict[str, object]:
    import mypy.version

    return {
        "python": sys.version,
        "mypy": mypy.version.__version__,
        "opt_level": OPT_LEVEL,
        "weakref_fix": WEAKREF_FIX,
        "sources": {
            source: hashlib.sha256((ROOT / source).read_bytes()).hexdigest() for source in sources
        },
    }


# The __weakref__ slot mypyc puts right after the __dict__ slot, behind the instance struct.
_WEAKREF_SLOT = (
    re.escape("*((PyObject **)((char *)self + sizeof(PyObject *) + sizeof(")
    + r"\w+"
    + re.escape(")))")
)
_VISIT_WEAKREFS = re.compile(rf"^\s*Py_VISIT\({_WEAKREF_SLOT}\);\n", re.MULTILINE)
_CLEAR_WEAKREFS = re.compile(rf"Py_CLEAR\(({_WEAKREF_SLOT})\);")


def fix_weak_references(sources: Iterable[str]) -> int:
    """Correct mypyc's handling of ``__weakref__`` slots in the C files ``sources`` (see the
    module docstring); return how many places were corrected.

    The slot holds a borrowed pointer to the first weak reference, so the collector must not
    visit it, and tearing an instance down must clear its weak references (which calls their
    callbacks) instead of decrementing that pointer, as CPython's own classes do. The same
    clear function serves the collector's ``tp_clear``, where the slot is already empty (the
    collector clears weak references to garbage before it clears the garbage).
    """
    fixed = 0
    for source in sources:
        path = ROOT / source
        text = path.read_text()
        text, visits = _VISIT_WEAKREFS.subn("", text)
        text, clears = _CLEAR_WEAKREFS.subn(
            r"if (\1 != NULL) PyObject_ClearWeakRefs((PyObject *)self);", text
        )
        if visits or clears:
            path.write_text(text)
            fixed += visits + clears
    return fixed


def built_extensions() -> list[Path]:
    """Every extension module the build put in the checkout (none: a pure-Python checkout)."""
    config = _config()
    found = [
        path
        for package in config["packages"]
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
        for path in (ROOT / package).rglob(f"*{suffix}")
    ]
    found += [
        path
        for module in config["modules"]
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
        for path in [(ROOT / module).with_suffix(suffix)]
        if path.exists()
    ]
    found += [
        path
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
        for path in ROOT.glob(f"*__mypyc{suffix}")
    ]
    return sorted(set(found))


def clean() -> None:
    """Remove the extension modules and the manifest: the checkout runs pure Python."""
    for path in built_extensions():
        path.unlink()
    MANIFEST.unlink(missing_ok=True)


def check() -> str | None:
    """None when the checkout is pure Python or its build matches the sources; else why not."""
    if not built_extensions():
        return None
    if not MANIFEST.exists():
        return "extension modules without a manifest: rebuild (scripts/setup.sh --compiled)"
    recorded = json.loads(MANIFEST.read_text())
    current = _manifest(compiled_sources())
    if recorded != current:
        changed = sorted(
            name
            for name in set(recorded["sources"]) | set(current["sources"])  # type: ignore[call-overload]
            if recorded["sources"].get(name) != current["sources"].get(name)  # type: ignore[attr-defined]
        )
        return (
            "the compiled build does not match the sources "
            f"({', '.join(changed) or 'toolchain changed'}): rebuild with "
            "scripts/setup.sh --compiled, or go back to pure Python with scripts/setup.sh"
        )
    return None


def build(jobs: int) -> None:
    """Compile the configured modules in place (nothing to do when the build is current)."""
    sources = compiled_sources()
    manifest = _manifest(sources)
    if MANIFEST.exists() and json.loads(MANIFEST.read_text()) == manifest and built_extensions():
        print(f"build_compiled: {len(sources)} modules up to date")
        return
    from mypyc.build import mypycify
    from setuptools import Distribution  # type: ignore[import-untyped]  # no stubs installed

    clean()
    started = time.monotonic()
    os.chdir(ROOT)
    extensions = mypycify(sources, opt_level=OPT_LEVEL, target_dir=str(BUILD_DIR))
    fixed = fix_weak_references(source for extension in extensions for source in extension.sources)
    print(f"build_compiled: {fixed} weak-reference slot uses corrected")
    temp = BUILD_DIR / "temp"
    dist = Distribution(
        {
            "name": "kafka-purgatory-compiled",
            "ext_modules": extensions,
            "script_args": ["build_ext", "--inplace", "--build-temp", str(temp), "-j", str(jobs)],
        }
    )
    dist.parse_command_line()
    dist.run_commands()
    shutil.rmtree(temp, ignore_errors=True)
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"build_compiled: {len(sources)} modules in {time.monotonic() - started:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--clean", action="store_true", help="remove the compiled build")
    action.add_argument("--check", action="store_true", help="fail on a stale build")
    action.add_argument("--list", action="store_true", help="print the modules compiled")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if args.clean:
        clean()
    elif args.check:
        problem = check()
        if problem:
            print(f"build_compiled: {problem}", file=sys.stderr)
            return 1
    elif args.list:
        print("\n".join(compiled_sources()))
    else:
        build(args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

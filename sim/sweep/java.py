"""Find a Java 17+ runtime for PySpark, or say in one line how to install one.

Search order: ``$JAVA_HOME``, then ``java`` on ``PATH``, then the usual install folders
(``/usr/lib/jvm/*``, ``/usr/lib64/jvm/*``, ``/usr/java/*``, ``/opt/java/*``, Homebrew's
``openjdk*`` and macOS's ``/Library/Java/JavaVirtualMachines/*``); from those folders the
lowest version >= 17 wins, since Spark supports the long-term releases best.

``python -m sim.sweep.java`` prints the runtime found and exits 0, or prints the one-line
install hint and exits 1; ``scripts/setup.sh`` and the sweep job call the same function.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import attrs

from sim.sweep.errors import JavaNotFoundError

MINIMUM_JAVA = 17
SEARCH_GLOBS = (
    "/usr/lib/jvm/*",
    "/usr/lib64/jvm/*",
    "/usr/java/*",
    "/opt/java/*",
    "/opt/homebrew/opt/openjdk*/libexec/openjdk.jdk/Contents/Home",
    "/usr/local/opt/openjdk*/libexec/openjdk.jdk/Contents/Home",
    "/Library/Java/JavaVirtualMachines/*/Contents/Home",
)
_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')
_RELEASE_VERSION = re.compile(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', re.MULTILINE)


@attrs.frozen
class JavaRuntime:
    """A Java installation: its home folder (the ``JAVA_HOME`` to use) and major version."""

    home: Path
    version: int


def install_hint() -> str:
    """One line telling the user how to get Java 17 on this kind of machine."""
    if shutil.which("apt-get"):
        how = "apt-get install -y openjdk-17-jre-headless"
    elif shutil.which("dnf"):
        how = "dnf install -y java-17-openjdk-headless"
    elif shutil.which("brew") or sys.platform == "darwin":
        how = "brew install openjdk@17"
    else:
        how = "install a Java 17 runtime from https://adoptium.net"
    return (
        f"PySpark needs Java {MINIMUM_JAVA} or newer and none was found (JAVA_HOME, java on "
        f"PATH, /usr/lib/jvm): {how}, then set JAVA_HOME or put java on PATH"
    )


def java_version(home: Path) -> int | None:
    """The major version of the Java installed at ``home``, or None if it is not one.

    Reads ``home/release`` when present, otherwise runs ``home/bin/java -version``.
    """
    java = home / "bin" / "java"
    if not java.is_file():
        return None
    release = home / "release"
    if release.is_file():
        found = _RELEASE_VERSION.search(release.read_text(encoding="utf-8", errors="replace"))
        if found:
            return _major(found)
    try:
        done = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _VERSION.search(done.stderr + done.stdout)
    return _major(found) if found else None


def _major(match: re.Match[str]) -> int:
    first = int(match.group(1))
    # Java 8 and older call themselves "1.8.0_392".
    return int(match.group(2) or 0) if first == 1 else first


def _preferred_homes(environ: Mapping[str, str]) -> Iterator[Path]:
    java_home = environ.get("JAVA_HOME")
    if java_home:
        yield Path(java_home)
    on_path = shutil.which("java", path=environ.get("PATH", ""))
    if on_path:
        yield Path(on_path).resolve().parent.parent


def find_java(
    environ: Mapping[str, str] | None = None, search_globs: Sequence[str] = SEARCH_GLOBS
) -> JavaRuntime:
    """The Java runtime PySpark should use; raises :class:`JavaNotFoundError` if none is >= 17.

    ``environ`` (default ``os.environ``) supplies ``JAVA_HOME`` and ``PATH``; ``search_globs``
    are the absolute folder patterns scanned after them.
    """
    env = os.environ if environ is None else environ
    for home in _preferred_homes(env):
        version = java_version(home)
        if version is not None and version >= MINIMUM_JAVA:
            return JavaRuntime(home=home, version=version)
    installed: list[JavaRuntime] = []
    for pattern in search_globs:
        for home in sorted(Path("/").glob(pattern.lstrip("/"))):
            version = java_version(home)
            if version is not None and version >= MINIMUM_JAVA:
                installed.append(JavaRuntime(home=home.resolve(), version=version))
    if not installed:
        raise JavaNotFoundError(install_hint())
    return min(installed, key=lambda runtime: (runtime.version, str(runtime.home)))


def ensure_java() -> JavaRuntime:
    """:func:`find_java`, then point ``JAVA_HOME`` at it so Spark's launcher uses that Java."""
    runtime = find_java()
    os.environ["JAVA_HOME"] = str(runtime.home)
    return runtime


def main() -> int:
    """Print the Java runtime found (exit 0) or the one-line install hint (exit 1)."""
    try:
        runtime = find_java()
    except JavaNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"Java {runtime.version} at {runtime.home}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

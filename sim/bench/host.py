"""What a benchmark ran on: the processor and the Python interpreter's build.

Rates per wall second depend on the machine as much as on the code: the same commit ran the
default scenario at 77,402 simulated messages per wall second on one 2-core VM and 52,547 on
another (docs/benchmarks.md), and the interpreter's build moves them by a fifth again. A
CPython whose ``libpython`` is a shared library (pyenv's and python-build's default,
``--enable-shared``) reaches its own functions through the dynamic linker's indirection; a
statically linked one built with profile-guided and link-time optimisation (Debian's and
Ubuntu's ``/usr/bin/python3``, the python.org installers) does not. ``python -m sim bench``
reports :func:`host` beside its figures so that two reports can be told apart.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

__all__ = ["host", "libpython_is_shared"]


def libpython_is_shared(maps: Path = Path("/proc/self/maps")) -> bool | None:
    """Whether this process runs its interpreter from a shared ``libpython`` (a
    ``libpython*.so`` is mapped); None where ``maps`` cannot be read (not Linux)."""
    try:
        text = maps.read_text()
    except OSError:
        return None
    return any("libpython" in line.rsplit("/", 1)[-1] for line in text.splitlines())


def _processor(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host() -> dict[str, object]:
    """The processor's model name, the Python version and executable, and
    :func:`libpython_is_shared`."""
    return {
        "processor": _processor(),
        "python": platform.python_version(),
        "executable": str(Path(sys.executable).resolve()),
        "libpython_shared": libpython_is_shared(),
    }

"""The benchmark names the machine and the interpreter build it ran on."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from sim.bench.host import host, libpython_is_shared


@pytest.mark.parametrize(
    ("mapped", "shared"),
    [
        ("/opt/py/lib/libpython3.11.so.1.0", True),
        ("/usr/lib/x86_64-linux-gnu/libc.so.6", False),  # the interpreter is linked statically
    ],
)
def test_a_mapped_libpython_means_a_shared_interpreter(
    tmp_path: Path, mapped: str, shared: bool
) -> None:
    maps = tmp_path / "maps"
    maps.write_text(
        "55d0-55e0 r--p 00000000 08:01 1 /opt/libpython-tools/bin/python3.11\n"
        f"7f00-7f10 r-xp 00000000 08:01 2 {mapped}\n"
    )
    assert libpython_is_shared(maps) is shared


def test_unreadable_maps_say_unknown(tmp_path: Path) -> None:
    assert libpython_is_shared(tmp_path / "absent") is None


def test_host_reports_this_interpreter() -> None:
    report = host()
    assert report["python"] == platform.python_version()
    assert report["executable"] == str(Path(sys.executable).resolve())
    assert isinstance(report["processor"], str) and report["processor"]
    assert report["libpython_shared"] in (True, False, None)

"""purgatory.compiled: telling the compiled build from pure Python, and running pure Python."""

from __future__ import annotations

import json
import subprocess
import sys

import purgatory.timing_wheel
from purgatory.compiled import compiled_packages, pure_python_command


def _probe(command: list[str]) -> tuple[dict[str, bool], str]:
    completed = subprocess.run(command, check=True, capture_output=True, text=True)
    build, path = json.loads(completed.stdout)
    return build, path


def test_compiled_packages_reports_how_the_loaded_modules_were_built() -> None:
    loaded_from_source = purgatory.timing_wheel.__file__.endswith(".py")
    assert compiled_packages(["purgatory", "no_such_package"]) == {
        "purgatory": not loaded_from_source,
        "no_such_package": False,
    }


def test_a_plain_run_and_a_pure_run_load_what_they_say() -> None:
    build, path = _probe([sys.executable, "-m", "tests.purgatory.build_probe"])
    assert build == {"purgatory": not path.endswith(".py")}
    # The pure run loads the source whichever build is installed.
    build, path = _probe(pure_python_command("tests.purgatory.build_probe"))
    assert build == {"purgatory": False}
    assert path.endswith("timing_wheel.py")

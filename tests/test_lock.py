"""requirements.lock pins what scripts/setup.sh installs, and the installation matches it:
"same seed, same bytes" across machines rests on the same library versions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sim.output.provenance import LIBRARIES

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"


def _pins() -> dict[str, str]:
    lines = LOCK.read_text(encoding="utf-8").splitlines()
    pairs = (line.split("==") for line in lines if line and not line.startswith("#"))
    return {name: version for name, version in pairs}


def test_the_lock_matches_the_installed_environment() -> None:
    # Fails after an upgrade or a new dependency until `scripts/lock.py` is run again.
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lock.py"), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr


def test_the_lock_pins_every_library_the_output_bytes_depend_on() -> None:
    pins = _pins()
    assert all(pins[name] for name in LIBRARIES)
    assert {"trio", "pyspark", "pytest", "tqdm"} <= set(pins)
    assert "kafka-purgatory" not in pins  # the project itself is installed from the checkout


def test_setup_installs_with_the_lock_as_constraints() -> None:
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert '-e ".[all]" --constraint requirements.lock' in setup

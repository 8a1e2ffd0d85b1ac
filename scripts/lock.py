"""Write ``requirements.lock``: exact pins of everything ``scripts/setup.sh`` installs.

The set-up installs ``kafka-purgatory[all]`` with this file as a pip constraints file, so
every machine gets the same versions, and with them the same output bytes for the same seed
(pyarrow writes the Parquet files, numpy computes the summaries, matplotlib draws the plots).

The pins are the installed versions of the project's dependency closure, read from the
environment's package metadata (extras and environment markers followed): packages installed
for other reasons are left out, unlike a plain ``pip freeze``. Run it with the project's
environment after changing a dependency or upgrading one::

    .venv/bin/python scripts/lock.py            # rewrite requirements.lock
    .venv/bin/python scripts/lock.py --check    # exit 1 if the lock and the venv disagree
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROJECT = "kafka-purgatory"
ROOT_REQUIREMENT = f"{PROJECT}[all]"
LOCK = Path(__file__).resolve().parent.parent / "requirements.lock"
HEADER = f"""\
# Exact versions of {ROOT_REQUIREMENT} and everything it needs (generated: do not edit).
# scripts/setup.sh installs with this file as a pip constraints file. Refresh it after a
# dependency change with: .venv/bin/python scripts/lock.py
"""


def closure(root: str = ROOT_REQUIREMENT) -> dict[str, str]:
    """Installed distributions ``root`` needs, transitively: canonical name -> version.

    Raises PackageNotFoundError if a needed distribution is not installed.
    """
    pins: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(root)]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        distribution = metadata.distribution(name)
        pins[name] = distribution.version
        for line in distribution.requires or []:
            needed = Requirement(line)
            if needed.marker is None or any(
                needed.marker.evaluate({"extra": extra}) for extra in requirement.extras or {""}
            ):
                todo.append(needed)
    pins.pop(canonicalize_name(PROJECT), None)
    return dict(sorted(pins.items()))


def lock_text() -> str:
    """The contents ``requirements.lock`` should have for the installed environment."""
    return HEADER + "".join(f"{name}=={version}\n" for name, version in closure().items())


def main(argv: list[str]) -> int:
    text = lock_text()
    if argv == ["--check"]:
        if LOCK.exists() and LOCK.read_text(encoding="utf-8") == text:
            return 0
        print(f"{LOCK.name} does not match this environment; run scripts/lock.py", file=sys.stderr)
        return 1
    if argv:
        print("usage: scripts/lock.py [--check]", file=sys.stderr)
        return 2
    LOCK.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

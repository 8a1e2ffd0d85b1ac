"""Print the golden digests of the bundled scenarios (run on a commit whose outputs are right)."""

from __future__ import annotations

import json
import sys
import tempfile

from tests.sim.golden.cases import CASES, digests

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        table = {name: digests(name, tmp) for name in CASES}
    json.dump(table, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")

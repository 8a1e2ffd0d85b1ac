"""Same seed, same bytes, across refactorings: the bundled scenarios' run directories match
the digests recorded in ``digests.json``.

The digests were recorded before the package restructuring (issue 9) and must not change
unless a change is meant to alter simulated behaviour; then re-record them with
``python -m tests.sim.golden.make_digests > tests/sim/golden/digests.json`` and say why in the
commit message. Parquet bytes depend on the pyarrow version as well (pinned by the lock file
the set-up installs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sim.golden.cases import CASES, digests

_RECORDED = json.loads((Path(__file__).parent / "digests.json").read_text(encoding="utf-8"))


def test_every_case_is_recorded() -> None:
    assert sorted(_RECORDED) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_are_byte_identical(name: str, tmp_path: Path) -> None:
    assert digests(name, tmp_path) == _RECORDED[name]

"""Fixtures: every back-end test runs against memory and SQLite (a real file)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from msgqueue import Backend, MemoryBackend, SqliteBackend


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    made: Backend = (
        MemoryBackend() if request.param == "memory" else SqliteBackend(tmp_path / "queue.db")
    )
    yield made
    made.close()

"""``python -m purgatory.bench reaper``: real-time lateness, checked for shape, not speed."""

import json

import pytest

from purgatory.bench.__main__ import main


def test_reaper_bench_reports_every_operation_and_no_early_expiry(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["reaper", "--num", "200", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["bench"] == "reaper"
    assert result["count"] == result["baseline_count"] == 200
    assert result["min_ms"] >= 0
    assert result["p50_ms"] <= result["p99_ms"] <= result["max_ms"]


def test_reaper_bench_rejects_a_bad_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reaper", "--num", "0"]) == 2
    assert "num_ops must be a positive int" in capsys.readouterr().err

"""``python -m purgatory.bench reaper`` and :func:`measure_lateness`: real-time lateness,
checked for occurrence and order, never for speed."""

import json

import pytest

from purgatory.bench.__main__ import main
from purgatory.bench.errors import BenchArgumentError
from purgatory.bench.reaper_lateness import measure_lateness


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


def test_measure_lateness_reports_every_operation_and_none_early() -> None:
    result = measure_lateness(num_ops=300, timeout_ms_range=(1, 20))
    assert result["count"] == result["baseline_count"] == 300
    assert result["min_ms"] >= 0
    assert result["baseline_min_ms"] >= 0
    for prefix in ("", "baseline_"):
        percentiles = [result[f"{prefix}{name}_ms"] for name in ("p50", "p90", "p99", "p99_9")]
        assert percentiles == sorted(percentiles)
        assert percentiles[-1] <= result[f"{prefix}max_ms"]


def test_measure_lateness_rejects_bad_arguments() -> None:
    with pytest.raises(BenchArgumentError, match="num_ops must be a positive int"):
        measure_lateness(num_ops=0)
    with pytest.raises(BenchArgumentError, match="timeout_ms_range must be"):
        measure_lateness(num_ops=1, timeout_ms_range=(5, 1))
    assert issubclass(BenchArgumentError, ValueError)

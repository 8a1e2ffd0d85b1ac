"""The benchmark runs end to end on a tiny workload (its numbers are not asserted)."""

from __future__ import annotations

from kafka_server.bench.__main__ import run


def test_bench_smoke() -> None:
    results = run(messages=200, size=10, latency_messages=20, idle=0.3)
    for side in ("server", "mock"):
        assert set(results[side]) >= {"records_per_s", "mb_per_s", "p50_ms", "p99_ms"}
        assert all(value > 0 for value in results[side].values())
    assert results["ratios"]["idle_long_poll_over_polling_cpu"] > 0

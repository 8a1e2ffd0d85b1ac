"""The benchmarks run and report consistent numbers (never asserting on speed)."""

from __future__ import annotations

import json

import pytest

from replica import bench
from replica.bench.__main__ import main


def test_replication_benchmark_answers_every_request() -> None:
    result = bench.replication(requests=40, batch=2, rounds=1)
    assert result["records"] == 80
    assert result["acks_all_records_per_cpu_second"] > 0
    ratio = result["acks_one_records_per_cpu_second"] / result["acks_all_records_per_cpu_second"]
    assert result["acks_all_cost_ratio"] == pytest.approx(ratio)


def test_log_read_benchmark_and_cli(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench.log_read(small=10, large=100, reads=50, rounds=1)
    assert result["read_cost_ratio"] == pytest.approx(
        result["large_log_us_per_read"] / result["small_log_us_per_read"]
    )
    main(["--requests", "16", "--batch", "1", "--rounds", "1", "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["benchmark"] for line in lines] == [
        "replication",
        "log_read",
        "follower_fetch",
        "timestamp_lookup",
    ]


def test_follower_fetch_and_timestamp_lookup_benchmarks() -> None:
    fetch = bench.follower_fetch(epochs=5, fetches=20, rounds=1)
    assert fetch["epoch_check_cost_ratio"] == pytest.approx(
        fetch["with_epoch_us_per_fetch"] / fetch["without_epoch_us_per_fetch"]
    )
    lookup = bench.timestamp_lookup(small=10, large=100, lookups=20, rounds=1)
    assert lookup["lookup_cost_ratio"] == pytest.approx(
        lookup["large_log_us_per_lookup"] / lookup["small_log_us_per_lookup"]
    )

"""Smoke tests of ``python -m consume_proxy.bench`` on tiny sizes: every benchmark runs and its
numbers are consistent. Nothing is asserted about speed."""

from __future__ import annotations

import json

import pytest

from consume_proxy.bench.__main__ import main
from consume_proxy.bench.throughput import PATHS
from consume_proxy.bench.wakeup import run_wakeup


def test_throughput_measures_every_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["throughput", "--n", "20", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row["path"] for row in rows] == list(PATHS)
    assert all(row["records"] == 20 and row["per_cpu_second"] > 0 for row in rows)


def test_a_long_poll_spends_one_request_per_record_and_polling_more() -> None:
    long_poll, polling = run_wakeup(10, interval_ms=5)
    assert (long_poll.reader, polling.reader) == ("long poll", "polling")
    assert long_poll.records == polling.records == 10
    assert long_poll.requests == 10
    assert polling.requests > 10
    assert 0 <= long_poll.median_ms <= long_poll.p99_ms <= long_poll.max_ms


def test_the_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wakeup", "--n", "3", "--interval-ms", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[0] == "reader"

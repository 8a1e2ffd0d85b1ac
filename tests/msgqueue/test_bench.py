"""Smoke tests of ``python -m msgqueue.bench`` on tiny sizes: every benchmark runs and its
numbers are consistent. Nothing is asserted about speed."""

from __future__ import annotations

import json

import pytest

from msgqueue.bench.__main__ import main
from msgqueue.bench.expiry import run_expiry
from msgqueue.bench.throughput import OPERATIONS, TRANSPORTS


def test_throughput_measures_every_operation_transport_and_backend(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["throughput", "--n", "20", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    seen = {(row["backend"], row["transport"], row["operation"]) for row in rows}
    assert seen == {
        (backend, transport, operation)
        for backend in ("memory", "sqlite")
        for transport in TRANSPORTS
        for operation in OPERATIONS
    }
    assert all(row["messages"] == 20 and row["per_cpu_second"] > 0 for row in rows)


def test_expiry_timers_are_within_a_tick_and_the_sweep_is_not() -> None:
    results = {(r.mechanism, r.kind): r for r in run_expiry(2000, phases=4)}
    for kind in ("ttl", "hide"):
        timers, sweep = results[("timers", kind)], results[("1 s sweep", kind)]
        assert timers.count == 1000 and sweep.count == 4000
        assert -1 < timers.min_ms <= timers.max_ms <= 0  # the 1 ms clock reads the floor
        assert sweep.min_ms < -500 and sweep.max_ms > 500


def test_the_bench_command_refuses_an_unknown_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["throughput", "--backends", "redis"]) == 2
    assert "--backends" in capsys.readouterr().err

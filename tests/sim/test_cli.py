"""``python -m sim``: exit codes, one-line errors, and the run/scenarios/knobs/bench commands."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.bench.host import host
from sim.cli import _described, main
from sim.scenario import Scenario, load_scenario
from tests.sim.test_output import SHORT, toy_world

Capture = pytest.CaptureFixture[str]


def _short_args() -> list[str]:
    return [arg for override in SHORT for arg in ("--set", override)]


def test_scenarios_lists_every_bundled_scenario_with_a_description(capsys: Capture) -> None:
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == sorted(names)
    assert {"default", "acks1", "broker-failure", "slow-follower", "burrow-per-partition"} <= set(
        names
    )
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)


def test_studies_lists_every_bundled_study_with_its_runs(capsys: Capture) -> None:
    assert main(["studies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split(maxsplit=3) for line in lines}
    assert {"default", "bench", "commit-latency"} <= set(rows)
    assert rows["bench"][1:3] == ["16", "runs"]  # 2 x 2 points x 4 seeds
    assert rows["default"][3].startswith("p99 send-to-commit latency")


@pytest.mark.parametrize("duration", ["10", "2.5", " 7 "])
def test_a_duration_without_a_unit_exits_2_in_one_line(capsys: Capture, duration: str) -> None:
    # In a scenario a bare number is microseconds; on the command line nobody means that.
    assert main(["run", "default", "--duration", duration, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--duration" in err and "has no unit" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["run", "--set", "producers[0].linger_ms=fast"],
            'scenario error: producers[0].linger_ms: expected a duration, got "fast" '
            '(e.g. "5s", "500ms", "250us", or an integer number of ms)',
        ),
        (
            ["run", "--seed", "abc"],
            'scenario error: simulation.seed: expected an integer, got "abc"',
        ),
        (
            ["run", "--duration", "soon"],
            'scenario error: simulation.duration: expected a duration, got "soon" '
            '(e.g. "5s", "500ms", "250us", or an integer number of us)',
        ),
        (["run", "no-such-scenario"], "scenario error: no-such-scenario: no such scenario file"),
        (["knobs", "--set", "cluster.nope=1"], "scenario error: cluster.nope: unknown field"),
    ],
)
def test_bad_scenarios_exit_2_with_one_line(
    argv: list[str], expected: str, capsys: Capture
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(expected)


def test_bad_usage_exits_2(capsys: Capture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["fly"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_run_writes_the_run_directory_and_prints_the_summary(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sim.runner.build_cluster", toy_world)
    out = tmp_path / "run"
    argv = ["run", "default", "--seed", "9", "--duration", "1s", *_short_args()]
    # --duration comes after the --set overrides, so it wins over SHORT's 2s.
    assert main([*argv, "--out", str(out), "--no-plots", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "produce (sent to acked)" in printed and f"run directory: {out}" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["run"]["seed"], summary["run"]["duration_us"]) == (9, 1_000_000)
    assert sorted(p.name for p in out.iterdir()) == [
        "messages.parquet", "provenance.json", "requests.parquet", "scenario.toml",
        "summary.json", "timeseries.parquet",
    ]  # fmt: skip


def test_a_run_changed_by_set_or_fault_says_so_in_its_description(
    tmp_path: Path,
) -> None:
    """The description titles the plots and the summary: a file's "10 workers" must not
    title a run of 8, so the options that changed the scenario are named in it."""
    argv = ["run", "default", *_short_args(), "--set", "burrow.num_workers=8",
            "--fault", "broker_failure broker=1 at=1s duration=500ms"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "run"), "--no-plots", "--no-progress"]) == 0
    description = json.loads((tmp_path / "run" / "summary.json").read_text())["run"]["description"]
    assert description.startswith(load_scenario("default").description + " [")
    assert "burrow.num_workers=8" in description and "fault broker_failure broker=1" in description
    unchanged = argparse.Namespace(overrides=[], faults=[])
    assert _described(load_scenario("default"), unchanged) == load_scenario("default")


def test_knobs_lists_paths_values_and_help(capsys: Capture) -> None:
    assert main(["knobs", "default", "--set", "cluster.brokers=4"]) == 0
    out = capsys.readouterr().out
    assert any(line.split()[:2] == ["cluster.brokers", "4"] for line in out.splitlines())
    assert "replica.fetch.wait.max.ms" in out


@pytest.mark.parametrize("compiled", [False, True])
def test_bench_reports_engine_overhead_the_scenario_part_and_the_build(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    repeats: list[int] = []

    def scenario_throughput(repeat: int) -> dict[str, float]:
        repeats.append(repeat)
        return {"messages_per_wall_s": 1, "events_per_wall_s": 2, "messages_per_cpu_s": 3}

    def scale_throughput(repeat: int) -> dict[str, float]:
        repeats.append(repeat)
        return {"messages": 9, "messages_per_wall_s": 4, "messages_per_cpu_s": 5}

    monkeypatch.setattr("sim.bench.scenario_throughput", scenario_throughput)
    monkeypatch.setattr("sim.bench.scale_throughput", scale_throughput)
    memory_runs: list[int] = []

    def live_bytes_per_message(scenario: Scenario) -> float:
        memory_runs.append(scenario.simulation.duration)
        return 1234.4

    monkeypatch.setattr("sim.bench.memory.live_bytes_per_message", live_bytes_per_message)
    monkeypatch.setattr(
        "purgatory.compiled.compiled_packages",
        lambda packages: dict.fromkeys(packages, compiled),
    )
    pure_runs: list[list[str]] = []

    def pure_python_figures(args: list[str]) -> dict[str, float]:
        pure_runs.append(args)
        return {"messages_per_cpu_s": 2}

    monkeypatch.setattr("sim.bench.pure_python_figures", pure_python_figures)
    assert main(["bench", "--json", "--events", "3000", "--rounds", "1", "--repeat", "2"]) == 0
    assert repeats == [2, 2]
    report = json.loads(capsys.readouterr().out)
    expected = {
        "engine_events_per_wall_s", "heapq_events_per_wall_s", "engine_overhead_ratio",
        "wheel_events_per_wall_s", "wheel_overhead_ratio", "messages_per_wall_s",
        "events_per_wall_s", "messages_per_cpu_s", "compiled", "bytes_per_message", "scale",
        "host",
    }  # fmt: skip
    if compiled:  # the pure-Python figures beside the compiled ones
        expected |= {"pure_python", "compiled_speedup"}
        assert report["pure_python"] == {"messages_per_cpu_s": 2}
        assert report["compiled_speedup"] == 1.5
        assert pure_runs == [["--events=3000", "--rounds=1", "--repeat=2", "--skip-scale"]]
    assert set(report) == expected
    assert report["scale"] == {"messages": 9, "messages_per_wall_s": 4, "messages_per_cpu_s": 5}
    assert report["bytes_per_message"] == 1234
    assert report["host"] == host()  # what it ran on (sim.bench.host)
    assert memory_runs == [2_000_000]  # the default scenario, shortened to 2 s
    assert report["compiled"] == dict.fromkeys(
        ["purgatory", "replica", "coordinator", "apis", "cluster", "sim"], compiled
    )
    assert report["engine_overhead_ratio"] > 0
    assert (
        main(["bench", "--events", "3000", "--rounds", "1", "--no-pure-python", "--skip-scale"])
        == 0
    )
    captured = capsys.readouterr()
    assert "engine_overhead_ratio: " in captured.out
    assert "messages_per_wall_s: 1" in captured.out
    assert "scale" not in captured.out and "bytes_per_message" not in captured.out
    assert memory_runs == [2_000_000]
    assert len(pure_runs) == compiled


def test_python_dash_m_sim_works() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "sim", "run", "--set", "cluster.brokers=0"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr == "scenario error: cluster.brokers: must be >= 1, got 0\n"
    assert "Traceback" not in completed.stderr


def test_output_piped_to_a_reader_that_stopped_is_no_traceback() -> None:
    """``python -m sim knobs default | head -3``: the reader closes the pipe early; the command
    stops quietly, as Unix tools do, with status 141 (128 + SIGPIPE)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # a reader that has already stopped: every write fails
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "sim", "knobs", "default"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (completed.returncode, completed.stderr) == (141, "")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--set", "producers[0].rate=inf"], "producers[0].rate: expected a finite number"),
        (["--set", "network.client_broker.sigma=1e6"], "network.client_broker.sigma: must be"),
        (["--seed", "-5"], "simulation.seed: must be an integer from 0 to 2**63 - 1"),
        (["--seed", str(2**63)], "simulation.seed: must be an integer from 0 to 2**63 - 1"),
    ],
)
def test_bad_numbers_exit_2_before_simulating(
    argv: list[str], expected: str, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: object) -> None:
        raise AssertionError("the run must not start")

    monkeypatch.setattr("sim.runner.build_cluster", never)
    assert main(["run", *argv, "--duration", "1s", "--set", "simulation.warmup=0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"scenario error: {expected}")


def test_a_file_that_is_not_utf8_exits_2(tmp_path: Path, capsys: Capture) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'description = "caf\xe9"\n')
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"scenario error: {path}: not UTF-8 text (byte 0xe9 at offset 18; "
        "scenario files are UTF-8 TOML)\n"
    )


@pytest.mark.parametrize(
    "override",
    ["cluster.brokers=1000000", "topics[0].partitions=100000000", "producers[0].rate=1e12"],
)
def test_sizes_above_the_limits_exit_2_at_once(override: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "sim", "run", "--set", override],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1
    assert completed.stderr.startswith(f"scenario error: {override.split('=')[0]}: ")
    assert "set simulation.allow_large = true" in completed.stderr


@pytest.mark.parametrize("where", ["file/sub", "file"])
def test_an_output_directory_that_cannot_be_written_exits_2_before_simulating(
    where: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: object) -> None:
        raise AssertionError("the run must not start")

    monkeypatch.setattr("sim.runner.build_cluster", never)
    (tmp_path / "file").write_text("not a directory\n")
    out = tmp_path / where
    assert main(["run", "--out", str(out), *_short_args()]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"output error: {out}: cannot ")
    assert captured.err.endswith(
        "(an output directory must be one this user can create and write in)\n"
    )


def test_log_level_info_says_what_a_run_did_and_warning_says_nothing(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sim.runner.build_cluster", toy_world)
    argv = ["run", "default", "--duration", "1s", *_short_args(), "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "a"), "--log-level", "info"]) == 0
    logged = capsys.readouterr().err.splitlines()
    assert [line.split(" ", 3)[1:3] for line in logged] == [
        ["INFO", "sim.runner:"],
        ["INFO", "sim.output.result:"],  # the plots' CPU time
        ["INFO", "sim.output.result:"],
    ]
    assert "plots written in" in logged[1] and "s of CPU time" in logged[1]
    assert main([*argv, "--out", str(tmp_path / "b")]) == 0  # the default: warning
    assert capsys.readouterr().err == ""


def test_a_bad_log_level_is_bad_usage(capsys: Capture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--log-level", "loud"])
    assert exit_info.value.code == 2
    assert "--log-level: invalid choice: 'loud'" in capsys.readouterr().err

"""``sim run --seeds``: independent replications, each seed's run directory the bytes of a
single run with that seed, and a mean with a 95% t interval per statistic across seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.cli import main
from sim.core.statistics import mean_confidence_interval
from sim.replications import STATISTICS, Statistic

Capture = pytest.CaptureFixture[str]
SHORT = ["--duration", "1s", "--set", "simulation.warmup=200ms", "--set", "producers[0].rate=300",
         "--set", "burrow.commit_interval_ms=200", "--no-plots", "--no-progress"]  # fmt: skip
OUTPUTS = ("messages.parquet", "requests.parquet", "timeseries.parquet", "summary.json")


def test_seeds_write_a_run_directory_per_seed_and_intervals_across_them(
    tmp_path: Path, capsys: Capture
) -> None:
    out = tmp_path / "reps"
    assert main(["run", "default", "--seed", "4", "--seeds", "3", *SHORT, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "send_to_commit_p99_ms" in printed and "3 seeds (4, 5, 6)" in printed
    document = json.loads((out / "replications.json").read_text())
    assert document["seeds"] == [4, 5, 6] and list(document["statistics"]) == list(STATISTICS)
    summaries = [json.loads((out / f"seed-{s}" / "summary.json").read_text()) for s in (4, 5, 6)]
    assert [summary["run"]["seed"] for summary in summaries] == [4, 5, 6]
    p99 = [summary["latency"]["send_to_commit"]["p99_ms"] for summary in summaries]
    stat = document["statistics"]["send_to_commit_p99_ms"]
    interval = mean_confidence_interval(p99)
    assert stat["values"] == p99 and stat["n"] == 3
    assert stat["mean"] == pytest.approx(interval.mean) and stat["ci95"] > 0
    assert stat["ci95"] == pytest.approx(interval.half_width)
    sent = [summary["unfinished"]["sent_after_warmup"] for summary in summaries]
    assert document["statistics"]["sent_after_warmup"]["values"] == sent
    markdown = (out / "replications.md").read_text()
    assert "| send_to_commit_p99_ms | 3 |" in markdown
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["seeds"] == [4, 5, 6]
    # A seed's directory is the run `sim run --seed 5` writes, byte for byte.
    single = tmp_path / "single"
    assert main(["run", "default", "--seed", "5", *SHORT, "--out", str(single)]) == 0
    for name in (*OUTPUTS, "scenario.toml"):
        assert (out / "seed-5" / name).read_bytes() == (single / name).read_bytes(), name


def test_a_list_of_seeds_runs_exactly_those(tmp_path: Path, capsys: Capture) -> None:
    assert main(["run", "default", "--seeds", "9,2", *SHORT, "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "replications.json").read_text())["seeds"] == [9, 2]
    assert sorted(p.name for p in tmp_path.glob("seed-*")) == ["seed-2", "seed-9"]
    assert "seed 9:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("seeds", "extra", "message"),
    [
        ("0", [], "expected a number of seeds >= 1"),
        ("many", [], "expected a number of seeds >= 1"),
        ("1,x", [], "expected seeds (integers >= 0)"),
        ("1,-2", [], "expected seeds (integers >= 0)"),
        ("3,3", [], "a seed is listed twice"),
        ("1,2", ["--seed", "7"], "a list of seeds and --seed together"),
        ("1000000000", [], "1,000,000,000 seeds is above the limit of 10,000"),
        ("3", ["--seed", str(2**63 - 2)], '"3" goes past the largest seed'),
        (f"1,{2**63}", [], "goes past the largest seed, 9223372036854775807"),
    ],
)
def test_bad_seeds_exit_2_in_one_line_before_running(
    tmp_path: Path, capsys: Capture, seeds: str, extra: list[str], message: str
) -> None:
    out = tmp_path / "never"
    assert main(["run", "--seeds", seeds, *extra, *SHORT, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("scenario error: --seeds: ") and message in err
    assert not out.exists()


def test_a_statistic_over_seeds_skips_runs_without_a_value() -> None:
    stat = Statistic.of("commit_p99_ms", [2.0, None, 4.0])
    assert (stat.n, stat.mean) == (2, 3.0)
    assert stat.ci95 == pytest.approx(mean_confidence_interval([2.0, 4.0]).half_width)
    assert Statistic.of("x", [5.0]).ci95 is None and Statistic.of("x", [None]).mean is None


@pytest.mark.parametrize(
    ("first", "second", "holds"),
    [
        (["--seeds", "2"], [], "a replication's output, replications.json"),
        ([], ["--seeds", "2"], "a single run's output, summary.json"),
        (["--seeds", "3"], ["--seeds", "2"], "seed-3/, a seed this run does not have"),
    ],
)
def test_a_run_into_another_kind_of_output_exits_2_and_changes_nothing(
    tmp_path: Path, capsys: Capture, first: list[str], second: list[str], holds: str
) -> None:
    """Writing a single run over a replication directory (or the reverse, or fewer seeds over
    more) would leave a directory that mixes two runs, which `sim compare` and `load_run` read
    without a word: refused in one line before anything runs."""
    assert main(["run", *first, *SHORT, "--out", str(tmp_path)]) == 0
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["run", *second, *SHORT, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"output error: {tmp_path}: holds {holds}")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_the_same_replications_again_into_their_directory_rewrite_it(tmp_path: Path) -> None:
    assert main(["run", "--seeds", "2", *SHORT, "--out", str(tmp_path)]) == 0
    document = (tmp_path / "replications.json").read_bytes()
    assert main(["run", "--seeds", "2", *SHORT, "--out", str(tmp_path)]) == 0
    assert (tmp_path / "replications.json").read_bytes() == document

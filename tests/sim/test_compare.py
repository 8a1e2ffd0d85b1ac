"""``sim compare A B``: B - A per statistic with a 95% interval, paired by seed where A and B
ran the same seeds, Welch otherwise; one line and exit 2 for inputs that do not fit."""

from __future__ import annotations

import csv
import json
import math
import shutil
import statistics
from pathlib import Path

import pytest

from sim.cli import main
from sim.compare import difference
from sim.core.statistics import mean_confidence_interval, t_quantile
from sim.replications import STATISTICS

Capture = pytest.CaptureFixture[str]
SHORT = ["--duration", "1s", "--set", "simulation.warmup=200ms", "--set", "producers[0].rate=300",
         "--set", "burrow.commit_interval_ms=200", "--no-plots", "--no-progress"]  # fmt: skip
SLOW_POOL = ["--set", "burrow.num_workers=1", "--set", "burrow.processing_time.mean=2500us"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Replications of the default pool and of a slow one (seeds 1-3), a slow one on other
    seeds, and a single run."""
    root = tmp_path_factory.mktemp("runs")
    made = {
        "base": ["--seeds", "3"],
        "slow": ["--seeds", "3", *SLOW_POOL],
        "slow_other_seeds": ["--seeds", "11,12", *SLOW_POOL],
        "single": ["--seed", "1"],
    }
    for name, extra in made.items():
        assert main(["run", "default", *SHORT, *extra, "--out", str(root / name)]) == 0
    return {name: root / name for name in made}


def _rows(out: Path) -> dict[str, dict[str, str]]:
    with (out / "compare.csv").open(encoding="utf-8") as file:
        return {row["statistic"]: row for row in csv.DictReader(file)}


def _values(directory: Path, name: str) -> list[float]:
    document = json.loads((directory / "replications.json").read_text())
    return document["statistics"][name]["values"]


def test_same_seeds_are_paired(runs: dict[str, Path], tmp_path: Path, capsys: Capture) -> None:
    out = tmp_path / "cmp"
    assert main(["compare", str(runs["base"]), str(runs["slow"]), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "send_to_commit_p99_ms" in printed and f"comparison: {out}" in printed
    assert sorted(p.name for p in out.iterdir()) == ["compare.csv", "compare.md", "compare.png"]
    rows = _rows(out)
    assert list(rows) == list(STATISTICS)
    a = _values(runs["base"], "send_to_commit_p99_ms")
    b = _values(runs["slow"], "send_to_commit_p99_ms")
    expected = mean_confidence_interval([y - x for x, y in zip(a, b, strict=True)])
    row = rows["send_to_commit_p99_ms"]
    assert (row["method"], row["n"]) == ("paired", "3")
    assert float(row["diff"]) == pytest.approx(expected.mean, abs=5e-4)
    assert float(row["ci95"]) == pytest.approx(expected.half_width, abs=5e-4)
    assert float(row["mean_a"]) == pytest.approx(statistics.fmean(a), abs=5e-4)
    # The producer side is untouched by the consumer's pool: identical, zero-width.
    assert (rows["produce_p99_ms"]["diff"], rows["produce_p99_ms"]["ci95"]) == ("0.000", "0.000")
    assert "![differences](compare.png)" in (out / "compare.md").read_text()


def test_different_seeds_use_welch_and_a_single_run_has_no_interval(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "welch"
    assert main(["compare", str(runs["base"]), str(runs["slow_other_seeds"]), "--out", str(out),
                 "--stat", "*_p99_ms", "--stat", "throughput_msg_s"]) == 0  # fmt: skip
    rows = _rows(out)
    assert list(rows) == [n for n in STATISTICS if n.endswith("_p99_ms")] + ["throughput_msg_s"]
    row = rows["end_to_end_p99_ms"]
    assert (row["method"], row["n"]) == ("welch", "3+2")
    out = tmp_path / "single"
    assert main(["compare", str(runs["single"]), str(runs["base"]), "--out", str(out)]) == 0
    row = _rows(out)["end_to_end_p99_ms"]
    assert (row["method"], row["n"], row["ci95"]) == ("welch", "1+3", "")  # one value in A


def test_welch_interval_by_hand() -> None:
    a, b = {1: 1.0, 2: 2.0, 3: 3.0}, {7: 4.0, 8: 6.0, 9: 8.0, 10: 11.0}
    d = difference("", "x", a, b, paired=False)
    va, vb = statistics.variance(a.values()) / 3, statistics.variance(b.values()) / 4
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    assert d.diff == pytest.approx(statistics.fmean(b.values()) - 2.0)
    assert d.ci95 == pytest.approx(t_quantile(0.975, math.floor(df)) * math.sqrt(va + vb))
    assert d.significant and d.n == "3+4"
    paired = difference("", "x", {1: 1.0, 2: None, 3: 2.0}, {1: 2.0, 2: 5.0, 3: 4.0}, paired=True)
    assert (paired.n, paired.diff) == ("2", 1.5)  # seed 2 has no value in A: not a pair


@pytest.mark.parametrize(
    ("which", "extra", "message"),
    [
        ("empty", [], "not a run directory"),
        ("missing", [], "not a run directory"),
        ("base", ["--stat", "p42_*"], "--stat p42_*: matches no statistic"),
        ("bad_json", [], "cannot be read"),
    ],
)
def test_inputs_that_do_not_fit_exit_2_in_one_line(
    runs: dict[str, Path], tmp_path: Path, capsys: Capture, which: str, extra: list[str],
    message: str,
) -> None:  # fmt: skip
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad_json").mkdir()
    (tmp_path / "bad_json" / "replications.json").write_text("{", encoding="utf-8")
    other = runs["base"] if which == "base" else tmp_path / which
    out = tmp_path / "never"
    assert main(["compare", str(runs["base"]), str(other), *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("compare: ") and message in err
    assert not out.exists()


def test_a_note_names_what_differs_between_the_installations(
    runs: dict[str, Path], tmp_path: Path, capsys: Capture
) -> None:
    other = tmp_path / "other"
    shutil.copytree(runs["base"], other)
    provenance = json.loads((other / "provenance.json").read_text())
    provenance["libraries"]["pyarrow"] = "1.0.0"
    (other / "provenance.json").write_text(json.dumps(provenance))
    out = tmp_path / "cmp"
    assert main(["compare", str(runs["base"]), str(other), "--out", str(out)]) == 0
    version = json.loads((runs["base"] / "provenance.json").read_text())["libraries"]["pyarrow"]
    note = f"note: A and B ran on different installations (pyarrow {version} -> 1.0.0)"
    assert note in capsys.readouterr().out and note in (out / "compare.md").read_text()
    assert main(["compare", str(runs["base"]), str(runs["slow"]), "--out", str(out)]) == 0
    assert "note:" not in capsys.readouterr().out

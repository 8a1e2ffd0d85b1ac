"""Provenance: a run directory records the resolved scenario (which re-runs it), how it was
asked for, and the installation that ran it; the lock file pins that installation."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sim.cli import main
from sim.output.provenance import LIBRARIES, UNKNOWN, environment, git_revision
from sim.scenario import load_scenario
from sim.scenario.writing import scenario_toml
from tests.sim.golden.cases import CASES

ROOT = Path(__file__).resolve().parents[2]
RUN = ["--duration", "1s", "--set", "simulation.warmup=200ms", "--set", "producers[0].rate=300",
       "--set", "burrow.commit_interval_ms=200", "--no-plots", "--no-progress"]  # fmt: skip
OUTPUTS = ("messages.parquet", "requests.parquet", "timeseries.parquet", "summary.json")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_written_scenario_loads_back_equal(case: str, tmp_path: Path) -> None:
    source, overrides = CASES[case]
    scenario = load_scenario(source, [*overrides, "simulation.seed=77"])
    path = tmp_path / "scenario.toml"
    path.write_text(scenario_toml(scenario), encoding="utf-8")
    assert load_scenario(path) == scenario
    assert "\nbase = " not in path.read_text()


def test_the_written_scenario_states_every_knob_with_units() -> None:
    text = scenario_toml(load_scenario("default", ["producers[0].acks=all"]))
    assert 'duration = "1m"' in text and 'batch_size = "16KiB"' in text
    assert "acks = -1" in text and "[burrow.consumer]" in text and "[[producers]]" in text
    assert "allow_large = false" in text  # a default, written out all the same


def test_a_run_directory_re_runs_from_its_scenario_toml_to_the_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["run", "default", "--seed", "5", *RUN, "--out", str(first)]) == 0
    assert main(["run", str(first / "scenario.toml"), "--out", str(second), "--no-plots",
                 "--no-progress"]) == 0  # fmt: skip
    for name in (*OUTPUTS, "scenario.toml"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    provenance = json.loads((first / "provenance.json").read_text())
    assert provenance["scenario"] == "default" and provenance["seed"] == 5
    assert provenance["overrides"] == [
        "simulation.warmup=200ms", "producers[0].rate=300", "burrow.commit_interval_ms=200",
        "simulation.seed=5", "simulation.duration=1s",
    ]  # fmt: skip
    again = json.loads((second / "provenance.json").read_text())
    assert again["overrides"] == [] and again["seed"] == 5
    assert {k: again[k] for k in ("project", "python", "libraries")} == environment()


def test_the_environment_names_versions_and_the_checked_out_revision() -> None:
    env = environment()
    assert env["project"]["version"] == "0.1.0"
    assert sorted(env["libraries"]) == sorted(LIBRARIES)
    assert all(version[0].isdigit() for version in env["libraries"].values())
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    assert env["project"]["git_revision"].removesuffix("-dirty") == head


def test_no_git_or_no_checkout_gives_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert git_revision(tmp_path) == UNKNOWN  # not a work tree
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "inner").mkdir()
    assert git_revision(tmp_path / "inner") == UNKNOWN  # inside some other repository
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on the PATH
    assert git_revision(ROOT) == UNKNOWN
    assert environment()["project"]["git_revision"] == UNKNOWN

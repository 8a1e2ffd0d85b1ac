"""The consume proxy from the command line: a run directory with its table, replications and
comparisons with the proxy's statistics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.cli import main
from sim.compare import compare, read_samples
from sim.output.proxy_summary import PROXY_STATISTICS
from sim.replications import STATISTICS
from sim.sweep.errors import StudyError
from sim.sweep.simulate import check_points
from sim.sweep.study import load_study
from tests.sim.proxy.runs import SHORT


def _short() -> list[str]:
    return [arg for override in SHORT for arg in ("--set", override)] + ["--no-progress"]


def test_sim_run_writes_the_proxy_table_and_prints_its_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", "consume-proxy", *_short(), "--no-plots", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "proxy: sent to acknowledged" in printed and "consume proxy: of the" in printed
    assert (out / "proxy.parquet").is_file()
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert list(summary)[list(summary).index("latency") + 1] == "proxy"
    # A run without the section writes no proxy table and no section.
    plain = tmp_path / "plain"
    overrides = ["--set", "producers[0].rate=300", "--set", "simulation.warmup=500ms"]
    assert main(["run", "acks1", "--duration", "1s", *overrides, "--no-plots",
                 "--no-progress", "--out", str(plain)]) == 0  # fmt: skip
    assert not (plain / "proxy.parquet").exists()
    assert "proxy" not in json.loads((plain / "summary.json").read_text(encoding="utf-8"))


def test_replications_and_comparisons_have_the_proxy_statistics(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["run", "consume-proxy", "--seeds", "2", *_short(), "--no-plots"]
    assert main([*args, "--out", str(a)]) == 0
    assert main([*args, "--set", "proxy.lease_duration_ms=30", "--out", str(b)]) == 0
    document = json.loads((a / "replications.json").read_text(encoding="utf-8"))
    assert list(document["statistics"]) == [*STATISTICS, *PROXY_STATISTICS]
    assert document["statistics"]["proxy_redelivery_rate"]["n"] == 2
    comparison = compare(read_samples(a), read_samples(b), ["proxy_duplicate_rate"])
    (duplicates,) = comparison.differences
    assert duplicates.method == "paired" and duplicates.diff is not None and duplicates.diff > 0


def test_a_study_plotting_proxy_statistics_needs_a_proxy(tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nscenario = "default"\nseeds = 1\n[grid]\n"burrow.num_workers" = [4, 8]\n'
        '[report]\nmetrics = ["proxy_duplicate_rate"]\n',
        encoding="utf-8",
    )
    with pytest.raises(StudyError) as caught:
        check_points(load_study(study))
    assert str(caught.value).endswith(
        "[report] metrics: 'proxy_duplicate_rate' is a consume proxy's statistic, and point 0 "
        "(num_workers=4) has no [proxy] section"
    )
    check_points(load_study("consume-proxy"))  # the bundled study's points all have one

"""``sim compare`` on sweep outputs: points matched by their knob values, paired by seed;
a sweep against a run, or sweeps over other statistics or grids, exit 2 in one line."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

from sim.cli import main
from sim.compare import compare, read_samples
from sim.sweep.statistics import metrics
from tests.sim.sweep.conftest import FinishedSweep

Capture = pytest.CaptureFixture[str]


def _copy(sweep: FinishedSweep, tmp_path: Path, name: str) -> Path:
    copy = tmp_path / name
    shutil.copytree(sweep.out_dir, copy)
    return copy


def test_a_sweep_against_a_shifted_copy_shows_the_shift_per_point(
    finished_sweep: FinishedSweep, tmp_path: Path, capsys: Capture
) -> None:
    shifted = _copy(finished_sweep, tmp_path, "shifted")
    table = pq.read_table(shifted / "per_seed.parquet")
    column = table.column_names.index("commit_p99_ms")
    table = table.set_column(column, "commit_p99_ms", pc.add(table.column(column), 2.5))
    pq.write_table(table, shifted / "per_seed.parquet")
    out = tmp_path / "cmp"
    argv = ["compare", str(finished_sweep.out_dir), str(shifted), "--out", str(out)]
    assert main([*argv, "--stat", "commit_p99_ms", "--stat", "end_to_end_p50_ms"]) == 0
    assert "burrow.num_workers=2, burrow.commit_interval_ms=20" in capsys.readouterr().out
    with (out / "compare.csv").open(encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 4 * 2  # 4 points x 2 statistics
    for row in rows:
        assert (row["method"], row["n"]) == ("paired", "2")
        shift = 2.5 if row["statistic"] == "commit_p99_ms" else 0.0
        assert (float(row["diff"]), float(row["ci95"])) == (shift, 0.0)
        assert row["significant"] == ("*" if shift else "")


def test_sweep_samples_hold_every_per_seed_statistic(finished_sweep: FinishedSweep) -> None:
    samples = read_samples(finished_sweep.out_dir)
    assert samples.kind == "sweep" and list(samples.statistics) == metrics()
    assert len(samples.groups) == 4
    assert all(set(values) == {1, 2} for g in samples.groups.values() for values in g.values())
    assert all(d.diff == 0 for d in compare(samples, samples).differences)


def test_mismatched_sweeps_and_kinds_exit_2_in_one_line(
    finished_sweep: FinishedSweep, tmp_path: Path, capsys: Capture
) -> None:
    fewer = _copy(finished_sweep, tmp_path, "fewer")
    table = pq.read_table(fewer / "per_seed.parquet")
    pq.write_table(table.drop_columns(["warnings"]), fewer / "per_seed.parquet")
    regrid = _copy(finished_sweep, tmp_path, "regrid")
    manifest = json.loads((regrid / "sweep.json").read_text())
    manifest["points"]["3"]["burrow.num_workers"] = 9
    (regrid / "sweep.json").write_text(json.dumps(manifest))
    run = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--duration",
                "1s",
                "--set",
                "simulation.warmup=200ms",
                "--set",
                "producers[0].rate=100",
                "--no-plots",
                "--no-progress",
                "--out",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()  # fmt: skip
    cases = {
        fewer: "hold different statistics (only in A: warnings; only in B: none)",
        regrid: "are sweeps over different grids",
        run: "cannot compare a sweep",
    }
    for other, message in cases.items():
        assert main(["compare", str(finished_sweep.out_dir), str(other),
                     "--out", str(tmp_path / "never")]) == 2  # fmt: skip
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "never").exists()

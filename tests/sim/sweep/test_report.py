"""The sweep report without Spark: a hand-made manifest and summary, rendered as Markdown,
as one self-contained HTML file and as plots of the study's ``[report] metrics``."""

from __future__ import annotations

import base64
import math
import re
from pathlib import Path

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sim.sweep.manifest import FailedRun, KnobInfo, Manifest, TableInfo
from sim.sweep.report import SweepTimings, _dodged, write_report
from sim.sweep.statistics import label, metrics

WORKERS = KnobInfo("burrow.num_workers", "burrow_num_workers", (8, 10, 12))
TRACKING = KnobInfo("burrow.tracking", "burrow_tracking", ("global", "per_partition"))


def _sweep(tmp_path: Path, **report: object) -> tuple[Path, pa.Table]:
    points = {
        i: {WORKERS.name: w, TRACKING.name: t}
        for i, (w, t) in enumerate((w, t) for w in WORKERS.values for t in TRACKING.values)
    }
    manifest = Manifest(
        study="tiny-report",
        description="workers x tracking",
        scenario="default",
        seeds=(1, 2),
        duration_s=3.0,
        fixed={"burrow.commit_interval_ms": 50},
        knobs=(WORKERS, TRACKING),
        points=points,
        report_x=WORKERS.name,
        report_series=TRACKING.name,
        tables={},
        failed=(FailedRun(5, 2, "RuntimeError: a | b"),),
        time_limit_s=None,
        runner="tests:run",
        master="local[2]",
        spark_version="4.0.0",
        wall_s=12.5,
        **report,  # type: ignore[arg-type]
    )
    manifest.write(tmp_path)
    rows: dict[str, list[object]] = {"point_id": list(points), "seeds": [2] * len(points)}
    rows[WORKERS.column] = [p[WORKERS.name] for p in points.values()]
    rows[TRACKING.column] = [p[TRACKING.name] for p in points.values()]
    for metric in metrics():
        # Both tracking modes give the same value: the series coincide.
        rows[metric] = [100.0 + 0.01 * i // 2 for i in points]
        rows[f"{metric}_ci95"] = [0.5] * len(points)
    return tmp_path, pa.table(rows)


def test_the_html_report_is_one_file_with_the_tables_and_the_plots(tmp_path: Path) -> None:
    out, summary = _sweep(tmp_path, report_metrics=("send_to_commit_p99_ms", "never_committed"))
    timings = SweepTimings(
        session_start_s=4.0, job_s=10.0, simulation_s=16.0, slots=2, analysis_s=1.5,
        session_stop_s=0.5,
    )  # fmt: skip
    markdown = write_report(out, summary, timings).read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    # One file: no reference to anything beside it.
    assert not re.search(r'(src|href)="(?!data:)', page)
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    plots = [out / "plots" / "send_to_commit_p99_ms.png", out / "plots" / "never_committed.png"]
    assert [base64.b64decode(i) for i in images] == [p.read_bytes() for p in plots]
    assert sorted(p.name for p in (out / "plots").iterdir()) == sorted(p.name for p in plots)
    # The same tables as the Markdown, as HTML (and the failed run's error, unescaped).
    assert page.count("<table>") == 3 == markdown.count("\n|---|")  # grid, points, failed
    assert "<td>RuntimeError: a | b</td>" in page and "RuntimeError: a \\| b |" in markdown
    assert "<td>100.000 ± 0.500</td>" in page and "| 100.000 ± 0.500 |" in markdown
    assert "<code>burrow.num_workers</code>" in page and "<b>1 failed</b>" in page
    # The fixed cost: 4 + (10 - 16 / 2) + 1.5 + 0.5 = 8 s.
    assert "fixed cost 8.0 s: Spark start-up 4.0 s, job beyond its simulations 2.0 s" in markdown
    assert "Spark shutdown 0.5 s" in page
    assert "kept from an earlier attempt" not in markdown
    resumed = attrs.evolve(timings, kept_runs=6)
    markdown = write_report(out, summary, resumed).read_text(encoding="utf-8")
    assert "Spark shutdown 0.5 s; 6 runs kept from an earlier attempt, not run again" in markdown


def test_plots_follow_the_study_metrics_and_have_reference_lines(tmp_path: Path) -> None:
    out, summary = _sweep(
        tmp_path, report_metrics=("commit_p99_9_ms",), report_references={"commit interval": 50.0}
    )
    write_report(out, summary)
    assert [p.name for p in (out / "plots").iterdir()] == ["commit_p99_9_ms.png"]
    assert "![commit_p99_9_ms](plots/commit_p99_9_ms.png)" in (out / "report.md").read_text()
    assert label("commit_p99_9_ms") == "p99.9 processing-to-commit latency (ms)"


def test_an_old_manifest_without_report_metrics_plots_the_defaults(tmp_path: Path) -> None:
    out, summary = _sweep(tmp_path)
    write_report(out, summary)
    assert len(list((out / "plots").iterdir())) == 7


@pytest.mark.parametrize("log", [False, True])
def test_coinciding_series_are_shifted_apart_symmetrically(log: bool) -> None:
    xs = [8.0, 10.0, 12.0] if not log else [10.0, 100.0, 1000.0]
    shifted = [_dodged(xs, k, 3, log=log) for k in range(3)]
    assert shifted[1] == pytest.approx(xs)
    assert all(a < b < c for a, b, c in zip(*shifted, strict=True))
    scale = math.log10 if log else float  # evenly spaced on the axis drawn
    left, middle, right = (scale(s[0]) for s in shifted)
    assert right - middle == pytest.approx(middle - left)


def test_a_point_whose_every_seed_failed_has_no_records_and_the_report_still_lists_it(
    tmp_path: Path,
) -> None:
    """A point with no finished run has no ``point_id=N`` folder of records: the report reads
    the other points' warnings and lists the failed point's runs under Failed runs."""
    out, summary = _sweep(tmp_path)
    manifest = attrs.evolve(
        Manifest.read(out),
        tables={"run_summary": TableInfo("run_summary", "records/run_summary", 10,
                                         ("point_id", "seed", "warnings"))},
        failed=(FailedRun(5, 1, "TaskTimeLimit: too long"), FailedRun(5, 2, "RuntimeError: x")),
    )  # fmt: skip
    manifest.write(out)
    for point_id in range(5):
        folder = out / "records" / "run_summary" / f"point_id={point_id}"
        folder.mkdir(parents=True)
        warnings = [["consumer burrow fell behind"] if point_id == 4 else [], []]
        pq.write_table(pa.table({"seed": [1, 2], "warnings": warnings}), folder / "all.parquet")
    kept = summary.filter(pc.not_equal(summary["point_id"], 5))
    markdown = write_report(out, kept).read_text(encoding="utf-8")
    assert "consumer burrow fell behind" in markdown
    assert "| 5 | 12 | per_partition | 1 | TaskTimeLimit: too long |" in markdown

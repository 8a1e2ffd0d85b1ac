"""The bundled consume-proxy study on local Spark, shortened: its records include the proxy
table, the analysis computes the proxy's statistics from it (the run summaries' numbers), and
the report tables and plots them."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install -e '.[spark]')")

from pyspark.sql import SparkSession

from sim.sweep.cli import sweep_main
from sim.sweep.statistics import QUANTILES, metrics, proxy_metrics
from sim.sweep.study import load_study
from tests.sim.sweep.conftest import run_cli


def _shortened_study(folder: Path) -> Path:
    """The bundled study with its report, two of its leases, one reader count, one seed and
    2 simulated seconds at 200 jobs/s: two runs of about a second each."""
    bundled = load_study("consume-proxy")
    with open(bundled.origin, "rb") as file:
        document: dict[str, Any] = tomllib.load(file)
    lines = [
        "[study]",
        'name = "consume-proxy-short"',
        'scenario = "consume-proxy"',
        "seeds = 1",
        "duration_s = 2.0",
        "[set]",
        '"simulation.warmup" = "500ms"',
        '"producers[0].rate" = 200.0',
        "[grid]",
        '"proxy.lease_duration_ms" = [30, 2000]',
        '"proxy.readers.count" = [12]',
        "[report]",
        f'x = "{document["report"]["x"]}"',
        f'series = "{document["report"]["series"]}"',
        "metrics = [" + ", ".join(f'"{m}"' for m in document["report"]["metrics"]) + "]",
    ]
    path = folder / "consume-proxy-short.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_consume_proxy_study_runs_on_spark(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "out"
    study = _shortened_study(tmp_path)
    status, stdout, stderr = run_cli(
        sweep_main, [str(study), "--master", "local[2]", "--out", str(out), "--no-progress"]
    )
    assert status == 0, stderr
    assert "proxy" in stdout  # the records line lists the proxy table
    per_seed = pq.read_table(out / "per_seed.parquet").to_pylist()
    assert list(per_seed[0])[2:] == metrics(proxy=True)
    for row in per_seed:
        run = pq.read_table(out / "records" / "run_summary" / f"point_id={row['point_id']}")
        summary = run.to_pylist()[0]
        proxy = pq.read_table(out / "records" / "proxy" / f"point_id={row['point_id']}")
        recent = proxy.filter(proxy.column("sent_us").to_numpy() >= summary["run_warmup_us"])
        deliveries = recent.column("deliveries").to_numpy()
        completions = recent.column("completions").to_numpy()
        delivered, completed = int(np.sum(deliveries > 0)), int(np.sum(completions > 0))
        # The run summary's section and numpy on the records agree with Spark.
        for name in ("redelivery_rate", "duplicate_rate", "expired_leases", "never_committed"):
            assert row[f"proxy_{name}"] == pytest.approx(summary[f"proxy_{name}"], rel=1e-12)
        assert row["proxy_redeliveries"] == int(deliveries.sum()) - delivered
        assert row["proxy_duplicates"] == int(completions.sum()) - completed
        for name in ("send_to_ack", "ack_to_commit", "send_to_commit"):
            for label, _ in QUANTILES:
                ours = row[f"proxy_{name}_{label}_ms"]
                assert ours == pytest.approx(summary[f"proxy_latency_{name}_{label}_ms"])
    short, long = sorted(per_seed, key=lambda r: r["point_id"])
    # A 30 ms lease expires under readers still working; a 2 s lease holds the commit of the
    # records after a forgotten one back past the end of this short run.
    assert short["proxy_duplicate_rate"] > long["proxy_duplicate_rate"]
    assert short["proxy_never_committed"] < long["proxy_never_committed"]
    summary = pq.read_table(out / "summary.parquet")
    assert set(proxy_metrics()) <= set(summary.column_names)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Consume proxy per point" in report
    for metric in load_study(study).report_metrics:
        assert (out / "plots" / f"{metric}.png").is_file()

"""Independent replications: one scenario run with several seeds, one after another,
summarised as a mean and a 95% confidence interval per statistic (``sim run --seeds``).

Each seed's run is an independent replication: the seeds differ and nothing else does. A
run is reduced to :func:`run_statistics`, the per-run statistics a sweep's analysis computes
(:mod:`sim.sweep.analysis`), under the same names and definitions, so runs, replications
and sweeps compare with one another (:mod:`sim.compare`): nearest-rank latency percentiles
of the messages sent after the warmup, throughput, duplicates, commit failures, what never
finished, what was lost (checked against the final leader logs), the number of warnings.
Across seeds a statistic is the mean of the seeds that
have a value (a latency percentile has none when nothing got that far) plus or minus
``t(0.975, n - 1) * s / sqrt(n)`` (:func:`sim.core.statistics.mean_confidence_interval`);
with one value there is no interval.

A replication directory holds ``seed-<S>/`` (a full run directory per seed, provenance
included), ``replications.json`` and ``replications.md`` (the table), and the
``scenario.toml`` and ``provenance.json`` of the whole (its ``seeds`` list; each seed's own
files say how to re-run that seed alone). Tables are written and dropped seed by seed, so
memory holds one run at a time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from sim.core.statistics import mean_confidence_interval
from sim.output import RunResult
from sim.output.proxy_summary import proxy_statistics
from sim.output.summary import LOSS_COUNTS, loss_counts, text_table
from sim.runner import run_scenario
from sim.scenario import Scenario

__all__ = [
    "CONFIDENCE",
    "REPLICATIONS_JSON",
    "STATISTICS",
    "Replications",
    "Statistic",
    "replicate",
    "run_statistics",
    "seed_dir",
]

CONFIDENCE = 0.95
REPLICATIONS_JSON = "replications.json"
REPLICATIONS_MD = "replications.md"

_LATENCIES = ("produce", "end_to_end", "commit", "send_to_commit")
_QUANTILES = (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99_9", "p99.9"))
_UNFINISHED = ("never_acked", "never_delivered", "never_processed", "never_committed")
_COMMIT_API = "OffsetCommit"

STATISTICS: tuple[str, ...] = (
    *(f"{latency}_{q}_ms" for latency in _LATENCIES for q, _ in _QUANTILES),
    "throughput_msg_s",
    "duplicates",
    "commit_failures",
    "sent_after_warmup",
    *_UNFINISHED,
    *LOSS_COUNTS,
    "warnings",
)
"""The per-run statistics, in the order of a sweep's ``per_seed`` columns. A run with a
consume proxy has :data:`~sim.output.proxy_summary.PROXY_STATISTICS` after them, as a sweep
of such runs has."""


def run_statistics(messages: pa.Table, summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The :data:`STATISTICS` of one run, from its messages table and its summary, then, if
    its summary has a ``proxy`` section, the consume proxy's (:func:`proxy_statistics`).

    Latency percentiles (ms), never-finished counts, commit failures and warnings come from
    the summary (:mod:`sim.output.summary`); throughput (messages whose processing finished
    inside [warmup, duration], per second) and duplicates (sent after the warmup) from the
    messages. A latency statistic with no observation is None.
    """
    run = summary["run"]
    warmup, duration = int(run["warmup_us"]), int(run["duration_us"])
    stats: dict[str, float | None] = {}
    for latency in _LATENCIES:
        for q, key in _QUANTILES:
            stats[f"{latency}_{q}_ms"] = summary["latency"][latency][f"{key}_ms"]
    processed = messages.column("processed_us")
    in_window = pc.and_(pc.greater_equal(processed, warmup), pc.less_equal(processed, duration))
    window_s = (duration - warmup) / 1e6
    stats["throughput_msg_s"] = (pc.sum(in_window).as_py() or 0) / window_s
    recent = pc.greater_equal(messages.column("sent_us"), warmup)
    stats["duplicates"] = pc.sum(pc.and_(messages.column("duplicate"), recent)).as_py() or 0
    stats["commit_failures"] = summary["requests"].get(_COMMIT_API, {}).get("errors", 0)
    unfinished = summary["unfinished"]
    stats["sent_after_warmup"] = unfinished["sent_after_warmup"]
    for name in _UNFINISHED:
        stats[name] = unfinished[name]
    stats.update(loss_counts(summary))
    stats["warnings"] = len(summary["warnings"])
    if "proxy" in summary:
        stats.update(proxy_statistics(summary))
    return stats


@attrs.frozen
class Statistic:
    """One statistic across seeds: each seed's value (None: the run had none), their mean and
    the half-width of the 95% interval of the mean (None with fewer than two values)."""

    name: str
    values: tuple[float | None, ...]
    mean: float | None
    ci95: float | None

    @classmethod
    def of(cls, name: str, values: Sequence[float | None]) -> Statistic:
        """The statistic ``name`` over per-seed ``values``."""
        present = [float(v) for v in values if v is not None]
        if len(present) >= 2:
            interval = mean_confidence_interval(present, CONFIDENCE)
            return cls(name, tuple(values), interval.mean, interval.half_width)
        return cls(name, tuple(values), present[0] if present else None, None)

    @property
    def n(self) -> int:
        """How many seeds have a value."""
        return sum(v is not None for v in self.values)


@attrs.frozen
class Replications:
    """The statistics of one scenario over ``seeds`` (values in seed order), plus each seed's
    warnings (seed -> its summary's warnings)."""

    seeds: tuple[int, ...]
    statistics: tuple[Statistic, ...]
    warnings: Mapping[int, tuple[str, ...]] = attrs.field(factory=dict)

    @classmethod
    def of(
        cls,
        seeds: Sequence[int],
        per_seed: Sequence[Mapping[str, float | None]],
        warnings: Mapping[int, Sequence[str]] | None = None,
    ) -> Replications:
        """Replications from each seed's :func:`run_statistics` (same order as ``seeds``):
        the statistics of the first seed, in its order (all seeds ran one scenario)."""
        names = list(per_seed[0]) if per_seed else list(STATISTICS)
        statistics = tuple(
            Statistic.of(name, [stats.get(name) for stats in per_seed]) for name in names
        )
        shown = {seed: tuple(found) for seed, found in (warnings or {}).items()}
        return cls(tuple(seeds), statistics, shown)

    def as_json(self) -> dict[str, Any]:
        """The ``replications.json`` document."""
        return {
            "seeds": list(self.seeds),
            "confidence": CONFIDENCE,
            "statistics": {
                s.name: {"values": list(s.values), "n": s.n, "mean": s.mean, "ci95": s.ci95}
                for s in self.statistics
            },
            "warnings": {str(seed): list(found) for seed, found in self.warnings.items()},
        }

    def rows(self) -> list[list[str]]:
        """The table: a head row, then statistic, n, mean, +-95%, low, high per statistic."""
        rows = [["statistic", "n", "mean", "±95%", "low", "high"]]
        for s in self.statistics:
            low = high = None
            if s.mean is not None and s.ci95 is not None:
                low, high = s.mean - s.ci95, s.mean + s.ci95
            cells = [_number(v) for v in (s.mean, s.ci95, low, high)]
            rows.append([s.name, str(s.n), *cells])
        return rows

    def format_table(self) -> str:
        """The table for the terminal, then each seed's warnings."""
        lines = text_table(self.rows())
        seeds = ", ".join(str(seed) for seed in self.seeds)
        lines.append("")
        lines.append(f"{len(self.seeds)} seeds ({seeds}); mean and 95% confidence interval "
                     "across seeds; latencies in ms")  # fmt: skip
        for seed, found in self.warnings.items():
            lines.extend(f"warning: seed {seed}: {warning}" for warning in found)
        return "\n".join(lines)

    def markdown(self) -> str:
        """``replications.md``: the table as Markdown, then each seed's warnings."""
        rows = self.rows()
        lines = [
            "# Replications",
            "",
            f"Seeds: {', '.join(str(seed) for seed in self.seeds)}. Mean across seeds and the "
            "half-width of its 95% confidence interval (Student t); latencies in ms, of the "
            "messages sent after the warmup.",
            "",
            "| " + " | ".join(rows[0]) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(rows[0]) - 1)) + "|",
            *("| " + " | ".join(row) + " |" for row in rows[1:]),
        ]
        found = [(seed, w) for seed, ws in self.warnings.items() for w in ws]
        if found:
            lines.extend(["", "## Warnings", "", *(f"- seed {s}: {w}" for s, w in found)])
        return "\n".join(lines) + "\n"

    def write(self, directory: Path) -> list[Path]:
        """Write ``replications.json`` and ``replications.md`` into ``directory``."""
        json_path = directory / REPLICATIONS_JSON
        json_path.write_text(json.dumps(self.as_json(), indent=2) + "\n", encoding="utf-8")
        md_path = directory / REPLICATIONS_MD
        md_path.write_text(self.markdown(), encoding="utf-8")
        return [json_path, md_path]


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def seed_dir(directory: Path, seed: int) -> Path:
    """Where seed ``seed``'s run directory goes inside a replication directory."""
    return directory / f"seed-{seed}"


def replicate(
    scenario: Scenario,
    seeds: Sequence[int],
    *,
    progress: bool = False,
    on_result: Callable[[int, Scenario, RunResult], object] | None = None,
) -> Replications:
    """Run ``scenario`` once per seed of ``seeds``, in order, and summarise the runs.

    Each run is ``scenario`` with ``simulation.seed`` set to its seed, so its result is the
    one ``sim run --seed S`` gives. ``on_result(seed, scenario, result)`` is called after each
    run (to write its run directory) before the result is dropped. Raises whatever a run
    raises.
    """
    per_seed: list[dict[str, float | None]] = []
    warnings: dict[int, Sequence[str]] = {}
    for seed in seeds:
        seeded = attrs.evolve(scenario, simulation=attrs.evolve(scenario.simulation, seed=seed))
        result = run_scenario(seeded, progress=progress)
        if on_result is not None:
            on_result(seed, seeded, result)
        per_seed.append(run_statistics(result.messages, result.summary))
        if result.summary["warnings"]:
            warnings[seed] = result.summary["warnings"]
    return Replications.of(seeds, per_seed, warnings)

"""``sim compare A B``: per statistic, the difference B - A with a 95% confidence interval.

A and B are two outputs of the same kind: run directories (``sim run --out``) or replication
directories (``sim run --seeds --out``), which compare with each other, or two sweep output
directories. Each is read as *samples*: per group (the whole run; or each grid point of a
sweep, matched between the sweeps by its knob values), per seed, the per-run statistics of
:mod:`sim.replications` (a sweep's ``per_seed`` table holds the same ones).

For one statistic of one group, with ``a`` and ``b`` the seeds' values:

* **paired** when A and B ran the same seeds: the differences ``b_s - a_s`` of the seeds
  both have a value for, their mean plus or minus ``t(0.975, n - 1) * s / sqrt(n)``. Common
  random numbers make a paired interval far narrower than an unpaired one when the change
  is small;
* **welch** otherwise: ``mean(b) - mean(a)`` plus or minus ``t(0.975, df) * se`` with
  ``se = sqrt(s_a^2 / n_a + s_b^2 / n_b)`` and Welch-Satterthwaite ``df``, rounded down (a
  slightly wider, conservative interval);
* with fewer than two values (pairs) the difference is shown without an interval.

A difference whose interval excludes zero is marked. The comparison is printed and written
to an output directory as ``compare.csv``, ``compare.md`` and ``compare.png`` (each
difference with its interval, relative to A's mean so statistics of different units share an
axis). Inputs that do not fit -- a directory that is none of these, a run against a sweep,
different statistics, sweeps over different grids, a ``--stat`` pattern that matches
nothing -- raise :class:`CompareError`, one line. When the recorded installations differ
(git revision, project, Python or library versions: :mod:`sim.output.provenance`), a note
says so: comparing two revisions of the code is a use, not a mistake, but a changed library
is a cause worth knowing.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pyarrow.parquet as pq

from sim.core.statistics import mean_confidence_interval, t_quantile
from sim.output.provenance import PROVENANCE_NAME
from sim.output.summary import text_table
from sim.replications import CONFIDENCE, REPLICATIONS_JSON, run_statistics
from sim.sweep.errors import SweepError
from sim.sweep.manifest import MANIFEST_NAME, Manifest

__all__ = [
    "PLOTTED",
    "CompareError",
    "Comparison",
    "Difference",
    "Samples",
    "compare",
    "difference",
    "installation_differences",
    "read_samples",
]

PLOTTED = ("*_p99_ms", "throughput_msg_s", "never_committed")
"""The statistics plotted when ``--stat`` names none."""

CSV_HEAD = ("statistic", "mean_a", "mean_b", "diff", "ci95", "low", "high", "significant",
            "method", "n")  # fmt: skip
"""The columns of ``compare.csv`` (after ``point`` for sweeps): the printed table's."""

Values = Mapping[int, float | None]
"""One statistic of one group: seed -> value (None: that run had no value)."""


class CompareError(ValueError):
    """The inputs of a comparison do not fit; ``str(error)`` is one line."""


@attrs.frozen
class Samples:
    """What one input holds: its kind (``run``, ``sweep``), its statistic names, and per
    group, per statistic, each seed's value."""

    path: Path
    kind: str
    statistics: tuple[str, ...]
    groups: Mapping[str, Mapping[str, Values]]
    environment: Mapping[str, Any] = attrs.field(factory=dict)
    """The installation that made it (:func:`sim.output.provenance.environment`), if known."""


def read_samples(path: Path) -> Samples:
    """The samples of a run, replication or sweep output directory.

    Raises CompareError if ``path`` is none of them or cannot be read.
    """
    if (path / MANIFEST_NAME).is_file():
        return _sweep_samples(path)
    if (path / REPLICATIONS_JSON).is_file():
        document = _json(path / REPLICATIONS_JSON)
        seeds = document["seeds"]
        by_stat = {
            name: dict(zip(seeds, stat["values"], strict=True))
            for name, stat in document["statistics"].items()
        }
        return Samples(path, "run", tuple(by_stat), {"": by_stat}, _environment(path))
    if (path / "summary.json").is_file() and (path / "messages.parquet").is_file():
        summary = _json(path / "summary.json")
        messages = pq.read_table(path / "messages.parquet")
        stats = run_statistics(messages, summary)
        seed = int(summary["run"]["seed"])
        groups = {"": {name: {seed: value} for name, value in stats.items()}}
        return Samples(path, "run", tuple(stats), groups, _environment(path))
    raise CompareError(
        f"{path}: not a run directory (summary.json and messages.parquet), a replication "
        f"directory ({REPLICATIONS_JSON}) or a sweep output ({MANIFEST_NAME})"
    )


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CompareError(f"{path}: cannot be read ({error})") from None


def _environment(path: Path) -> Mapping[str, Any]:
    """The environment part of ``path/provenance.json``; empty if there is none."""
    if not (path / PROVENANCE_NAME).is_file():
        return {}
    document = _json(path / PROVENANCE_NAME)
    return {key: document[key] for key in ("project", "python", "libraries") if key in document}


def installation_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What differs between two environments, e.g. ``pyarrow 26.0.1 -> 25.0.0``; nothing
    when either is unknown."""
    if not a or not b:
        return []
    pairs = {
        "git revision": (a["project"]["git_revision"], b["project"]["git_revision"]),
        "version": (a["project"]["version"], b["project"]["version"]),
        "Python": (a["python"], b["python"]),
        **{name: (version, b["libraries"].get(name)) for name, version in a["libraries"].items()},
    }
    return [f"{name} {old} -> {new}" for name, (old, new) in pairs.items() if old != new]


def _sweep_samples(path: Path) -> Samples:
    try:
        manifest = Manifest.read(path)
    except SweepError as error:
        raise CompareError(str(error)) from None
    per_seed = path / "per_seed.parquet"
    if not per_seed.is_file():
        raise CompareError(f"{path}: a sweep without per-seed statistics (no run finished?)")
    rows = pq.read_table(per_seed).to_pylist()
    names = tuple(k for k in rows[0] if k not in ("point_id", "seed")) if rows else ()
    groups: dict[str, dict[str, dict[int, float | None]]] = {}
    for row in rows:
        knobs = manifest.points[int(row["point_id"])]
        label = ", ".join(f"{name}={json.dumps(value)}" for name, value in knobs.items())
        group = groups.setdefault(label, {name: {} for name in names})
        for name in names:
            group[name][int(row["seed"])] = row[name]
    return Samples(path, "sweep", names, groups, manifest.environment)


@attrs.frozen
class Difference:
    """B - A for one statistic of one group: the means, the difference, the half-width of
    its 95% interval (None when there are too few values), the method and sample sizes."""

    group: str
    statistic: str
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    ci95: float | None
    method: str
    n: str

    @property
    def low(self) -> float | None:
        return None if self.diff is None or self.ci95 is None else self.diff - self.ci95

    @property
    def high(self) -> float | None:
        return None if self.diff is None or self.ci95 is None else self.diff + self.ci95

    @property
    def significant(self) -> bool:
        """Whether the interval excludes zero."""
        low, high = self.low, self.high
        return low is not None and high is not None and (low > 0 or high < 0)

    @property
    def relative(self) -> tuple[float, float] | None:
        """(difference, half-width) in percent of A's mean; None without both or if A's mean
        is zero."""
        if self.diff is None or self.ci95 is None or not self.mean_a:
            return None
        scale = 100 / abs(self.mean_a)
        return self.diff * scale, self.ci95 * scale


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def difference(group: str, statistic: str, a: Values, b: Values, *, paired: bool) -> Difference:
    """B - A for one statistic (see the module docstring); ``paired`` when both ran the same
    seeds."""
    a_values = [float(v) for v in a.values() if v is not None]
    b_values = [float(v) for v in b.values() if v is not None]
    mean_a, mean_b = _mean(a_values), _mean(b_values)
    diff = None if mean_a is None or mean_b is None else mean_b - mean_a
    if paired:
        pairs = []
        for seed, value in a.items():
            other = b.get(seed)
            if value is not None and other is not None:
                pairs.append(float(other) - float(value))
        if len(pairs) < 2:
            return Difference(
                group, statistic, mean_a, mean_b, diff, None, "paired", str(len(pairs))
            )
        interval = mean_confidence_interval(pairs, CONFIDENCE)
        return Difference(
            group, statistic, mean_a, mean_b, interval.mean, interval.half_width, "paired",
            str(len(pairs)),
        )  # fmt: skip
    n = f"{len(a_values)}+{len(b_values)}"
    if len(a_values) < 2 or len(b_values) < 2:
        return Difference(group, statistic, mean_a, mean_b, diff, None, "welch", n)
    va = statistics.variance(a_values) / len(a_values)
    vb = statistics.variance(b_values) / len(b_values)
    se = math.sqrt(va + vb)
    if se == 0:
        return Difference(group, statistic, mean_a, mean_b, diff, 0.0, "welch", n)
    df = (va + vb) ** 2 / (va**2 / (len(a_values) - 1) + vb**2 / (len(b_values) - 1))
    half = t_quantile(0.5 + CONFIDENCE / 2, max(1, math.floor(df))) * se
    return Difference(group, statistic, mean_a, mean_b, diff, half, "welch", n)


@attrs.frozen
class Comparison:
    """Every difference of B against A, in group then statistic order."""

    a: Path
    b: Path
    differences: tuple[Difference, ...]
    installation: tuple[str, ...] = ()
    """What differs between the installations that made A and B (see
    :func:`installation_differences`)."""

    def rows(self) -> list[list[str]]:
        """The table: head, then one row per difference (``*``: interval excludes zero)."""
        grouped = any(d.group for d in self.differences)
        head = ["statistic", "A", "B", "B - A", "±95%", "low", "high", "", "method", "n"]
        rows = [["point", *head] if grouped else head]
        for d in self.differences:
            cells = [_number(v) for v in (d.mean_a, d.mean_b, d.diff, d.ci95, d.low, d.high)]
            row = [d.statistic, *cells, "*" if d.significant else "", d.method, d.n]
            rows.append([d.group, *row] if grouped else row)
        return rows

    def format_table(self) -> str:
        """The table for the terminal, with what A and B are."""
        lines = [f"A: {self.a}", f"B: {self.b}", "", *text_table(self.rows()), ""]
        lines.append(
            "B - A with its 95% confidence interval (* excludes zero); paired by seed where A "
            "and B ran the same seeds, Welch otherwise; latencies in ms"
        )
        if self.installation:
            lines.append(_installation_note(self.installation))
        return "\n".join(lines)

    def write(self, directory: Path, *, plotted: Sequence[str] = PLOTTED) -> list[Path]:
        """Write ``compare.csv``, ``compare.md`` and ``compare.png`` (the statistics matching
        ``plotted``) into ``directory``; return their paths."""
        rows = self.rows()
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        grouped = len(rows[0]) > len(CSV_HEAD)
        writer.writerow(["point", *CSV_HEAD] if grouped else CSV_HEAD)
        for row in rows[1:]:
            writer.writerow(["" if cell == "-" else cell for cell in row])
        csv_path = directory / "compare.csv"
        csv_path.write_text(buffer.getvalue(), encoding="utf-8")
        md_path = directory / "compare.md"
        md_path.write_text(self._markdown(rows), encoding="utf-8")
        png_path = directory / "compare.png"
        self._plot(png_path, plotted)
        return [csv_path, md_path, png_path]

    def _markdown(self, rows: list[list[str]]) -> str:
        lines = [
            "# Comparison",
            "",
            f"A: `{self.a}`; B: `{self.b}`. B - A with its 95% confidence interval (**bold**: "
            "the interval excludes zero); paired by seed where A and B ran the same seeds, "
            "Welch otherwise. Latencies in ms.",
            "",
            *([_installation_note(self.installation), ""] if self.installation else []),
            "![differences](compare.png)",
            "",
            "| " + " | ".join(rows[0]) + " |",
            "|" + "|".join("---" for _ in rows[0]) + "|",
        ]
        column = rows[0].index("B - A")
        for row, d in zip(rows[1:], self.differences, strict=True):
            if d.significant:
                row = [*row[:column], f"**{row[column]}**", *row[column + 1 :]]
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines) + "\n"

    def _plot(self, path: Path, plotted: Sequence[str]) -> None:
        import matplotlib  # loads slowly: only when writing

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        shown = [
            d for d in self.differences
            if d.relative is not None and _matches(d.statistic, plotted)
        ]  # fmt: skip
        figure, axes = plt.subplots(figsize=(8, 1.2 + 0.3 * max(len(shown), 1)))
        labels = [f"{d.group}: {d.statistic}" if d.group else d.statistic for d in shown]
        for row, d in enumerate(shown):
            value, half = d.relative or (0.0, 0.0)
            colour = "tab:red" if d.significant else "tab:blue"
            axes.errorbar(value, row, xerr=half, fmt="o", color=colour, capsize=3)
        axes.axvline(0, color="grey", linewidth=1)
        axes.set_yticks(range(len(shown)), labels, fontsize=8)
        axes.invert_yaxis()
        axes.set_xlabel("B - A, % of A's mean (95% interval; red: excludes zero)")
        if not shown:
            axes.text(0.5, 0.5, "no difference with an interval to plot", ha="center",
                      transform=axes.transAxes)  # fmt: skip
        axes.set_title(f"B ({self.b.name}) vs A ({self.a.name})", fontsize=10)
        figure.tight_layout()
        figure.savefig(path, dpi=100, metadata={"Software": None})
        plt.close(figure)


def _installation_note(changes: Sequence[str]) -> str:
    return (
        "note: A and B ran on different installations (" + ", ".join(changes) + "): a "
        "difference may come from the code or the libraries as well as the inputs"
    )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def compare(a: Samples, b: Samples, patterns: Sequence[str] = ()) -> Comparison:
    """B - A for every statistic (those matching ``patterns`` if any) of every group.

    Raises CompareError when A and B are of different kinds, hold different statistics or
    groups, or a pattern matches no statistic.
    """
    if a.kind != b.kind:
        raise CompareError(f"cannot compare a {a.kind} ({a.path}) with a {b.kind} ({b.path})")
    if set(a.statistics) != set(b.statistics):
        only_a = sorted(set(a.statistics) - set(b.statistics))
        only_b = sorted(set(b.statistics) - set(a.statistics))
        raise CompareError(
            f"{a.path} and {b.path} hold different statistics (only in A: "
            f"{', '.join(only_a) or 'none'}; only in B: {', '.join(only_b) or 'none'})"
        )
    if set(a.groups) != set(b.groups):
        missing = sorted(set(a.groups) ^ set(b.groups))
        raise CompareError(
            f"{a.path} and {b.path} are sweeps over different grids (a point only one has: "
            f"{missing[0]})"
        )
    names = [n for n in a.statistics if not patterns or _matches(n, patterns)]
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(n, pattern) for n in a.statistics):
            raise CompareError(f"--stat {pattern}: matches no statistic")
    differences = []
    for group in a.groups:
        for name in names:
            values_a, values_b = a.groups[group][name], b.groups[group][name]
            paired = set(values_a) == set(values_b)
            differences.append(difference(group, name, values_a, values_b, paired=paired))
    installation = tuple(installation_differences(a.environment, b.environment))
    return Comparison(a.path, b.path, tuple(differences), installation)

"""A finished sweep's outputs as pandas DataFrames, for notebooks: :func:`load_sweep`.

It reads what the sweep wrote (``sweep.json``, ``summary.parquet``, ``per_seed.parquet``,
``runs.csv`` and the records under ``records/``) with pyarrow, without Spark, and converts
the tables as :mod:`sim.output.frames` does: nullable integers (a statistic with no value is
``<NA>``, e.g. a ``_ci95`` with one seed, or a percentile of a latency nothing reached),
``category`` for strings. Knob columns keep their type (integers ``Int64``, floats
``float64``, strings ``category``); their names are the manifest's knob columns
(``burrow_num_workers`` for ``burrow.num_workers``; :attr:`SweepResult.knobs` maps them).
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pandas as pd
import pyarrow as pa
import pyarrow.csv
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from sim.output.frames import to_frame
from sim.sweep.errors import SweepError
from sim.sweep.manifest import Manifest

__all__ = ["SweepResult", "load_sweep"]


@attrs.frozen(eq=False)
class SweepResult:
    """A finished, analysed sweep in ``directory``.

    ``summary``: one row per point, the knob columns, ``seeds``, then every statistic (mean
    over seeds) and its ``_ci95`` half-width; ``per_seed``: the same statistics per run
    (``point_id``, ``seed``); ``runs``: one row per run with its rows per table, wall time
    and ``error`` (empty when it finished). ``manifest`` is ``sweep.json``.
    """

    directory: Path
    manifest: Manifest
    summary: pd.DataFrame
    per_seed: pd.DataFrame
    runs: pd.DataFrame

    @property
    def knobs(self) -> dict[str, str]:
        """Grid knob name (``burrow.num_workers``) -> its column (``burrow_num_workers``)."""
        return {knob.name: knob.column for knob in self.manifest.knobs}

    @property
    def tables(self) -> list[str]:
        """Names of the record tables :meth:`records` reads, e.g. ``messages``."""
        return sorted(self.manifest.tables)

    def records(self, table: str) -> pd.DataFrame:
        """Every finished run's rows of record table ``table`` (one of :attr:`tables`), ordered
        by point then seed, with ``point_id``, ``seed`` and the knob columns in front.

        Raises SweepError for a table the sweep did not record.
        """
        info = self.manifest.tables.get(table)
        if info is None:
            raise SweepError(f"{self.directory}: no record table {table!r} (tables: "
                             f"{', '.join(self.tables)})")  # fmt: skip
        point_id = ds.partitioning(pa.schema([("point_id", pa.int32())]), flavor="hive")
        data = ds.dataset(self.directory / info.path, format="parquet", partitioning=point_id)
        rows = data.to_table().sort_by([("point_id", "ascending"), ("seed", "ascending")])
        front = ["point_id", *(name for name in rows.column_names if name != "point_id")]
        return to_frame(rows.select(front))


def load_sweep(directory: str | Path) -> SweepResult:
    """The outputs of the sweep in ``directory`` (``sim sweep --out``) as DataFrames.

    Raises SweepError if ``directory`` holds no finished sweep (no ``sweep.json``) or no
    analysis (no ``summary.parquet``: run ``sim sweep`` again to finish it).
    """
    out_dir = Path(directory)
    manifest = Manifest.read(out_dir)
    if not (out_dir / "summary.parquet").is_file():
        raise SweepError(f"{out_dir}: the sweep has no summary.parquet (its analysis did not "
                         "run): run the same sim sweep command again to finish it")  # fmt: skip
    return SweepResult(
        directory=out_dir,
        manifest=manifest,
        summary=to_frame(pq.read_table(out_dir / "summary.parquet")),
        per_seed=to_frame(pq.read_table(out_dir / "per_seed.parquet")),
        runs=to_frame(pyarrow.csv.read_csv(out_dir / "runs.csv")),
    )

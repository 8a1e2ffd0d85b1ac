"""A run's tables as pandas DataFrames, for notebooks: :func:`to_frame` and
:func:`latency_frame`.

The Arrow tables stay the source of truth (they are what is written and compared byte for
byte); a DataFrame is a view made on request, with dtypes that keep what the table says:

* integer columns become pandas' nullable integers of the same width (``Int64``, ``Int32``,
  ``Int16``): a message never committed has ``<NA>`` in ``committed_us``, not a float NaN
  that would turn microseconds into inexact floats;
* booleans become the nullable ``boolean``; floats stay ``float64`` (a time-series value
  that cannot be known is NaN, as in the table);
* strings (producer, topic, API, client, source, metric names) become ``category``, whose
  categories are the distinct names in order of first appearance.

Times stay integers of virtual microseconds since the run's start (``*_us`` columns): they are
exact, and a virtual clock has no date, so datetimes would invent one; divide by 1000 for
milliseconds, or ``pd.to_timedelta(frame.sent_us, unit="us")`` when a timedelta is wanted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import pyarrow as pa

__all__ = ["latency_frame", "to_frame"]

_NULLABLE: dict[pa.DataType, Any] = {
    pa.int8(): pd.Int8Dtype(),
    pa.int16(): pd.Int16Dtype(),
    pa.int32(): pd.Int32Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


def to_frame(table: pa.Table) -> pd.DataFrame:
    """``table`` as a DataFrame with the dtypes of the module docstring (a fresh copy; a
    ``point_id`` or knob column of a sweep's records follows the same rules)."""
    frame = table.to_pandas(types_mapper=_NULLABLE.get, strings_to_categorical=True)
    assert isinstance(frame, pd.DataFrame)
    return frame


def latency_frame(latency: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """A summary's ``latency`` section (or one request kind's statistics) as a DataFrame:
    one row per statistic (``produce``, ``end_to_end``, ``commit``, ``send_to_commit``),
    ``count`` as ``Int64`` and the ``*_ms`` columns as ``float64``, NaN where the statistic
    is empty."""
    frame = pd.DataFrame.from_dict(latency, orient="index")
    frame.index.name = "latency"
    return frame.astype({"count": "Int64"} | {c: "float64" for c in frame.columns if c != "count"})

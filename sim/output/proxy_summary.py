"""The ``proxy`` section of a run summary: how the consume proxy's deliveries went.

Over the records sent at or after the warmup (rows of the run's ``proxy`` table,
:mod:`sim.output.proxy_recorder`), as the other latency statistics:

* ``records``; ``delivered`` (handed out at least once) and ``deliveries`` (hand-outs);
  ``redeliveries`` = deliveries - delivered, and ``redelivery_rate`` = redeliveries /
  delivered: the extra deliveries per record handed out;
* ``completed`` (processed to completion by at least one reader), ``duplicates`` (completions
  beyond the first: a record processed by more than one reader) and ``duplicate_rate`` =
  duplicates / completed;
* how deliveries ended: ``expired_leases``, ``cancels``, ``late_answers`` (acknowledgements
  and cancels refused because the delivery had ended), ``archived`` records;
* ``never_acknowledged`` and ``never_committed`` by the end of the run, and ``states``, the
  count of each final state (``unknown``: no offset, the produce was never acknowledged);
* ``latency``: ``send_to_ack`` (sent to acknowledged), ``ack_to_commit`` and
  ``send_to_commit`` (to the data-topic commit), each as :func:`latency_stats`.

A rate is None when its denominator is 0. :func:`proxy_statistics` flattens the section into
the names a sweep and ``sim run --seeds`` use (:data:`PROXY_STATISTICS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sim.output.latency import PERCENTILES, column_values, latency_stats
from sim.output.proxy_recorder import STATES

__all__ = [
    "PROXY_COUNTS",
    "PROXY_LATENCIES",
    "PROXY_STATISTICS",
    "proxy_latency_rows",
    "proxy_lines",
    "proxy_section",
    "proxy_statistics",
]

PROXY_LATENCIES: tuple[tuple[str, str, str], ...] = (
    ("send_to_ack", "send_to_ack_latency_us", "proxy: sent to acknowledged"),
    ("ack_to_commit", "ack_to_commit_latency_us", "proxy: acknowledged to committed"),
    ("send_to_commit", "send_to_commit_latency_us", "proxy: sent to committed"),
)
"""(section name, proxy table column, label) of the proxy's latencies."""

PROXY_COUNTS = (
    "redelivery_rate",
    "duplicate_rate",
    "redeliveries",
    "duplicates",
    "expired_leases",
    "cancels",
    "archived",
    "never_acknowledged",
    "never_committed",
)
"""The section's keys that a sweep reports, as ``proxy_<key>``."""

_QUANTILES = tuple((name.replace(".", "_"), name) for name, _, _ in PERCENTILES)

PROXY_STATISTICS: tuple[str, ...] = (
    *(f"proxy_{name}" for name in PROXY_COUNTS),
    *(f"proxy_{name}_{q}_ms" for name, _, _ in PROXY_LATENCIES for q, _ in _QUANTILES),
)
"""The per-run statistics of the proxy, in column order (a sweep's and ``--seeds``'s)."""


def _sum(table: pa.Table, name: str) -> int:
    return int(pc.sum(table.column(name)).as_py() or 0)


def _positive(table: pa.Table, name: str) -> int:
    return int(pc.sum(pc.greater(table.column(name), 0)).as_py() or 0)


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def proxy_section(proxy: pa.Table, warmup_us: int) -> dict[str, Any]:
    """The ``proxy`` section (see the module docstring) of the ``proxy`` table."""
    recent = proxy.filter(pc.greater_equal(proxy.column("sent_us"), warmup_us))
    delivered = _positive(recent, "deliveries")
    redeliveries = _sum(recent, "deliveries") - delivered
    completed = _positive(recent, "completions")
    duplicates = _sum(recent, "completions") - completed
    states = recent.column("state")
    return {
        "records": recent.num_rows,
        "delivered": delivered,
        "deliveries": delivered + redeliveries,
        "redeliveries": redeliveries,
        "redelivery_rate": _rate(redeliveries, delivered),
        "completed": completed,
        "duplicates": duplicates,
        "duplicate_rate": _rate(duplicates, completed),
        "expired_leases": _sum(recent, "expired"),
        "cancels": _sum(recent, "cancels"),
        "late_answers": _sum(recent, "late_answers"),
        "archived": int(pc.sum(recent.column("archived")).as_py() or 0),
        "never_acknowledged": recent.column("acknowledged_us").null_count,
        "never_committed": recent.column("committed_us").null_count,
        "states": {
            **{name: int(pc.sum(pc.equal(states, name)).as_py() or 0) for name in STATES},
            "unknown": states.null_count,
        },
        "latency": {
            name: latency_stats(column_values(recent, column, None))
            for name, column, _ in PROXY_LATENCIES
        },
    }


def proxy_statistics(summary: Mapping[str, Any]) -> dict[str, float | int | None]:
    """The :data:`PROXY_STATISTICS` of a run summary; None each without a ``proxy`` section."""
    section = summary.get("proxy")
    if section is None:
        return dict.fromkeys(PROXY_STATISTICS)
    stats: dict[str, float | int | None] = {f"proxy_{k}": section[k] for k in PROXY_COUNTS}
    for name, _, _ in PROXY_LATENCIES:
        for q, key in _QUANTILES:
            stats[f"proxy_{name}_{q}_ms"] = section["latency"][name][f"{key}_ms"]
    return stats


def proxy_latency_rows(summary: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, statistics) rows of the proxy's latencies for the summary table; none
    without a ``proxy`` section."""
    section = summary.get("proxy")
    if section is None:
        return []
    return [(label, section["latency"][name]) for name, _, label in PROXY_LATENCIES]


def _share(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.2f}%"


def proxy_lines(summary: Mapping[str, Any]) -> list[str]:
    """The lines the summary table gives the ``proxy`` section; none without one."""
    section = summary.get("proxy")
    if section is None:
        return []
    states = ", ".join(f"{name} {count}" for name, count in section["states"].items() if count)
    return [
        f"consume proxy: of the {section['records']} records sent after the warmup, "
        f"{section['delivered']} delivered in {section['deliveries']} deliveries (redelivery "
        f"rate {_share(section['redelivery_rate'])}), {section['completed']} processed to "
        f"completion, {section['duplicates']} more times by another reader (duplicate rate "
        f"{_share(section['duplicate_rate'])}); {section['expired_leases']} leases expired, "
        f"{section['cancels']} cancels, {section['late_answers']} late acknowledgements or "
        f"cancels, {section['archived']} archived",
        f"by the end: never acknowledged {section['never_acknowledged']}, never committed "
        f"{section['never_committed']}; final states: {states or 'none'}",
    ]

"""The run summary: counts and latency percentiles, as a JSON-ready dict and a terminal table.

Latency statistics cover messages *sent* (and requests sent) at or after the warmup; the
``messages`` counts cover the whole run. Latencies only exist for messages that reached the
later event, so a statistic over them cannot show what never got there: the ``unfinished``
section counts, among the messages sent at or after the warmup, those that by the end of the
run were never acknowledged successfully (still in the producer, or failed), never delivered,
never processed and never committed. Percentiles are nearest-rank (the smallest observed value
with at least p% of the observations at or below it), so every reported value was observed.
Latencies are reported in milliseconds with microsecond resolution.

The ``loss`` section checks every message against the final leader logs (the recorder's
``log_copies`` and ``retained_out`` columns), per acks level (``acks_all``, ``acks_1``,
``acks_0``), over the whole run: ``sent``; ``acked`` (acks=0: ``written``, handed to the
connection, which is all an acks=0 producer learns); ``failed`` (an error came back);
``lost_acked`` (acks=0: ``sent_absent``), acknowledged (written) but absent from the final
leader log and not deleted by retention; ``retained_out``, absent because retention deleted
it; ``duplicated``, in the log more than once. It is None when the run reported no final logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sim.output.health import (
    arrival_rates,
    empty_latency_warnings,
    fell_behind_warnings,
    loss_warnings,
)
from sim.output.latency import PERCENTILES, column_values, latency_stats
from sim.output.proxy_summary import proxy_latency_rows, proxy_lines, proxy_section

__all__ = [
    "LATENCIES",
    "LOSS_COUNTS",
    "LOSS_LEVELS",
    "PERCENTILES",
    "UNFINISHED",
    "format_summary",
    "latency_stats",
    "loss_counts",
    "summarize",
    "text_table",
]

LATENCIES: tuple[tuple[str, str], ...] = (
    ("produce", "produce_latency_us"),
    ("end_to_end", "end_to_end_latency_us"),
    ("commit", "commit_latency_us"),
    ("send_to_commit", "send_to_commit_latency_us"),
)
"""(summary name, messages column) of the per-message latencies. ``commit`` is processing to
commit; ``send_to_commit`` is sent to committed."""

_LABELS = {
    "produce": "produce (sent to acked)",
    "end_to_end": "end-to-end (sent to delivered)",
    "commit": "commit (processed to committed)",
    "send_to_commit": "send-to-commit (sent to committed)",
}

UNFINISHED: tuple[tuple[str, str], ...] = (
    ("never_acked", "acked_us"),
    ("never_delivered", "delivered_us"),
    ("never_processed", "processed_us"),
    ("never_committed", "committed_us"),
)
"""(count name, messages column that stays null) of the ``unfinished`` section;
``never_acked`` also counts failed sends (an ``ack_error`` other than 0)."""


LOSS_LEVELS: tuple[tuple[str, int], ...] = (("acks_all", -1), ("acks_1", 1), ("acks_0", 0))
"""(``loss`` section key, the producer's ``acks``)."""


def _count(table: pa.Table, name: str) -> int:
    return int(table.num_rows - table.column(name).null_count)


def summarize(
    messages: pa.Table,
    requests: pa.Table,
    samples: pa.Table,
    *,
    run: dict[str, Any],
    warmup_us: int,
    duration_us: int,
    warnings: Sequence[str] = (),
    proxy: pa.Table | None = None,
) -> dict[str, Any]:
    """The summary dict of a run; ``run`` (seed, duration...) is copied in as is. With the
    ``proxy`` table of a run with a consume proxy, a ``proxy`` section follows ``latency``
    (:mod:`sim.output.proxy_summary`).

    Its ``warnings`` list holds ``warnings`` (e.g. the world's, about faults), then those
    :mod:`sim.output.health` finds in the tables and the time-series ``samples``: lost
    acknowledged messages, empty latency statistics and why, consumers and producers that fell
    behind.
    """
    after_warmup = pc.greater_equal(messages.column("sent_us"), warmup_us)
    acked_ok = pc.and_(pc.equal(messages.column("ack_error"), 0), after_warmup)
    failed = pc.sum(pc.not_equal(messages.column("ack_error"), 0)).as_py() or 0
    summary: dict[str, Any] = {"run": run}
    summary["messages"] = {
        "sent": messages.num_rows,
        "acked": _count(messages, "acked_us") - failed,
        "failed": failed,
        "delivered": _count(messages, "delivered_us"),
        "processed": _count(messages, "processed_us"),
        "committed": _count(messages, "committed_us"),
        "duplicates": pc.sum(messages.column("duplicate")).as_py() or 0,
    }
    latency: dict[str, Any] = {}
    for name, column in LATENCIES:
        mask = acked_ok if name == "produce" else after_warmup
        latency[name] = latency_stats(column_values(messages, column, mask))
    summary["unfinished"] = _unfinished(messages, after_warmup)
    summary["loss"] = _loss(messages)
    summary["latency"] = latency
    if proxy is not None:
        summary["proxy"] = proxy_section(proxy, warmup_us)
    per_api: dict[str, Any] = {}
    recent = pc.greater_equal(requests.column("sent_us"), warmup_us)
    for api in sorted(pc.unique(requests.column("api")).to_pylist()):
        mask = pc.and_(recent, pc.equal(requests.column("api"), api))
        errors = pc.sum(pc.and_(mask, pc.not_equal(requests.column("error"), 0))).as_py() or 0
        per_api[api] = {
            "errors": errors,
            **{
                name: latency_stats(column_values(requests, f"{name}_us", mask))
                for name in ("round_trip", "queue_time", "produce_purgatory", "fetch_purgatory")
            },
        }
    summary["requests"] = per_api
    summary["warnings"] = [
        *warnings,
        *loss_warnings(summary["loss"]),
        *empty_latency_warnings(latency, summary["unfinished"]),
        *fell_behind_warnings(
            samples, warmup_us, duration_us, arrival_rates(messages, warmup_us, duration_us)
        ),
    ]
    return summary


def _unfinished(messages: pa.Table, after_warmup: pa.ChunkedArray) -> dict[str, int]:
    """The ``unfinished`` section (see the module docstring), one column at a time (no copy
    of the table)."""
    counts = {"sent_after_warmup": pc.sum(after_warmup).as_py() or 0}
    for name, column in UNFINISHED:
        missing = pc.is_null(messages.column(column))
        if name == "never_acked":
            missing = pc.or_kleene(missing, pc.not_equal(messages.column("ack_error"), 0))
        counts[name] = pc.sum(pc.and_(missing, after_warmup)).as_py() or 0
    return counts


def _flags(table: pa.Table, name: str) -> np.ndarray[Any, Any]:
    """A boolean column as numpy, null as False."""
    return np.asarray(table.column(name).fill_null(False).to_numpy(zero_copy_only=False))


def _loss(messages: pa.Table) -> dict[str, dict[str, int]] | None:
    """The ``loss`` section (see the module docstring)."""
    copies = messages.column("log_copies")
    if copies.null_count:
        return None
    copies_np = copies.to_numpy()
    acks = messages.column("acks").fill_null(127).to_numpy()
    answered = messages.column("ack_error").is_valid().to_numpy(zero_copy_only=False)
    errors = messages.column("ack_error").fill_null(0).to_numpy()
    acked = answered & (errors == 0)
    failed = answered & (errors != 0)
    absent = (copies_np == 0) & acked
    retained_out = _flags(messages, "retained_out")
    loss = {}
    for name, level in LOSS_LEVELS:
        at_level = acks == level
        counts = {
            "sent": int(at_level.sum()),
            "written" if level == 0 else "acked": int((at_level & acked).sum()),
            "failed": int((at_level & failed).sum()),
            "sent_absent" if level == 0 else "lost_acked": int(
                (at_level & absent & ~retained_out).sum()
            ),
            "retained_out": int((at_level & absent & retained_out).sum()),
            "duplicated": int((at_level & (copies_np > 1)).sum()),
        }
        loss[name] = counts
    return loss


LOSS_COUNTS = (
    "lost_acked_acks_all",
    "lost_acked_acks_1",
    "sent_absent_acks_0",
    "duplicated_in_log",
    "retained_out",
)
"""The names :func:`loss_counts` returns, in order."""


def loss_counts(summary: Mapping[str, Any]) -> dict[str, int | None]:
    """The loss statistics of a run summary, flat (a sweep's and ``--seeds``'s names):
    ``lost_acked_acks_all``, ``lost_acked_acks_1``, ``sent_absent_acks_0``, and over every
    level ``duplicated_in_log`` and ``retained_out``; None each without a ``loss`` section."""
    loss = summary.get("loss")
    if loss is None:
        return dict.fromkeys(LOSS_COUNTS)
    return {
        "lost_acked_acks_all": loss["acks_all"]["lost_acked"],
        "lost_acked_acks_1": loss["acks_1"]["lost_acked"],
        "sent_absent_acks_0": loss["acks_0"]["sent_absent"],
        "duplicated_in_log": sum(level["duplicated"] for level in loss.values()),
        "retained_out": sum(level["retained_out"] for level in loss.values()),
    }


def _loss_line(loss: dict[str, dict[str, int]]) -> str:
    parts = []
    for name, level in LOSS_LEVELS:
        counts = loss[name]
        if not counts["sent"]:
            continue
        label = "all" if level == -1 else str(level)
        if level == 0:
            parts.append(
                f"acks={label} {counts['written']} written, {counts['sent_absent']} absent"
            )
        else:
            parts.append(f"acks={label} {counts['acked']} acked, {counts['lost_acked']} lost")
    duplicated = sum(counts["duplicated"] for counts in loss.values())
    retained_out = sum(counts["retained_out"] for counts in loss.values())
    parts.append(f"{duplicated} in the log twice or more, {retained_out} deleted by retention")
    return "checked against the final leader logs: " + "; ".join(parts)


def _cell(value: float | int | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _unfinished_line(unfinished: dict[str, int]) -> str:
    sent = unfinished["sent_after_warmup"]
    parts = []
    for name, _ in UNFINISHED:
        count = unfinished[name]
        share = f" ({100 * count / sent:.1f}%)" if sent else ""
        parts.append(f"{name.replace('_', ' ')} {count}{share}")
    return f"of the {sent} sent after the warmup, by the end: " + ", ".join(parts)


def text_table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a plain-text table: ``rows[0]`` is the head, underlined; the first column is
    left-aligned, the others right-aligned; columns two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a plain-text table for the terminal (latencies in ms)."""
    heads = ["", "count", "mean", *(p[0] for p in PERCENTILES), "max"]
    rows = []
    for name, _ in LATENCIES:
        rows.append((_LABELS[name], summary["latency"][name]))
    rows.extend(proxy_latency_rows(summary))
    for api, stats in summary["requests"].items():
        rows.append((f"{api} round trip", stats["round_trip"]))
        for purgatory in ("produce_purgatory", "fetch_purgatory"):
            if stats[purgatory]["count"]:
                rows.append((f"{api} in {purgatory.replace('_', ' ')}", stats[purgatory]))
    table = [heads]
    for label, stats in rows:
        values = [stats["mean_ms"], *(stats[f"{p[0]}_ms"] for p in PERCENTILES), stats["max_ms"]]
        table.append([label, str(stats["count"]), *(_cell(v) for v in values)])
    lines = text_table(table)
    counts = summary["messages"]
    lines.append("")
    lines.append("messages: " + ", ".join(f"{key} {value}" for key, value in counts.items()))
    lines.append("latencies in ms; messages sent after the warmup")
    lines.append(_unfinished_line(summary["unfinished"]))
    if summary.get("loss") is not None:
        lines.append(_loss_line(summary["loss"]))
    lines.extend(proxy_lines(summary))
    lines.extend(f"warning: {warning}" for warning in summary["warnings"])
    return "\n".join(lines)

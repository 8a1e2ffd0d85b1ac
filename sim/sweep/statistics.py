"""The names of the per-run statistics a sweep computes (:mod:`sim.sweep.analysis`) and a
study's ``[report] metrics`` may plot, with their labels; no Spark needed to read them.

A latency statistic is ``<latency>_<quantile>_ms`` (e.g. ``send_to_commit_p99_ms``) for the
latencies of :data:`LATENCIES` and the quantiles of :data:`QUANTILES`; the others are
:data:`COUNTS`, among them the loss counts of :data:`LOSS` (over the whole run, checked
against the final leader logs: :mod:`sim.output.summary`).

A sweep whose runs have a consume proxy (a ``proxy`` records table) has the statistics of
:func:`proxy_metrics` too, computed from that table (:data:`PROXY_COUNTS`, and
``proxy_<latency>_<quantile>_ms`` for :data:`PROXY_LATENCIES`): the names and definitions of
the run summary's ``proxy`` section (:mod:`sim.output.proxy_summary`).
"""

from __future__ import annotations

__all__ = [
    "COUNTS",
    "LATENCIES",
    "LOSS",
    "PROXY_COUNTS",
    "PROXY_LATENCIES",
    "QUANTILES",
    "UNFINISHED",
    "label",
    "latency_metrics",
    "metrics",
    "proxy_metrics",
]

QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999))
LATENCIES = (
    # (name, messages column, which messages count besides those sent before the warmup)
    ("produce", "produce_latency_us", "m.ack_error = 0"),
    ("end_to_end", "end_to_end_latency_us", "TRUE"),
    ("commit", "commit_latency_us", "TRUE"),
    ("send_to_commit", "send_to_commit_latency_us", "TRUE"),
)
UNFINISHED = (
    # (name, condition on a message sent after the warmup)
    ("never_acked", "m.acked_us IS NULL OR m.ack_error != 0"),
    ("never_delivered", "m.delivered_us IS NULL"),
    ("never_processed", "m.processed_us IS NULL"),
    ("never_committed", "m.committed_us IS NULL"),
)
LOSS = (
    # (name, condition on a message of the run); ack_error = 0: acknowledged, or for acks=0
    # written to the connection
    ("lost_acked_acks_all",
     "m.acks = -1 AND m.ack_error = 0 AND m.log_copies = 0 AND NOT m.retained_out"),
    ("lost_acked_acks_1",
     "m.acks = 1 AND m.ack_error = 0 AND m.log_copies = 0 AND NOT m.retained_out"),
    ("sent_absent_acks_0",
     "m.acks = 0 AND m.ack_error = 0 AND m.log_copies = 0 AND NOT m.retained_out"),
    ("duplicated_in_log", "m.log_copies > 1"),
    ("retained_out", "m.ack_error = 0 AND m.log_copies = 0 AND m.retained_out"),
)  # fmt: skip
PROXY_COUNTS = (
    # (name, aggregate over the proxy records p of a run sent after the warmup)
    ("proxy_redelivery_rate",
     "(sum(p.deliveries) - count_if(p.deliveries > 0)) / nullif(count_if(p.deliveries > 0), 0)"),
    ("proxy_duplicate_rate",
     "(sum(p.completions) - count_if(p.completions > 0)) "
     "/ nullif(count_if(p.completions > 0), 0)"),
    ("proxy_redeliveries", "sum(p.deliveries) - count_if(p.deliveries > 0)"),
    ("proxy_duplicates", "sum(p.completions) - count_if(p.completions > 0)"),
    ("proxy_expired_leases", "sum(p.expired)"),
    ("proxy_cancels", "sum(p.cancels)"),
    ("proxy_archived", "count_if(p.archived)"),
    ("proxy_never_acknowledged", "count_if(p.acknowledged_us IS NULL)"),
    ("proxy_never_committed", "count_if(p.committed_us IS NULL)"),
)  # fmt: skip
PROXY_LATENCIES = (
    # (name, proxy records column)
    ("proxy_send_to_ack", "send_to_ack_latency_us"),
    ("proxy_ack_to_commit", "ack_to_commit_latency_us"),
    ("proxy_send_to_commit", "send_to_commit_latency_us"),
)
_PROXY_LABELS = {
    "proxy_redelivery_rate": "redelivery rate (extra deliveries per record delivered)",
    "proxy_duplicate_rate": "duplicate rate (extra completions per record completed)",
    "proxy_redeliveries": "deliveries beyond each record's first",
    "proxy_duplicates": "records processed to completion again by another reader",
    "proxy_expired_leases": "leases expired",
    "proxy_cancels": "deliveries cancelled",
    "proxy_archived": "records archived (delivery-count limit)",
    "proxy_never_acknowledged": "records sent after the warmup never acknowledged",
    "proxy_never_committed": "records sent after the warmup never committed by the proxy",
}
_COUNT_LABELS = {
    "throughput_msg_s": "throughput (messages/s processed)",
    "duplicates": "messages delivered more than once",
    "commit_failures": "OffsetCommit responses with an error",
    "sent_after_warmup": "messages sent after the warmup",
    "never_acked": "messages sent after the warmup never acknowledged",
    "never_delivered": "messages sent after the warmup never delivered",
    "never_processed": "messages sent after the warmup never processed",
    "never_committed": "messages sent after the warmup never committed",
    "lost_acked_acks_all": "acks=all messages acknowledged but absent from the final logs",
    "lost_acked_acks_1": "acks=1 messages acknowledged but absent from the final logs",
    "sent_absent_acks_0": "acks=0 messages sent but absent from the final logs",
    "duplicated_in_log": "messages in the final logs more than once",
    "retained_out": "messages deleted by retention",
    "warnings": "warnings per run",
}
COUNTS = tuple(_COUNT_LABELS)
_LATENCY_LABELS = {
    "produce": "produce",
    "end_to_end": "end-to-end",
    "commit": "processing-to-commit",
    "send_to_commit": "send-to-commit",
    "proxy_send_to_ack": "proxy send-to-acknowledgement",
    "proxy_ack_to_commit": "proxy acknowledgement-to-commit",
    "proxy_send_to_commit": "proxy send-to-commit",
}


def latency_metrics() -> list[str]:
    """The names of the latency statistics, e.g. ``commit_p99_ms``, in report order."""
    return [f"{name}_{q}_ms" for name, _, _ in LATENCIES for q, _ in QUANTILES]


def proxy_metrics() -> list[str]:
    """The consume proxy's statistics, in column order: :data:`PROXY_COUNTS`, then
    ``proxy_<latency>_<quantile>_ms``."""
    latencies = [f"{name}_{q}_ms" for name, _ in PROXY_LATENCIES for q, _ in QUANTILES]
    return [*(name for name, _ in PROXY_COUNTS), *latencies]


def metrics(*, proxy: bool = False) -> list[str]:
    """Every per-run statistic the analysis computes, in column order; with ``proxy``, the
    consume proxy's (:func:`proxy_metrics`, computed when the runs have a proxy) after them."""
    return [*latency_metrics(), *COUNTS, *(proxy_metrics() if proxy else ())]


def label(metric: str) -> str:
    """A human label of statistic ``metric`` (one of :func:`metrics`), with its unit."""
    if metric in _COUNT_LABELS:
        return _COUNT_LABELS[metric]
    if metric in _PROXY_LABELS:
        return _PROXY_LABELS[metric]
    latencies = [name for name, _, _ in LATENCIES] + [name for name, _ in PROXY_LATENCIES]
    for name in latencies:
        for q, _ in QUANTILES:
            if metric == f"{name}_{q}_ms":
                return f"{q.replace('_', '.')} {_LATENCY_LABELS[name]} latency (ms)"
    raise KeyError(metric)

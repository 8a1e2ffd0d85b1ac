"""The consume proxy in the simulator, run end to end: same seed, same bytes; every record
accounted for; duplicates bounded by expired leases; the extreme readers (all forget, all
cancel, none fail) behave as the proxy's rules say."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from sim.output.proxy_recorder import PROXY_SCHEMA, STATES
from sim.output.proxy_summary import PROXY_STATISTICS, proxy_statistics
from sim.replications import run_statistics
from sim.runner import load_run
from tests.sim.proxy.runs import proxy_run

SHORT_LEASE = (
    "proxy.lease_duration_ms=30",
    'proxy.readers.processing_time={distribution="lognormal", median="20ms", sigma=0.5}',
)
"""Leases shorter than many processing times: acknowledgements come late, records twice."""


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _columns(table: pa.Table) -> dict[str, np.ndarray[Any, Any]]:
    """Every column as numpy; nulls as -1 (integers), False (booleans) or None (strings)."""
    out: dict[str, np.ndarray[Any, Any]] = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_integer(column.type):
            out[name] = column.fill_null(-1).to_numpy()
        elif pa.types.is_boolean(column.type):
            out[name] = np.asarray(column.fill_null(False).to_numpy(zero_copy_only=False))
        else:
            out[name] = np.asarray(column.to_pylist(), dtype=object)
    return out


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    first, again, other = tmp_path / "first", tmp_path / "again", tmp_path / "other"
    proxy_run().write(first, plots=False)
    proxy_run.__wrapped__(seed=1).write(again, plots=False)  # not the cached result
    proxy_run(seed=2).write(other, plots=False)
    digests = _digests(first)
    assert set(digests) == {
        "messages.parquet", "requests.parquet", "timeseries.parquet", "proxy.parquet",
        "summary.json",
    }  # fmt: skip
    assert _digests(again) == digests
    assert _digests(other)["proxy.parquet"] != digests["proxy.parquet"]
    assert load_run(first) == proxy_run()


@pytest.mark.parametrize("overrides", [(), SHORT_LEASE], ids=["default", "short-lease"])
def test_every_record_is_accounted_for(overrides: tuple[str, ...]) -> None:
    result = proxy_run(*overrides)
    assert result.proxy is not None and result.proxy.schema == PROXY_SCHEMA
    p = _columns(result.proxy)
    messages = result.messages.filter(pa.compute.equal(result.messages.column("topic"), "jobs"))
    assert result.proxy.column("message_id").equals(messages.column("message_id"))
    state = p["state"]
    acknowledged, committed = p["acknowledged_us"] >= 0, p["committed_us"] >= 0
    pending = state == "pending"
    # A state for every record with an offset; one of the proxy's.
    assert set(state[p["offset"] >= 0]) <= set(STATES)
    assert (state == None).tolist() == (p["offset"] < 0).tolist()  # noqa: E711
    # Finished before committed; committed by the proxy once its commit is answered.
    assert np.all(np.isin(state[acknowledged], ["acknowledged", "committed"]))
    assert np.all(np.isin(state[p["archived"]], ["archived", "committed"]))
    assert np.all(acknowledged[state == "acknowledged"])
    assert np.all(p["archived"][state == "archived"])
    assert np.all((acknowledged | p["archived"])[state == "committed"])
    assert np.all(state[committed] == "committed")
    assert not np.any(acknowledged & p["archived"])
    # Every delivery ended acknowledged, cancelled or expired, or is still pending.
    assert np.all(p["expired"] >= 0)
    ended = acknowledged.astype(int) + p["cancels"] + p["expired"] + pending
    assert np.array_equal(p["deliveries"], ended)
    assert np.all(p["deliveries"][pending] >= 1)
    assert np.all(p["deliveries"][state == "unfetched"] == 0)
    # A cancelled delivery is not completed; a completion beyond the first needs an expiry.
    assert np.all(p["completions"] + p["cancels"] <= p["deliveries"])
    assert np.all(np.maximum(p["completions"] - 1, 0) <= p["expired"])
    section = result.summary["proxy"]
    assert section["duplicates"] <= section["expired_leases"] + section["cancels"]
    assert sum(section["states"].values()) == section["records"]
    # The readers' receipts in the messages table: each a hand-out (some may be in flight).
    received = messages.column("deliveries").to_numpy()
    assert np.all(received <= p["deliveries"])
    assert messages.column("committed_us").equals(result.proxy.column("committed_us"))


def test_the_summary_section_counts_the_table() -> None:
    result = proxy_run(*SHORT_LEASE)
    section = result.summary["proxy"]
    p = _columns(result.proxy)
    recent = p["sent_us"] >= result.summary["run"]["warmup_us"]
    delivered = int(np.sum(p["deliveries"][recent] > 0))
    completed = int(np.sum(p["completions"][recent] > 0))
    assert section["records"] == int(recent.sum())
    assert section["redeliveries"] == int(p["deliveries"][recent].sum()) - delivered
    assert section["redelivery_rate"] == section["redeliveries"] / delivered
    assert section["duplicates"] == int(p["completions"][recent].sum()) - completed
    assert section["duplicate_rate"] == section["duplicates"] / completed
    assert section["expired_leases"] == int(p["expired"][recent].sum()) > 0
    assert section["late_answers"] == int(p["late_answers"][recent].sum()) > 0
    assert section["never_acknowledged"] == int(np.sum(p["acknowledged_us"][recent] < 0))
    ack_to_commit = p["ack_to_commit_latency_us"][recent]
    assert section["latency"]["ack_to_commit"]["count"] == int(np.sum(ack_to_commit >= 0))
    # The table printed for the terminal shows the section.
    table = result.format_table()
    assert "proxy: acknowledged to committed" in table
    assert f"{section['expired_leases']} leases expired" in table
    # sim run --seeds and sweeps read the same numbers.
    stats = run_statistics(result.messages, result.summary)
    assert list(stats)[-len(PROXY_STATISTICS) :] == list(PROXY_STATISTICS)
    assert stats["proxy_expired_leases"] == section["expired_leases"]
    assert proxy_statistics({}) == dict.fromkeys(PROXY_STATISTICS)


def test_readers_that_never_acknowledge_get_every_record_archived_at_the_limit() -> None:
    result = proxy_run(
        "proxy.readers.cancel_probability=0.0", "proxy.readers.never_ack_probability=1.0",
        "proxy.lease_duration_ms=50", "proxy.delivery_count_limit=2",
        "proxy.readers.processing_time={distribution=\"constant\", value=\"1ms\"}",
    )  # fmt: skip
    p = _columns(result.proxy)
    early = p["sent_us"] < 2_000_000  # 1 s before the end: two leases of 50 ms have run out
    assert early.sum() > 300
    assert np.all(p["deliveries"][early] == 2) and np.all(p["completions"][early] == 2)
    assert np.all(p["expired"][early] == 2) and np.all(p["archived"][early])
    assert np.all(p["acknowledged_us"] < 0)
    # Archived records are finished: the data topic is committed past them.
    assert np.all(p["committed_us"][early] >= 0)
    section = result.summary["proxy"]
    assert section["duplicate_rate"] > 0.9 and section["never_acknowledged"] == section["records"]


def test_readers_that_always_cancel_get_every_record_archived_at_the_limit() -> None:
    result = proxy_run(
        "proxy.readers.never_ack_probability=0.0", "proxy.readers.cancel_probability=1.0",
        "proxy.delivery_count_limit=3",
        "proxy.readers.processing_time={distribution=\"constant\", value=\"1ms\"}",
    )  # fmt: skip
    p = _columns(result.proxy)
    early = p["sent_us"] < 2_000_000
    assert np.all(p["deliveries"][early] == 3) and np.all(p["cancels"][early] == 3)
    assert np.all(p["completions"] == 0) and np.all(p["expired"][early] == 0)
    assert np.all(p["archived"][early])
    assert result.summary["proxy"]["duplicates"] == 0


def test_readers_that_finish_in_time_get_each_record_once() -> None:
    result = proxy_run(
        "proxy.readers.cancel_probability=0.0", "proxy.readers.never_ack_probability=0.0",
        "proxy.readers.processing_time={distribution=\"constant\", value=\"5ms\"}",
    )  # fmt: skip
    p = _columns(result.proxy)
    early = p["sent_us"] < 2_500_000
    assert np.all(p["deliveries"][early] == 1) and np.all(p["completions"][early] == 1)
    assert np.all(p["acknowledged_us"][early] >= 0) and np.all(p["committed_us"][early] >= 0)
    # Acknowledged about 5 ms after delivery, then committed within a few round trips.
    assert np.all(p["send_to_ack_latency_us"][early] >= 5_000)
    assert np.percentile(p["ack_to_commit_latency_us"][early], 99) < 20_000
    section = result.summary["proxy"]
    assert (section["redeliveries"], section["duplicates"], section["expired_leases"]) == (0, 0, 0)

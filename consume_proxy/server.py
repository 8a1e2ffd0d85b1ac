"""The real-time driver: one proxy server (HTTP front end, Kafka feed, reaper) on trio.

:func:`serve` wires a :class:`~consume_proxy.ConsumeProxy` to the world: a
:class:`~consume_proxy.kafka_feed.KafkaFeed` fills it from the data topic as a member of the
servers' consumer group and keeps its state in the state log topic, a
:class:`~purgatory.trio_reaper.TrioReaper` expires leases and reads at their deadlines
(sleeping until the next one, never polling), and :func:`trio_http.serve_handler` answers the
HTTP API (:class:`~consume_proxy.http.Frontend`). All three share one clock, trio's, anchored
at the wall clock's epoch milliseconds, so lease deadlines on the wire are epoch
milliseconds. Wall-clock time is read once, at start-up, here and nowhere below; so is the
random writer id that tells this server's log entries from the other servers'.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Mapping
from functools import partial

import trio

from consume_proxy.feed import DEFAULT_LOG_TOPIC
from consume_proxy.http import DEFAULT_MAX_BODY, Frontend
from consume_proxy.kafka_feed import DEFAULT_WINDOW, KafkaFeed
from consume_proxy.proxy import (
    DEFAULT_DELIVERY_COUNT_LIMIT,
    DEFAULT_LEASE_DURATION,
    DEFAULT_MAX_RECORD_LOCKS,
    MAX_WRITER,
    ConsumeProxy,
)
from consume_proxy.record_state import Record
from purgatory.trio_reaper import open_trio_reaper, trio_clock
from trio_http import serve_handler

__all__ = ["serve"]

_logger = logging.getLogger("consume_proxy.server")


async def serve(
    *,
    bootstrap: str,
    topic: str,
    group_id: str,
    host: str = "127.0.0.1",
    port: int = 8080,
    lease_ms: int = DEFAULT_LEASE_DURATION,
    delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT,
    max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS,
    window: int = DEFAULT_WINDOW,
    log_topic: str = DEFAULT_LOG_TOPIC,
    dead_letter_topic: str | None = None,
    kafka_config: Mapping[str, str | int | float | bool] | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``topic`` for the group ``group_id`` over HTTP until cancelled; report the bound
    port when listening (``port=0`` picks a free one). The state log topic ``log_topic`` (and
    ``dead_letter_topic``, if given) must exist with at least as many partitions as
    ``topic``. On cancellation the feed commits, leaves the group, produces what is left and
    closes its clients. Raises InvalidProxyConfigError for a bad ``lease_ms``,
    ``delivery_count_limit`` or ``max_record_locks``."""
    clock = trio_clock(start=time.time_ns() // 1_000_000)
    proxy = ConsumeProxy(
        lease_duration=lease_ms,
        delivery_count_limit=delivery_count_limit,
        max_record_locks=max_record_locks,
        dead_letter=_archived,
        writer=1 + secrets.randbelow(MAX_WRITER),
        start=clock(),
    )
    feed = KafkaFeed(
        proxy,
        clock,
        bootstrap=bootstrap,
        topic=topic,
        group_id=group_id,
        config=kafka_config,
        log_topic=log_topic,
        dead_letter_topic=dead_letter_topic,
        window=window,
    )
    frontend = Frontend(
        proxy,
        clock,
        high_watermark=feed.high_watermarks.get,
        partitions=lambda name: feed.partitions if name == topic else None,
        max_body=max_body,
    )
    async with open_trio_reaper(proxy.purgatory, clock), trio.open_nursery() as nursery:
        await nursery.start(feed.run)
        bound = await nursery.start(partial(serve_handler, frontend, host=host, port=port))
        task_status.started(bound)


def _archived(record: Record) -> None:
    _logger.warning(
        "archived %s-%d offset %d after %d deliveries",
        record.topic,
        record.partition,
        record.offset,
        record.delivery_count,
    )

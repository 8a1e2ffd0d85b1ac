"""Configuration of the simulated consumer: Kafka's consumer settings, Kafka's defaults."""

from __future__ import annotations

from typing import ClassVar, Literal

import attrs

from replica.config_def import FieldErrors, doc, int_at_least, one_of
from sim.clients.errors import ClientConfigError
from sim.core.distributions import Constant, Distribution

__all__ = ["ConsumerConfig"]


@attrs.frozen(kw_only=True)
class ConsumerConfig:
    """Settings of one :class:`~sim.clients.consumer.Consumer`. Times in ms, sizes in bytes.

    ``group_id`` None means no group: no OffsetFetch at start (positions come from
    ``auto_offset_reset``) and no commits. ``group_membership`` says how a scenario starts the
    consumer: ``"on"`` subscribes (joins the group, which assigns the partitions), ``"off"``
    assigns every partition itself, ``"auto"`` subscribes only when another consumer of the
    scenario shares the ``group_id``. Raises ClientConfigError naming the field when a value
    is out of range.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(ClientConfigError)

    group_id: str | None = attrs.field(
        default=None, metadata=doc("group.id: whose committed offsets to resume from and commit")
    )
    group_membership: Literal["auto", "on", "off"] = attrs.field(
        default="auto",
        validator=one_of(("auto", "on", "off")),
        metadata=doc(
            "join the group (subscribe) or assign partitions; 'auto': join when another "
            "consumer of the scenario has the same group_id"
        ),
    )
    session_timeout_ms: int = attrs.field(
        default=45_000,
        validator=int_at_least(1),
        metadata=doc("session.timeout.ms: the coordinator drops a member silent this long"),
    )
    heartbeat_interval_ms: int = attrs.field(
        default=3000,
        validator=int_at_least(1),
        metadata=doc("heartbeat.interval.ms: period of a member's heartbeats"),
    )
    max_poll_interval_ms: int = attrs.field(
        default=300_000,
        validator=int_at_least(1),
        metadata=doc(
            "max.poll.interval.ms: sent as JoinGroup's rebalance timeout (how long the "
            "coordinator waits for members to rejoin)"
        ),
    )
    fetch_min_bytes: int = attrs.field(
        default=1,
        validator=int_at_least(0),
        metadata=doc("fetch.min.bytes: bytes a fetch waits for at the leader"),
    )
    fetch_max_wait_ms: int = attrs.field(
        default=500,
        validator=int_at_least(0),
        metadata=doc("fetch.max.wait.ms: longest a fetch waits for fetch.min.bytes"),
    )
    fetch_max_bytes: int = attrs.field(
        default=52_428_800,
        validator=int_at_least(1),
        metadata=doc("fetch.max.bytes: byte limit of a whole fetch response", unit="bytes"),
    )
    max_partition_fetch_bytes: int = attrs.field(
        default=1_048_576,
        validator=int_at_least(1),
        metadata=doc("max.partition.fetch.bytes: byte limit per partition", unit="bytes"),
    )
    enable_auto_commit: bool = attrs.field(
        default=True, metadata=doc("enable.auto.commit: commit positions on an interval")
    )
    auto_commit_interval_ms: int = attrs.field(
        default=5000,
        validator=int_at_least(1),
        metadata=doc("auto.commit.interval.ms: period of automatic (async) commits"),
    )
    auto_offset_reset: Literal["earliest", "latest"] = attrs.field(
        default="latest",
        validator=one_of(("earliest", "latest")),
        metadata=doc("auto.offset.reset: where to start without a committed offset"),
    )
    request_timeout_ms: int = attrs.field(
        default=30_000,
        validator=int_at_least(1),
        metadata=doc("request.timeout.ms: the client gives up on an unanswered request"),
    )
    retry_backoff_ms: int = attrs.field(
        default=100,
        validator=int_at_least(0),
        metadata=doc("retry.backoff.ms: wait before retrying a failed request"),
    )
    default_api_timeout_ms: int = attrs.field(
        default=60_000,
        validator=int_at_least(0),
        metadata=doc("default.api.timeout.ms: how long commit_sync keeps retrying"),
    )

    processing_time: Distribution = attrs.field(
        factory=lambda: Constant(value=0),
        metadata=doc("time the built-in application spends on one record (us)"),
    )
    manual_commit: Literal["none", "sync", "async"] = attrs.field(
        default="none",
        validator=one_of(("none", "sync", "async")),
        metadata=doc("commit after every processed batch: 'sync', 'async' or 'none'"),
    )

    def __attrs_post_init__(self) -> None:
        if self.request_timeout_ms <= self.fetch_max_wait_ms:
            raise ClientConfigError(
                f"request_timeout_ms ({self.request_timeout_ms}) must be greater than "
                f"fetch_max_wait_ms ({self.fetch_max_wait_ms}), or every idle fetch times out"
            )
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ClientConfigError(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be less than "
                f"session_timeout_ms ({self.session_timeout_ms})"
            )
        if self.group_membership == "on" and self.group_id is None:
            raise ClientConfigError("group_membership = 'on' needs a group_id")

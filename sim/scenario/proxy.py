"""The ``[proxy]`` section: a consume-proxy deployment and its readers.

``[proxy]`` runs seed 001's consume proxy (``consume_proxy``) in the simulated cluster:
``servers`` proxy servers share the partitions of ``topic`` (server ``i`` serves partitions
``p`` with ``p % servers == i``), each the real :class:`~consume_proxy.ConsumeProxy` fed by
:class:`~consume_proxy.cluster_feed.ClusterFeed` and committing for ``group_id``.
``[proxy.readers]`` are the processes reading through it: ``count`` readers, reader ``i``
talking to server ``i % servers``, each long-polling Read with ``read_timeout_ms``, working
on a record for a ``processing_time``, then acknowledging it; or, with
``never_ack_probability``, never acknowledging it (its lease runs out), or with
``cancel_probability`` giving it back (Cancel) when its time is up. See ``sim.proxy`` and
docs/simulator.md.
"""

from __future__ import annotations

from typing import Any

import attrs

from replica.config_def import at_least, between, doc
from sim.core.distributions import Distribution, Exponential

__all__ = ["MAX_READ_TIMEOUT_MS", "ProxyReaders", "ProxySection"]

MAX_READ_TIMEOUT_MS = 300_000
"""The longest Read timeout, as the proxy's HTTP API bounds it (``timeout_ms``)."""


@attrs.frozen(kw_only=True)
class ProxyReaders:
    """``[proxy.readers]``: the simulated readers of the proxy."""

    count: int = attrs.field(
        default=10,
        validator=at_least(1),
        metadata=doc(
            "readers (client ids reader-0, reader-1, ...); reader i talks to proxy-(i % servers)"
        ),
    )
    read_timeout_ms: int = attrs.field(
        default=30_000,
        validator=between(0, MAX_READ_TIMEOUT_MS),
        metadata=doc(
            "the timeout of each Read (a long poll), 0 to 300000 ms as the HTTP API allows"
        ),
    )
    processing_time: Distribution = attrs.field(
        factory=lambda: Exponential(mean=10_000),
        metadata=doc("time a reader works on one record before it acknowledges (or cancels) it"),
    )
    never_ack_probability: float = attrs.field(
        default=0.0,
        validator=between(0.0, 1.0),
        metadata=doc(
            "probability that a reader processes a record and never acknowledges it (its lease "
            "expires); 0 to 1, with cancel_probability at most 1"
        ),
    )
    cancel_probability: float = attrs.field(
        default=0.0,
        validator=between(0.0, 1.0),
        metadata=doc(
            "probability that a reader gives a record back (Cancel) when its processing time "
            "is up instead of finishing it; 0 to 1, with never_ack_probability at most 1"
        ),
    )

    @cancel_probability.validator
    def _at_most_one_with_never_ack(self, _attribute: Any, value: float) -> None:
        if self.never_ack_probability + value > 1.0:
            raise ValueError(
                f"must be at most 1 - never_ack_probability ({self.never_ack_probability}), "
                f"got {value}: a record is acknowledged, never acknowledged or cancelled"
            )


@attrs.frozen(kw_only=True)
class ProxySection:
    """``[proxy]``: consume-proxy servers on one topic, and their readers."""

    topic: str = attrs.field(metadata=doc("the data topic the proxy serves"))
    servers: int = attrs.field(
        default=1,
        validator=at_least(1),
        metadata=doc(
            "proxy servers (client ids proxy-0, proxy-1, ...); server i serves the partitions "
            "p with p % servers == i, so at most the topic's partitions"
        ),
    )
    group_id: str = attrs.field(
        default="consume-proxy",
        metadata=doc("the servers' group: where they commit the data topic and the state log"),
    )
    lease_duration_ms: int = attrs.field(
        default=30_000,
        validator=at_least(1),
        metadata=doc(
            "the ack timeout: how long a handed-out record waits for its acknowledgement "
            "before it is handed out again (KIP-932's group.share.record.lock.duration.ms); "
            ">= 1"
        ),
    )
    delivery_count_limit: int = attrs.field(
        default=5,
        validator=at_least(1),
        metadata=doc(
            "deliveries after which a record that comes back is archived instead "
            "(group.share.delivery.count.limit); >= 1"
        ),
    )
    fetch_max_wait_ms: int = attrs.field(
        default=500,
        validator=at_least(0),
        metadata=doc("how long each of the servers' data fetches waits for records at the leader"),
    )
    readers: ProxyReaders = attrs.field(
        factory=ProxyReaders, metadata=doc("the readers ([proxy.readers])")
    )

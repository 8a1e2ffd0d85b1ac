"""Configuration of the simulated Burrow consumer: Burrow's knobs and defaults, plus switches
for the behaviours of its Go implementation that the study compares with corrected ones.

| field | Burrow (Go) | default |
|---|---|---|
| ``num_workers`` | NumWorkers | 10 |
| ``job_queue_size`` / ``result_queue_size`` | JobQueueSize / ResultQueueSize | 1000 / 1000 |
| ``commit_interval_ms`` | CommitInterval | 5000 |
| ``commit_batch_size`` | CommitBatchSize | 1000 |
| ``max_retries`` | MaxRetries | 3 |
| ``retry_backoff_base_ms`` | RetryBackoffBase (doubles per attempt, capped at 60 s) | 100 |
| ``max_consecutive_errors`` | MaxConsecutiveErrors | 10 |

Switches (the first value of each reproduces Burrow):

* ``tracking``: ``"global"``, one sequence across partitions, so a gap on any partition holds
  back every partition's commit; ``"per_partition"``, partitions commit independently.
* ``batch_trigger``: ``"after_timer"``, the count of polled messages since the last commit is
  only checked right after an interval commit (so it rarely fires); ``"immediate"``, a commit
  starts as soon as ``commit_batch_size`` processed messages are committable.
* ``committed_range``: ``"recomputed"``, after a commit returns the tracker marks as committed
  everything committable *now*, including messages that finished during the call and were not
  in the payload (under-commit: re-delivered after a restart); ``"payload"``, only what the
  commit carried.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import attrs

from replica.config_def import FieldErrors, between, doc, int_at_least, one_of
from sim.clients.errors import ClientConfigError
from sim.core.distributions import Distribution, Exponential

__all__ = ["BurrowConfig"]


@attrs.frozen(kw_only=True)
class BurrowConfig:
    """Settings of one :class:`~sim.clients.burrow.BurrowConsumer` (times in ms unless ``_us``).

    Raises ClientConfigError (a ValueError) naming the field when a value is out of range.
    """

    field_errors: ClassVar[FieldErrors] = FieldErrors(ClientConfigError)

    num_workers: int = attrs.field(
        default=10, validator=int_at_least(1), metadata=doc("worker goroutines (NumWorkers)")
    )
    job_queue_size: int = attrs.field(
        default=1000,
        validator=int_at_least(0),
        metadata=doc("job channel capacity; a full channel blocks the poll loop"),
    )
    result_queue_size: int = attrs.field(
        default=1000,
        validator=int_at_least(0),
        metadata=doc("result channel capacity; a full channel blocks the workers"),
    )
    result_handling_time_us: int = attrs.field(
        default=0,
        validator=int_at_least(0),
        metadata=doc("time the result processor spends per result (0: instantaneous)"),
    )
    commit_interval_ms: int = attrs.field(
        default=5000, validator=int_at_least(1), metadata=doc("commit ticker period")
    )
    commit_batch_size: int = attrs.field(
        default=1000,
        validator=int_at_least(1),
        metadata=doc("messages after which a commit is due (see batch_trigger)"),
    )
    processing_time: Distribution = attrs.field(
        factory=lambda: Exponential(mean=1000),
        metadata=doc("time one processing attempt takes (us)"),
    )
    failure_probability: float = attrs.field(
        default=0.0,
        validator=between(0.0, 1.0),
        metadata=doc("probability that a processing attempt fails"),
    )
    max_retries: int = attrs.field(
        default=3, validator=int_at_least(0), metadata=doc("retries of a failed message")
    )
    retry_backoff_base_ms: int = attrs.field(
        default=100,
        validator=int_at_least(0),
        metadata=doc("back-off before retry n is base * 2^n, capped at 60 s"),
    )
    max_consecutive_errors: int = attrs.field(
        default=10,
        validator=int_at_least(1),
        metadata=doc("permanent failures in a row that halt the consumer"),
    )
    tracking: Literal["global", "per_partition"] = attrs.field(
        default="global",
        validator=one_of(("global", "per_partition")),
        metadata=doc("gap detection over one global sequence (Burrow) or per partition"),
    )
    batch_trigger: Literal["after_timer", "immediate"] = attrs.field(
        default="after_timer",
        validator=one_of(("after_timer", "immediate")),
        metadata=doc("check the batch count only after a timer commit (Burrow) or at once"),
    )
    committed_range: Literal["recomputed", "payload"] = attrs.field(
        default="recomputed",
        validator=one_of(("recomputed", "payload")),
        metadata=doc("mark committed what is committable after the call (Burrow) or the payload"),
    )

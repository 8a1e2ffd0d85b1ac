"""Benchmarks of the replica layer, each against a baseline measured in the same run.

``python -m replica.bench [--requests N] [--batch B] [--rounds R] [--json]``

* ``replication``: produce requests of ``B`` records spread over 8 partitions led by 3 brokers
  (a :class:`~replica.testing.DirectCluster`; followers fetch by direct calls after every 8
  requests), with acks=-1 and, as the baseline, acks=1 (the same appends and follower
  fetches without waiting for replication). Reports records per CPU-second for both and
  ``acks_all_cost_ratio`` = CPU per record with acks=-1 / with acks=1.
* ``log_read``: reads at random offsets in a log of 1,000 batches (the baseline) and in one of
  100,000 batches; ``read_cost_ratio`` = CPU per read in the large log / in the small one
  (offset lookups are binary searches, so it stays near 1; a linear scan would be ~100).
* ``follower_fetch``: a follower's fetch at the leader's log end (one partition, no wait) with
  ``last_fetched_epoch`` None (the baseline) and set to the current epoch, on a leader that has
  been through 1,000 epochs; ``epoch_check_cost_ratio`` = CPU per fetch with / without.
* ``timestamp_lookup``: ListOffsets timestamp lookups at random timestamps in a log of 1,000
  batches (the baseline) and in one of 100,000 (17 segments of 1 MiB); ``lookup_cost_ratio`` =
  large / small (a walk over the segments, as Kafka's, then a binary search in one: a few;
  a linear scan of the batches would be ~100).

Costs are process CPU time; the best of ``R`` interleaved rounds is kept (the least disturbed
by other load). Tests only check that the benchmarks run, never their numbers.
"""

from replica.bench.benchmarks import follower_fetch, log_read, replication, timestamp_lookup

__all__ = ["follower_fetch", "log_read", "replication", "timestamp_lookup"]

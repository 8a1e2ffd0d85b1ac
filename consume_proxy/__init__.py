"""consume_proxy: the consume proxy of seed 001 (Read / Acknowledge / Cancel over Kafka).

A sans-IO core on the purgatory: per-partition state maps with leases on the timing wheel
(:class:`SharePartition`), reads as delayed operations woken by new data, cancels and lease
expiries (:class:`ConsumeProxy`), the internal log's entries, their bytes and commit rule
(:class:`StateLog`, :mod:`consume_proxy.log_format`), and the state map's CRDT merge used by
catch-up (:class:`StateMap`); on a shared log, requests forwarded from any server and the
fencing of a previous owner. Time is an integer passed in. See docs/proxy.md.
"""

from consume_proxy.errors import (
    InvalidProxyConfigError,
    InvalidRecordStateError,
    LeaseExpiredError,
    LogFormatError,
    OffsetOutOfRangeError,
    ProxyError,
    RecordNotHandedOutError,
    UnknownPartitionError,
)
from consume_proxy.log_format import decode_entry, encode_entry
from consume_proxy.proxy import (
    DEFAULT_DELIVERY_COUNT_LIMIT,
    DEFAULT_LEASE_DURATION,
    DEFAULT_MAX_RECORD_LOCKS,
    MAX_WRITER,
    ConsumeProxy,
    DelayedRead,
    ProxyCounts,
)
from consume_proxy.record_state import FINISHED, TRANSITIONS, Record, RecordState
from consume_proxy.share_partition import SharePartition
from consume_proxy.state_log import (
    FACTS,
    REQUESTS,
    UNPLACED,
    LogEntry,
    LogEntryKind,
    StateLog,
)
from consume_proxy.state_map import NEVER_DELIVERED, Progress, StateMap

__all__ = [
    "DEFAULT_DELIVERY_COUNT_LIMIT",
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_MAX_RECORD_LOCKS",
    "FACTS",
    "FINISHED",
    "MAX_WRITER",
    "NEVER_DELIVERED",
    "REQUESTS",
    "TRANSITIONS",
    "UNPLACED",
    "ConsumeProxy",
    "DelayedRead",
    "InvalidProxyConfigError",
    "InvalidRecordStateError",
    "LeaseExpiredError",
    "LogEntry",
    "LogEntryKind",
    "LogFormatError",
    "OffsetOutOfRangeError",
    "Progress",
    "ProxyCounts",
    "ProxyError",
    "Record",
    "RecordNotHandedOutError",
    "RecordState",
    "SharePartition",
    "StateLog",
    "StateMap",
    "UnknownPartitionError",
    "decode_entry",
    "encode_entry",
]

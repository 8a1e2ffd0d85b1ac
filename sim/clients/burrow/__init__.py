"""The Burrow consumer (a Go library's concurrent consumer) on the simulator.

:class:`BurrowConsumer` is the pool; :mod:`~sim.clients.burrow.gap` holds the pure gap-
detection functions, :mod:`~sim.clients.burrow.tracker` the sequence trackers.
"""

from sim.clients.burrow.config import BurrowConfig
from sim.clients.burrow.gap import (
    MessageInfo,
    commit_positions,
    committable_sequence,
    sequences_to_offsets,
)
from sim.clients.burrow.pool import BurrowConsumer, ProcessFunc
from sim.clients.burrow.tracker import CommitPlan, GapTracker, SequenceTracker, Ticket

__all__ = [
    "BurrowConfig",
    "BurrowConsumer",
    "CommitPlan",
    "GapTracker",
    "MessageInfo",
    "ProcessFunc",
    "SequenceTracker",
    "Ticket",
    "commit_positions",
    "committable_sequence",
    "sequences_to_offsets",
]

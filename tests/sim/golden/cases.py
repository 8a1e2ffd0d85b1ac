"""Golden-output cases: every bundled scenario, shortened, run with a fixed seed.

Each case is a scenario source and ``--set`` overrides that keep a run to a few virtual
seconds while exercising what the full scenario does (faults moved early, commits frequent).
:func:`digests` runs one case and returns the SHA-256 of each file of its run directory.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sim.runner import run_scenario
from sim.scenario import load_scenario

__all__ = ["CASES", "SEED", "digests"]

SEED = 3
_HERE = Path(__file__).parent
_SHORT = (
    "simulation.duration=5s",
    "simulation.warmup=1s",
    "producers[0].rate=2000",
)
_BURROW = ("burrow.commit_interval_ms=1000",)
_FAULT = ("faults[0].at=2s", "faults[0].duration=1500ms")
_ISR = ("cluster.replica_lag_time_max_ms=1000",)

_GROUP = (
    "cluster.group_min_session_timeout_ms=1000",
    "cluster.group_initial_rebalance_delay_ms=300",
    *(f"consumers[{i}].{knob}" for i in range(3) for knob in (
        "heartbeat_interval_ms=300", "session_timeout_ms=1500", "auto_commit_interval_ms=500",
    )),
    "faults[0].at=2s",
)  # fmt: skip

CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "default": ("default", _SHORT + _BURROW),
    "acks1": ("acks1", _SHORT + _BURROW),
    "burrow-per-partition": ("burrow-per-partition", _SHORT + _BURROW),
    "broker-failure": ("broker-failure", _SHORT + _BURROW + _FAULT),
    "broker-failure-lost-log": (
        "broker-failure",
        _SHORT + _BURROW + _FAULT + ("faults[0].log=lost",),
    ),
    "slow-follower": ("slow-follower", _SHORT + _BURROW + _FAULT),
    "stalled-follower": ("stalled-follower", _SHORT + _BURROW + _FAULT),
    "consumers": (str(_HERE / "consumers.toml"), _SHORT + _BURROW),
    # Three members of one group; one crashes, its session times out, the group rebalances.
    "rebalance": ("rebalance", _SHORT + _GROUP),
    # A short lag limit, so the ISR checks (every replica.lag.time.max.ms / 2) run inside the
    # run: a stalled follower leaves the ISRs and rejoins them; a restarted broker that leads
    # nothing goes on checking.
    "stalled-follower-isr": (
        "stalled-follower",
        _SHORT + _BURROW + _ISR + ("faults[0].at=1500ms", "faults[0].duration=2s"),
    ),
    "broker-failure-isr": (
        "broker-failure",
        _SHORT + _BURROW + _ISR + ("faults[0].at=1500ms", "faults[0].duration=1s"),
    ),
    # The consume proxy: its servers, readers, state log and the proxy table (proxy.parquet);
    # 300 jobs/s for 12 readers, and 200 ms leases so that some expire within the run.
    "consume-proxy": (
        "consume-proxy",
        (
            "simulation.duration=3s",
            "simulation.warmup=1s",
            "producers[0].rate=300",
            "proxy.readers.count=12",
            "proxy.lease_duration_ms=200",
        ),
    ),
}


def digests(name: str, tmp: str | Path) -> dict[str, str]:
    """Run case ``name`` with :data:`SEED`; return {file name: SHA-256 hex} of its run
    directory (Parquet tables and summary JSON; no plots)."""
    source, overrides = CASES[name]
    scenario = load_scenario(source, list(overrides))
    out = Path(tmp) / name
    run_scenario(scenario, SEED).write(out, plots=False)
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(out.iterdir())
    }

"""Short runs of the bundled consume-proxy scenario, shared by the proxy tests."""

from __future__ import annotations

from functools import cache

from sim.output import RunResult
from sim.runner import run_scenario
from sim.scenario import Scenario, load_scenario

SHORT = (
    "simulation.duration=3s",
    "simulation.warmup=500ms",
    "producers[0].rate=300",
    "proxy.readers.count=12",
)
"""The consume-proxy scenario at 300 jobs/s for 3 s: 12 readers are ~80% busy."""


def proxy_scenario(*overrides: str) -> Scenario:
    """The bundled consume-proxy scenario, shortened, with ``overrides`` applied."""
    return load_scenario("consume-proxy", [*SHORT, *overrides])


@cache
def proxy_run(*overrides: str, seed: int = 1) -> RunResult:
    """The result of :func:`proxy_scenario` (cached: runs take a second or two)."""
    return run_scenario(proxy_scenario(*overrides), seed)

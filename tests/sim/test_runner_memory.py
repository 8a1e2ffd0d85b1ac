"""A run makes (almost) no cyclic garbage while it runs: the runner never collects while the
engine runs (see ``sim.runner._drive``), so a reference cycle made per message or per request
would stay in memory until the run ends. This pins the simulation's hot paths to refcounting.
"""

from __future__ import annotations

import gc

import pytest

from tests.sim.world_scenarios import built_world, small_scenario


def _cyclic_garbage() -> int:
    found: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            found.append(info["collected"])

    gc.callbacks.append(count)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(count)
    return sum(found)


@pytest.mark.parametrize("partitions", [3, 12], ids=["per-key lists", "watch groups"])
def test_simulated_traffic_makes_no_reference_cycles(partitions: int) -> None:
    """With 12 partitions a follower's fetch has more keys than the purgatory's
    ``group_min_keys`` (8), so its delayed fetches are watched as groups."""
    sim, _world, recorder = built_world(
        small_scenario(
            "producers[0].rate=2000", "burrow.commit_interval_ms=200",
            ("topics[0].partitions", partitions),
            faults=[{"type": "broker_failure", "broker": 1, "at": "1500ms", "duration": "1s"}],
        )
    )  # fmt: skip
    sim.run_until(1_000_000)  # set-up and the first second, then count from a clean slate
    enabled = gc.isenabled()
    gc.disable()
    try:
        _cyclic_garbage()
        sim.run_until(3_000_000)  # ~4,000 messages, a broker crash and its restart
        garbage = _cyclic_garbage()
    finally:
        if enabled:
            gc.enable()
    messages = len(recorder.tables()[0])
    assert messages > 5000
    # A cycle per message, or per request (~1 request per 4 messages here), would leave several
    # objects per message; what is left is per commit (~30 objects for each of Burrow's 10
    # commits) and per fault (the crashed broker's requests).
    assert garbage < 0.2 * messages, (garbage, messages)

"""Guardrails: a fault or a ``--set`` glob that matches nothing is an error (exit 2, one line
naming the field) before anything is simulated."""

from __future__ import annotations

import pytest

from sim.cli import main
from sim.core.engine import Simulator
from sim.output import MetricsRecorder
from sim.scenario import ScenarioError, load_scenario, network_nodes
from sim.world import World
from tests.sim.world_scenarios import small_scenario

Capture = pytest.CaptureFixture[str]

_NODES = "nodes: broker-0, broker-1, broker-2, controller, producer-0, burrow"


@pytest.fixture(autouse=True)
def _never_simulate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command here must fail before the run starts."""

    def never(*args: object) -> None:
        raise AssertionError("the run must not start")

    monkeypatch.setattr("sim.runner.build_cluster", never)


def _spike(**keys: object) -> str:
    table = {"type": '"latency_spike"', "at": '"1s"', "duration": '"1s"', "extra": '"5ms"'}
    table.update({key: f'"{value}"' for key, value in keys.items()})
    return "faults=[{" + ", ".join(f"{key}={value}" for key, value in table.items()) + "}]"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--set", _spike(src="broker-7")],
         "faults[0].src: latency spike matches no link: no node pair matches src='broker-7' "
         f"dst='*' in either direction ({_NODES})"),
        # Two clients never talk to each other, so a spike between them slows nothing.
        (["--set", _spike(src="producer-*", dst="burrow")],
         "faults[0].src: latency spike matches no link: no node pair matches "
         f"src='producer-*' dst='burrow' in either direction ({_NODES})"),
        (["--set", 'faults=[{type="broker_failure", broker=3, at="1s"}]'],
         "faults[0].broker: no such broker: ids are 0..2, got 3"),
        (["--set", 'faults=[{type="follower_stall", broker=5, at="1s"}]'],
         "faults[0].broker: no such broker: ids are 0..2, got 5"),
        (["--set", 'faults=[{type="consumer_crash", consumer="consumer-0", at="1s"}]'],
         "faults[0].consumer: no such consumer 'consumer-0' (consumers: burrow)"),
        (["--set", "producers=[]", "--set", "producers[*].acks=1"],
         "producers: has no entries, so producers[*].acks would set nothing"),
        (["--set", "faults[*].at=1s"], "faults: has no entries, so faults[*].at would set nothing"),
        (["--set", "consumers[*].group_id=g"],
         "consumers: has no entries, so consumers[*].group_id would set nothing"),
    ],
)  # fmt: skip
def test_what_matches_nothing_exits_2_in_one_line(
    argv: list[str], expected: str, capsys: Capture
) -> None:
    assert main(["run", "default", *argv, "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"scenario error: {expected}")


def test_a_glob_index_sets_every_entry() -> None:
    two = ['producers=[{topic="events"}, {topic="events"}]']
    scenario = load_scenario("default", [*two, "producers[*].acks=0", "producers[1].acks=1"])
    assert [p.config.acks for p in scenario.producers] == [0, 1]
    with pytest.raises(
        ScenarioError, match=r"^scenario error: producers\[0\]: expected a table, got 1"
    ):
        load_scenario("default", ["producers[*]=1"])  # a list of tables takes no bare value


def test_the_spike_check_knows_the_nodes_the_world_builds() -> None:
    scenario = small_scenario(
        'consumers=[{topics=["events"]}, {topics=["events"]}]',
        'producers=[{topic="events"}, {topic="events"}]',
    )
    sim = Simulator(0)
    world = World(sim, scenario, MetricsRecorder())
    assert world.network.nodes == list(network_nodes(scenario))

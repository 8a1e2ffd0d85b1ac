"""Guardrails: a fault or a ``--set`` glob that matches nothing is an error (exit 2, one line
naming the field) before anything is simulated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.cli import main
from sim.core.engine import Simulator
from sim.output import MetricsRecorder
from sim.scenario import (
    BrokerFailure,
    FollowerStall,
    LatencySpike,
    ScenarioError,
    load_scenario,
    network_nodes,
)
from sim.scenario.overrides import fault_override
from sim.world import World
from tests.sim.test_output import toy_world
from tests.sim.world_scenarios import small_scenario

Capture = pytest.CaptureFixture[str]

_NODES = "nodes: broker-0, broker-1, broker-2, controller, producer-0, burrow"


@pytest.fixture(autouse=True)
def _never_simulate(monkeypatch: pytest.MonkeyPatch) -> None:
    """No command here runs the simulator (the one that writes a run uses a toy world)."""

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


# -- faults from the command line ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "broker_failure broker=1 at=2s duration=500ms",
        "type=broker_failure,broker=1,at=2s,duration=500ms",
        " broker_failure, broker=1 ,at=2s  duration=500ms ",
    ],
)
def test_a_fault_is_spelled_like_a_faults_table(text: str) -> None:
    override = fault_override(text)
    assert override == (
        'faults[+]={type = "broker_failure", broker = 1, at = "2s", duration = "500ms"}'
    )
    [fault] = load_scenario("default", [override]).faults
    assert fault == BrokerFailure(broker=1, at=2_000_000, duration=500_000)


def test_faults_from_the_command_line_append_after_the_file_s() -> None:
    scenario = load_scenario(
        "broker-failure",
        [fault_override("follower_stall broker=2 at=1s"),
         fault_override("latency_spike at=1s duration=1s extra=20ms src=broker-2 "
                        "dst=broker-* bidirectional=false")],
    )  # fmt: skip
    file_faults = load_scenario("broker-failure").faults
    assert scenario.faults[: len(file_faults)] == file_faults
    assert scenario.faults[len(file_faults) :] == [
        FollowerStall(broker=2, at=1_000_000),
        LatencySpike(at=1_000_000, duration=1_000_000, extra=20_000, src="broker-2",
                     dst="broker-*", bidirectional=False),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--fault", "broker_failure broker=3 at=1s"],
         "faults[0].broker: no such broker: ids are 0..2, got 3"),
        (["--fault", "follower_stall broker=1 at=1s log=lost"],
         "faults[0].log: unknown field (known: type, broker, at, duration)"),
        (["--fault", "meteor at=1s"], "faults[0].type: expected one of"),
        (["--fault", "latency_spike at=1s duration=1s extra=5ms src=broker-9"],
         "faults[0].src: latency spike matches no link"),
        (["--fault", "broker=1 at=1s"],
         '--fault: no fault type in "broker=1 at=1s" (e.g. "broker_failure broker=1 at=2s")'),
        (["--fault", "broker_failure broker=1 at=1s broker=2"],
         '--fault: broker is given twice in "broker_failure broker=1 at=1s broker=2"'),
        (["--fault", "broker_failure broker=1 soon"],
         '--fault: expected KEY=VALUE pairs after the fault type, got "soon"'),
        (["--fault", "broker_failure broker=1 at=[1]"],
         "--fault at: expected a number, a string or a boolean, got an array"),
        (["--fault", "broker_failure broker=1 at=1s",
          "--fault", "broker_failure broker=1 at=1500ms"],
         "faults[1].at: overlaps faults[0]"),
        (["--set", "faults[+].at=1s"], "faults[+]: appends a whole entry"),
    ],
)  # fmt: skip
def test_a_bad_fault_from_the_command_line_exits_2_in_one_line(
    argv: list[str], expected: str, capsys: Capture
) -> None:
    assert main(["run", "default", *argv, "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"scenario error: {expected}")


def test_a_run_records_its_command_line_faults_so_that_it_re_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    monkeypatch.setattr("sim.runner.build_cluster", toy_world)
    out = tmp_path / "run"
    argv = [
        "run",
        "default",
        "--duration",
        "1s",
        "--set",
        "simulation.warmup=200ms",
        "--fault",
        "latency_spike at=300ms duration=100ms extra=1ms src=producer-0",
        "--no-plots",
        "--no-progress",
    ]
    assert main([*argv, "--out", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    recorded = load_scenario(out / "scenario.toml")
    assert recorded.faults == [
        LatencySpike(at=300_000, duration=100_000, extra=1000, src="producer-0")
    ]
    provenance = json.loads((out / "provenance.json").read_text())
    assert (
        'faults[+]={type = "latency_spike", at = "300ms", duration = "100ms", extra = "1ms", '
        'src = "producer-0"}'
    ) in provenance["overrides"]


def test_knobs_shows_a_command_line_fault(capsys: Capture) -> None:
    assert main(["knobs", "default", "--fault", "follower_stall broker=1 at=1s"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("faults[0].broker ") and " 1 " in line for line in lines)

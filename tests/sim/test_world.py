"""The world: the real brokers on the simulated network, their clock, handler pools, probes.

Scenarios are the small ones of tests/sim/world_scenarios.py: 1 ms one way on every link and
100 us of handler time per request, so every timing below is exact.
"""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc
import pytest

from apis.fetch import FetchRequest, FetchResponse
from apis.offset_commit import OffsetCommitResponse
from apis.produce import ProduceRequest, ProduceResponse
from apis.request_channel import ResponseBody
from replica.errors import Errors
from replica.types import GROUP_METADATA_TOPIC_NAME, PartitionResponse, TopicPartition
from sim.clients.records import make_record
from sim.core.engine import Simulator
from sim.output import MetricsRecorder
from sim.runner import run_scenario
from sim.scenario import bundled_scenarios, load_scenario
from sim.world import ClientPort, World
from sim.world.requests import api_name, response_error
from tests.sim.world_scenarios import LOCAL_TIME_US, ONE_WAY_US, built_world, small_scenario

EVENTS_0 = TopicPartition("events", 0)  # led by broker 0, followed by brokers 1 and 2
QUIET: dict[str, Any] = {"producers": [], "burrow": None}
"""Sections that leave the world without clients, for tests that send requests themselves."""


def _tester(world: World, name: str = "tester") -> ClientPort:
    world.network.add_node(name, "client")
    return ClientPort(world.transport, name)


def _produce(acks: int, timeout_ms: int = 30_000, message_id: int = 0) -> ProduceRequest:
    return ProduceRequest(acks, timeout_ms, {EVENTS_0: (make_record(message_id, None, 100),)})


def _send_at(
    sim: Simulator, port: ClientPort, at: int, request: Any, answers: list[tuple[int, Any]]
) -> None:
    def send() -> None:
        port.send(0, request, lambda response: answers.append((sim.now, response)))

    sim.call_at(at, send)


def test_the_cluster_is_set_up_at_time_zero() -> None:
    sim, world, _ = built_world(small_scenario(**QUIET))
    cluster = world.cluster
    assert sim.now == 0 and cluster.clock.now == 0
    for p in range(3):
        assert cluster.leader(TopicPartition("events", p)) == p  # round robin
        offsets_tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, p)
        assert cluster.controller.partition_state(offsets_tp).isr == (
            p, (p + 1) % 3, (p + 2) % 3,
        )  # fmt: skip
    # Every follower is already long-polling its leaders, with every partition it follows.
    for node in cluster.brokers.values():
        assert node.replica_manager.fetch_purgatory.num_delayed == 2
        for fetcher in node.replica_manager.replica_fetchers.values():
            assert fetcher.in_flight is not None
            assert set(fetcher.in_flight.fetch_infos) == set(fetcher.partition_states)


def test_a_produce_pays_network_handling_and_replication() -> None:
    sim, world, recorder = built_world(small_scenario(**QUIET))
    port = _tester(world)
    answers: dict[int, list[tuple[int, Any]]] = {-1: [], 1: []}
    _send_at(sim, port, 1_000, _produce(-1), answers[-1])
    _send_at(sim, port, 100_000, _produce(1, message_id=1), answers[1])
    sim.run_until(200_000)
    follower_round_trip = 2 * ONE_WAY_US + LOCAL_TIME_US
    acks_1 = 100_000 + ONE_WAY_US + LOCAL_TIME_US + ONE_WAY_US
    assert [t for t, _ in answers[1]] == [acks_1]
    assert [t for t, _ in answers[-1]] == [acks_1 - 99_000 + follower_round_trip]
    for _, response in answers[-1] + answers[1]:
        assert isinstance(response, ProduceResponse)
        assert response.responses[EVENTS_0].error is Errors.NONE
    _, requests, _ = recorder.tables()
    rows = requests.filter(pc.equal(requests.column("client"), "tester")).to_pylist()
    assert [
        (r["api"], r["broker"], r["queue_time_us"], r["produce_purgatory_us"]) for r in rows
    ] == [
        ("Produce", 0, 0, follower_round_trip),
        ("Produce", 0, 0, None),
    ]


def test_the_handler_pool_queues_requests_beyond_its_threads() -> None:
    sim, world, recorder = built_world(small_scenario("cluster.num_io_threads=1", **QUIET))
    port = _tester(world)
    answers: list[tuple[int, Any]] = []
    for i in range(3):
        _send_at(sim, port, 1_000, _produce(1, message_id=i), answers)
    sim.run_until(100_000)
    first = 1_000 + ONE_WAY_US + LOCAL_TIME_US + ONE_WAY_US
    assert [t for t, _ in answers] == [first, first + LOCAL_TIME_US, first + 2 * LOCAL_TIME_US]
    _, requests, _ = recorder.tables()
    tester = requests.filter(pc.equal(requests.column("client"), "tester"))
    assert tester.column("queue_time_us").to_pylist() == [0, LOCAL_TIME_US, 2 * LOCAL_TIME_US]


def test_a_delayed_produce_expires_on_time_without_polling_the_clock() -> None:
    """The leader's produce purgatory expires the operation at its timeout: the engine wakes
    the broker at that deadline, not every millisecond."""
    sim, world, _ = built_world(small_scenario(**QUIET))
    for follower in (1, 2):
        world.cluster.pause_fetchers(follower)
    port = _tester(world)
    answers: list[tuple[int, Any]] = []
    _send_at(sim, port, 1_000, _produce(-1, timeout_ms=50), answers)
    events_before = sim.events_processed
    sim.run_until(100_000)
    handled_ms = (1_000 + ONE_WAY_US + LOCAL_TIME_US) // 1000  # brokers' clocks count ms
    assert [t for t, _ in answers] == [(handled_ms + 50) * 1000 + ONE_WAY_US]
    assert answers[0][1].responses[EVENTS_0].error is Errors.REQUEST_TIMED_OUT
    assert sim.events_processed - events_before < 20


def test_every_request_to_a_crashing_broker_gets_exactly_one_network_exception() -> None:
    """Requests in the broker's purgatory, in its handler, in its queue, on their way to it
    and sent to it while it is down: each is answered once, with NETWORK_EXCEPTION."""
    sim, world, _ = built_world(small_scenario("cluster.num_io_threads=1", **QUIET))
    for follower in (1, 2):
        world.cluster.pause_fetchers(follower)  # acks=all produces wait in the purgatory
    port = _tester(world)
    answers: list[list[ResponseBody]] = [[] for _ in range(7)]
    # Five arrive at 2 ms and are handled one by one (100 us each); one more arrives at 3 ms.
    sends = [1_000] * 5 + [2_000, 2_250]
    for i, at in enumerate(sends):

        def send(i: int = i) -> None:
            port.send(0, _produce(-1, message_id=i), answers[i].append)

        sim.call_at(at, send)
    sim.call_at(2_250, lambda: world.crash_broker(0))  # 2 handled, 1 in service, 2 queued
    sim.run_until(3_000_000)
    assert [len(a) for a in answers] == [1] * 7
    for (response,) in answers:
        assert isinstance(response, ProduceResponse)
        assert response.responses[EVENTS_0].error is Errors.NETWORK_EXCEPTION


def _series(run: Any, source: str, metric: str) -> list[tuple[int, float]]:
    samples = run.timeseries
    mask = pc.and_(
        pc.equal(samples.column("source"), source), pc.equal(samples.column("metric"), metric)
    )
    rows = samples.filter(mask)
    return list(
        zip(rows.column("time_us").to_pylist(), rows.column("value").to_pylist(), strict=True)
    )


def test_the_run_time_series_show_a_stalled_follower() -> None:
    run = run_scenario(
        small_scenario(
            "cluster.replica_lag_time_max_ms=1000",
            "simulation.duration=4s",
            faults=[{"type": "follower_stall", "broker": 2, "at": "1s", "duration": "1500ms"}],
        )
    )
    metrics = set(zip(run.timeseries.column("source").to_pylist(),
                      run.timeseries.column("metric").to_pylist(), strict=True))  # fmt: skip
    brokers = {(source, metric) for source, metric in metrics if source.startswith("broker-")}
    assert brokers == {
        (f"broker-{b}", metric)
        for b in range(3)
        for metric in (
            "produce_purgatory_watched", "produce_purgatory_delayed", "fetch_purgatory_watched",
            "fetch_purgatory_delayed", "replica_lag_max", "under_replicated_partitions",
            "request_queue_size",
        )
    }  # fmt: skip
    lag = dict(_series(run, "broker-2", "replica_lag_max"))
    assert lag[500_000] == 0 and lag[2_400_000] > 10 and lag[3_900_000] == 0
    # Broker 0 leads events-0 and __consumer_offsets-0, both followed by broker 2.
    under = dict(_series(run, "broker-0", "under_replicated_partitions"))
    assert under[500_000] == 0 and under[2_400_000] == 2 and under[3_900_000] == 0
    delayed = [value for _, value in _series(run, "broker-0", "fetch_purgatory_delayed")]
    assert max(delayed) >= 1


def test_request_names_and_errors_follow_kafkas_metrics() -> None:
    assert api_name(FetchRequest({}, replica_id=2)) == "FetchFollower"
    assert api_name(FetchRequest({})) == "FetchConsumer"
    assert api_name(_produce(1)) == "Produce"
    other = TopicPartition("events", 1)
    produce = ProduceResponse(
        {
            EVENTS_0: PartitionResponse(Errors.NONE),
            other: PartitionResponse(Errors.NOT_ENOUGH_REPLICAS),
        }
    )
    assert response_error(produce) is Errors.NOT_ENOUGH_REPLICAS
    assert response_error(FetchResponse(Errors.NETWORK_EXCEPTION, {})) is Errors.NETWORK_EXCEPTION
    assert response_error(OffsetCommitResponse({EVENTS_0: Errors.NONE})) is Errors.NONE


def test_a_world_reports_to_the_recorder_it_was_built_with() -> None:
    sim = Simulator(3)
    recorder = MetricsRecorder()
    World(sim, small_scenario("simulation.duration=1s"), recorder)
    sim.run_until(1_000_000)
    messages, requests, _ = recorder.tables()
    assert messages.num_rows > 100
    assert pc.all(pc.equal(messages.column("producer"), "producer-0")).as_py()
    apis = set(requests.column("api").to_pylist())
    assert {"Produce", "FetchConsumer", "FetchFollower", "OffsetCommit", "Metadata"} <= apis


def test_acks_0_produces_get_no_response_but_their_records_are_consumed() -> None:
    run = run_scenario(small_scenario("producers[0].acks=0", "simulation.duration=1s"))
    apis = set(run.requests.column("api").to_pylist())
    assert "Produce" not in apis  # no response travels back, so no request row
    messages = run.messages
    assert pc.all(pc.equal(messages.column("produce_latency_us"), 0)).as_py()
    sent_early = pc.less(messages.column("sent_us"), 800_000)
    assert pc.all(pc.is_valid(messages.column("delivered_us").filter(sent_early))).as_py()


_QUICK = {"rebalance": ["cluster.group_initial_rebalance_delay_ms=0"]}
"""Overrides that let a scenario deliver within 300 ms (a group's first rebalance waits 6 s)."""


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_every_bundled_scenario_runs(name: str) -> None:
    """Each bundled scenario builds its world and runs (its first 300 ms, at 1/10 the rate)."""
    scenario = load_scenario(
        name,
        [
            "simulation.duration=300ms",
            "simulation.warmup=100ms",
            "producers.rate=1000",
            *_QUICK.get(name, []),
        ],
    )
    run = run_scenario(scenario)
    counts = run.summary["messages"]
    assert counts["sent"] > 100 and counts["failed"] == 0
    assert counts["delivered"] > counts["sent"] // 2


def test_a_failed_acks_0_produce_closes_its_connection_a_successful_one_is_silent() -> None:
    """Kafka's broker answers nothing to an acks=0 produce, but closes the connection when
    it fails (here NOT_LEADER_OR_FOLLOWER from a follower), so that the client refreshes its
    metadata: the client sees its connection break one network trip after the handling."""
    sim, world, _ = built_world(small_scenario(**QUIET))
    port = _tester(world)
    answers: list[tuple[int, Any]] = []
    _send_at(sim, port, 1_000, _produce(0), answers)  # to broker 0, the leader
    sim.run_until(50_000)
    assert answers == []
    port.send(1, _produce(0, message_id=1), lambda response: answers.append((sim.now, response)))
    sim.run_until(100_000)
    [(t, response)] = answers
    assert t == 50_000 + ONE_WAY_US + LOCAL_TIME_US + ONE_WAY_US
    assert isinstance(response, ProduceResponse)
    assert response.responses[EVENTS_0].error is Errors.NETWORK_EXCEPTION

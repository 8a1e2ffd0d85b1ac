"""The network: latency distributions, in-order delivery per link, spikes and outages."""

from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.engine import Simulator
from sim.core.network import Network, NetworkError
from sim.scenario import Constant, Exponential, LatencySpike, Lognormal, NetworkConfig, Uniform


def _network(sim: Simulator, **config: object) -> Network:
    network = Network(sim, NetworkConfig(**config))  # type: ignore[arg-type]
    for node in ("broker-0", "broker-1"):
        network.add_node(node, "broker")
    network.add_node("client", "client")
    return network


def test_distributions_sample_what_they_promise() -> None:
    rng = random.Random(5)
    assert {Constant(value=250).sample(rng) for _ in range(10)} == {250}
    uniform = [Uniform(low=100, high=200).sample(rng) for _ in range(2000)]
    assert min(uniform) >= 100 and max(uniform) <= 200
    assert min(uniform) < 105 and max(uniform) > 195
    exponential = [Exponential(mean=1000).sample(rng) for _ in range(20000)]
    assert statistics.fmean(exponential) == pytest.approx(1000, rel=0.05)
    lognormal = [Lognormal(median=300, sigma=0.5).sample(rng) for _ in range(20000)]
    assert statistics.median(lognormal) == pytest.approx(300, rel=0.05)
    assert statistics.fmean(lognormal) == pytest.approx(
        Lognormal(median=300, sigma=0.5).mean, rel=0.05
    )


@settings(max_examples=50)
@given(
    seed=st.integers(0, 2**32),
    gaps=st.lists(st.integers(0, 300), min_size=2, max_size=80),
)
def test_messages_on_a_link_arrive_in_sending_order(seed: int, gaps: list[int]) -> None:
    # Latency varies far more than the gaps between sends, so reordering would be likely.
    sim = Simulator(seed)
    network = _network(sim, client_broker=Uniform(low=0, high=5000))
    arrived: list[tuple[int, int]] = []
    at = 0
    for number, gap in enumerate(gaps):
        at += gap
        sim.call_at(
            at,
            lambda number=number: network.send(
                "client", "broker-0", lambda: arrived.append((number, sim.now))
            ),
        )
    sim.run()
    assert [number for number, _ in arrived] == list(range(len(gaps)))
    times = [t for _, t in arrived]
    assert times == sorted(times)


def test_link_classes_pick_their_distribution() -> None:
    sim = Simulator(1)
    network = _network(sim, client_broker=Constant(value=700), broker_broker=Constant(value=90))
    arrivals: dict[str, int] = {}
    network.send("broker-0", "broker-1", lambda: arrivals.setdefault("bb", sim.now))
    network.send("client", "broker-1", lambda: arrivals.setdefault("cb", sim.now))
    network.send("broker-1", "client", lambda: arrivals.setdefault("bc", sim.now))
    sim.run()
    assert arrivals == {"bb": 90, "cb": 700, "bc": 700}


def test_traffic_on_one_link_does_not_change_latencies_on_another() -> None:
    def latencies(extra_traffic: bool) -> list[int]:
        sim = Simulator(9)
        network = _network(sim, client_broker=Exponential(mean=500))
        got: list[int] = []
        for i in range(50):
            sim.call_at(i * 10_000, lambda: network.send(
                "client", "broker-0", lambda sent=sim.now: got.append(sim.now - sent)))  # fmt: skip
            if extra_traffic:
                sim.call_at(i * 10_000, lambda: network.send("client", "broker-1", lambda: None))
        sim.run()
        return got

    assert latencies(False) == latencies(True)


def test_latency_spike_applies_to_messages_sent_in_its_window_on_matching_links() -> None:
    sim = Simulator(0)
    network = _network(sim, client_broker=Constant(value=100), broker_broker=Constant(value=100))
    network.add_latency_spike(
        LatencySpike(at=1000, duration=1000, extra=5000, src="broker-1", dst="*")
    )
    sent_at = (999, 1000, 1999, 2000, 9000)
    latency: dict[tuple[str, str, int], int] = {}
    for t in sent_at:
        for src, dst in (
            ("broker-1", "broker-0"),
            ("broker-0", "broker-1"),
            ("client", "broker-0"),
        ):
            sim.call_at(t, lambda src=src, dst=dst, t=t: network.send(
                src, dst, lambda: latency.setdefault((src, dst, t), sim.now - t)))  # fmt: skip
    sim.run()
    # Sent at 2000, after the window, but held behind the message sent at 1999 (in order).
    expected = {999: 100, 1000: 5100, 1999: 5100, 2000: 7099 - 2000, 9000: 100}
    for t in sent_at:
        assert latency[("broker-1", "broker-0", t)] == expected[t]
        assert latency[("broker-0", "broker-1", t)] == expected[t]  # bidirectional
        assert latency[("client", "broker-0", t)] == 100


def test_one_directional_spike_leaves_the_reverse_direction_alone() -> None:
    sim = Simulator(0)
    network = _network(sim, broker_broker=Constant(value=100))
    network.send("broker-0", "broker-1", lambda: None)  # link exists before the spike
    network.add_latency_spike(
        LatencySpike(
            at=0, duration=10, extra=50, src="broker-0", dst="broker-1", bidirectional=False
        )
    )
    assert network.send("broker-0", "broker-1", lambda: None) == 150
    assert network.send("broker-1", "broker-0", lambda: None) == 100


def test_disconnect_drops_in_flight_and_new_messages_until_reconnected() -> None:
    sim = Simulator(0)
    network = _network(sim, client_broker=Constant(value=1000))
    delivered: list[str] = []
    network.send("client", "broker-0", lambda: delivered.append("in flight"))
    network.send("client", "broker-1", lambda: delivered.append("other broker"))
    sim.run_until(500)
    network.disconnect("broker-0")
    assert network.send("client", "broker-0", lambda: delivered.append("while down")) is None
    assert network.send("broker-0", "client", lambda: delivered.append("from down")) is None
    sim.run_until(600)
    network.reconnect("broker-0")
    assert network.is_up("broker-0")
    network.send("client", "broker-0", lambda: delivered.append("after"))
    sim.run()
    assert delivered == ["other broker", "after"]
    assert network.messages_sent == 5
    assert network.messages_delivered == 2
    assert network.messages_dropped == 3


def test_every_message_ends_in_exactly_one_of_deliver_or_on_drop() -> None:
    sim = Simulator(0)
    network = _network(sim, client_broker=Constant(value=1000))
    outcomes: list[tuple[str, str, int]] = []

    def send(name: str) -> int | None:
        return network.send(
            "client",
            "broker-0",
            lambda: outcomes.append((name, "delivered", sim.now)),
            on_drop=lambda: outcomes.append((name, "dropped", sim.now)),
        )

    send("early")
    sim.run_until(100)
    send("in flight")
    sim.run_until(1050)  # "early" arrived at 1000
    network.disconnect("broker-0")
    assert send("while down") is None
    assert outcomes == [("early", "delivered", 1000)]  # on_drop never runs inside send()
    sim.run_until(1050)
    network.reconnect("broker-0")
    send("after")
    sim.run()
    assert outcomes == [
        ("early", "delivered", 1000),
        ("while down", "dropped", 1050),
        ("in flight", "dropped", 1100),  # noticed when it would have arrived
        ("after", "delivered", 2050),
    ]


def test_unknown_or_duplicate_nodes_are_refused() -> None:
    sim = Simulator(0)
    network = _network(sim)
    with pytest.raises(NetworkError, match="unknown node 'nobody'"):
        network.send("client", "nobody", lambda: None)
    with pytest.raises(NetworkError, match="already exists"):
        network.add_node("client", "client")
    with pytest.raises(NetworkError, match="node kind"):
        network.add_node("x", "router")  # type: ignore[arg-type]

"""The [proxy] section: bad values refused in one line naming the field, bounds listed by
``python -m sim knobs``, the proxy's nodes on the network."""

from __future__ import annotations

import pytest

from sim.cli import main
from sim.core.network import LatencySpike, spike_links
from sim.scenario import ScenarioError, load_scenario, network_nodes, proxy_ids
from sim.scenario.knobs import knob_rows
from tests.sim.proxy.runs import proxy_scenario


@pytest.mark.parametrize(
    ("override", "field", "says"),
    [
        ("proxy.servers=7", "proxy.servers", "must be <= the partitions of 'jobs' (6), got 7"),
        ("proxy.servers=0", "proxy.servers", "must be >= 1, got 0"),
        ("proxy.topic=nope", "proxy.topic", "unknown topic 'nope'"),
        ("proxy.lease_duration_ms=0", "proxy.lease_duration_ms", "must be >= 1, got 0"),
        ("proxy.delivery_count_limit=0", "proxy.delivery_count_limit", "must be >= 1"),
        ("proxy.fetch_max_wait_ms=-1ms", "proxy.fetch_max_wait_ms", "expected a duration"),
        ("proxy.readers.count=0", "proxy.readers.count", "must be >= 1, got 0"),
        ("proxy.readers.count=20000", "proxy.readers.count", "above the limit of 10,000"),
        ("proxy.readers.read_timeout_ms=300001", "proxy.readers.read_timeout_ms",
         "must be a number between 0 and 300000"),
        ("proxy.readers.never_ack_probability=1.5", "proxy.readers.never_ack_probability",
         "must be a number between 0.0 and 1.0, got 1.5"),
        ("proxy.readers.cancel_probability=-0.1", "proxy.readers.cancel_probability",
         "between 0.0 and 1.0"),
        ("proxy.readers.cancel_probability=0.995", "proxy.readers.cancel_probability",
         "must be at most 1 - never_ack_probability (0.01), got 0.995"),
        ("proxy.readers.processing_time.sigma=11", "proxy.readers.processing_time.sigma", ""),
        ("proxy.readers.speed=1", "proxy.readers.speed", "unknown field"),
        ('consumers=[{topics=["jobs"], group_id="jobs-proxies"}]', "proxy.group_id",
         "is a consumer's group too"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_in_one_line_naming_the_field(
    override: str, field: str, says: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        proxy_scenario(override)
    message = str(caught.value)
    assert message.startswith(f"scenario error: {field}: ") and says in message
    assert "\n" not in message


def test_a_bad_value_on_the_command_line_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "consume-proxy", "--set", "proxy.lease_duration_ms=0"]) == 2
    assert capsys.readouterr().err == (
        "scenario error: proxy.lease_duration_ms: must be >= 1, got 0\n"
    )


def test_knobs_state_the_bounds() -> None:
    rows = {row.path: row for row in knob_rows(load_scenario("consume-proxy"))}
    assert rows["proxy.lease_duration_ms"].value == '"2s"'
    assert ">= 1" in rows["proxy.lease_duration_ms"].help
    assert "0 to 300000 ms" in rows["proxy.readers.read_timeout_ms"].help
    for name in ("never_ack_probability", "cancel_probability"):
        assert "0 to 1, with" in rows[f"proxy.readers.{name}"].help
    assert "at most 10,000 consume-proxy readers" in rows["proxy.readers.count"].help
    assert "at most the topic's partitions" in rows["proxy.servers"].help
    # A scenario without the section lists its knobs as absent, with their defaults.
    assert "proxy.readers.count" in {row.path for row in knob_rows(load_scenario("default"))}


def test_servers_and_readers_are_network_nodes() -> None:
    scenario = proxy_scenario("proxy.readers.count=3")
    assert proxy_ids(scenario) == ["proxy-0", "proxy-1", "reader-0", "reader-1", "reader-2"]
    nodes = network_nodes(scenario)
    assert all(nodes[name] == "client" for name in proxy_ids(scenario))
    # A latency spike may slow a server's links to the brokers; readers and servers are both
    # clients, and spike_links leaves pairs of clients out.
    spike = LatencySpike(src="proxy-0", dst="broker-*", at=0, duration=1, extra=1)
    assert len(spike_links(spike, nodes)) == 6
    between_clients = LatencySpike(src="reader-*", dst="proxy-*", at=0, duration=1, extra=1)
    assert spike_links(between_clients, nodes) == []
    assert proxy_ids(load_scenario("default")) == []

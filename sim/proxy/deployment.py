"""The consume proxy of a scenario's ``[proxy]`` section: its servers, readers and topics.

:class:`ProxyDeployment` builds ``servers`` :class:`~sim.proxy.server.ProxyServer` nodes
(``proxy-<i>``, serving the partitions ``p`` of the topic with ``p % servers == i``) and
``readers.count`` :class:`~sim.proxy.reader.ProxyReader` nodes (``reader-<i>``, connected
to ``proxy-<i % servers>``), each reader drawing from its own random stream (its name), and
starts the readers. It registers the ``proxy`` table with the run's recorder
(:class:`~sim.output.proxy_recorder.ProxyRecorder`) and reports the servers' final state maps
when the run ends. The servers' state log is a topic of its own, ``__consume_proxy_state``,
with the data topic's partitions and replication factor: :func:`proxy_topics` gives it to the
world, which creates it with the scenario's topics.
"""

from __future__ import annotations

from cluster import Cluster
from consume_proxy.cluster_feed import DEFAULT_LOG_TOPIC
from replica.types import TopicPartition
from sim.core.engine import Simulator
from sim.core.network import Network
from sim.output import MetricsRecorder
from sim.output.proxy_recorder import ProxyRecorder
from sim.output.result import PROXY_TABLE
from sim.proxy.connection import Connection
from sim.proxy.reader import ProxyReader
from sim.proxy.server import ProxyServer
from sim.scenario import Scenario

__all__ = ["ProxyDeployment", "proxy_topics"]


def proxy_topics(scenario: Scenario) -> list[tuple[str, int, int]]:
    """(name, partitions, replication factor) of the topics the proxy needs besides the
    scenario's: its state log, partitioned like its data topic; none without ``[proxy]``."""
    proxy = scenario.proxy
    if proxy is None:
        return []
    data = next(topic for topic in scenario.topics if topic.name == proxy.topic)
    return [(DEFAULT_LOG_TOPIC, data.partitions, data.replication_factor)]


class ProxyDeployment:
    """The servers and readers of ``scenario.proxy`` (see the module docstring). Build it
    while the world's transport is in setup mode (the servers assign their partitions then).

    Raises ValueError if the scenario has no ``[proxy]`` section.
    """

    __slots__ = ("events", "readers", "servers")

    def __init__(
        self,
        sim: Simulator,
        network: Network,
        cluster: Cluster,
        scenario: Scenario,
        recorder: MetricsRecorder,
    ) -> None:
        section = scenario.proxy
        if section is None:
            raise ValueError("the scenario has no [proxy] section")
        partitions = next(t.partitions for t in scenario.topics if t.name == section.topic)
        self.events = ProxyRecorder(section.topic)
        recorder.add_table(PROXY_TABLE, self.events.table)
        count = section.servers
        self.servers = []
        for i in range(count):
            served = [TopicPartition(section.topic, p) for p in range(partitions) if p % count == i]
            self.servers.append(
                ProxyServer(
                    sim, network, cluster, f"proxy-{i}", section, served, recorder, self.events
                )
            )
        self.readers: list[ProxyReader] = []
        for i in range(section.readers.count):
            name = f"reader-{i}"
            network.add_node(name, "client")
            reader = ProxyReader(
                sim, Connection(network, name, self.servers[i % count]), section.readers,
                rng=sim.rng(name), recorder=recorder, proxy_events=self.events,
            )  # fmt: skip
            self.readers.append(reader)
            reader.start()
        recorder.at_run_end(self.report_final_states)

    def report_final_states(self) -> None:
        """Every server reports its partitions' final state maps (at the end of the run)."""
        for server in self.servers:
            server.report_final_states()

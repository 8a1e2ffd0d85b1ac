"""The simulated world of one run: network, brokers, controller, clients and faults.

:class:`World` builds, on a :class:`~sim.core.engine.Simulator`, everything a scenario describes
and wires the real broker code into the simulator's time:

* a :class:`~sim.core.network.Network` with a node per broker (``broker-<id>``), one for the
  controller (``controller``, linked like a broker) and one per client;
* the in-process :class:`~cluster.Cluster` (real ``KafkaApis`` / ``ReplicaManager`` /
  ``OffsetManager`` per broker, the minimal controller) over a
  :class:`~sim.world.transport.SimTransport`: network latency both ways and a request handler
  pool per broker. The cluster is set up instantly at time 0 (``__consumer_offsets`` and the
  scenario's topics created, leaders spread round-robin, metadata propagated), then goes live;
* the brokers' clock, :class:`~sim.world.timers.EngineClock` (the engine's time in whole
  milliseconds), and :class:`~sim.world.timers.BrokerTimers`, their wake-ups at their
  purgatory / ISR-check / fetch back-off deadlines;
* the consume proxy of a ``[proxy]`` section (:class:`~sim.proxy.ProxyDeployment`: its
  servers run the real ``consume_proxy`` code over this cluster, its readers use them),
  built before the transport goes live, and its state-log topic;
* the clients of the scenario (:func:`~sim.world.clients.start_clients`), reporting to the
  run's recorder; probes of the brokers (:mod:`~sim.world.probes`: purgatory sizes, replica
  lag) and of the clients (:mod:`~sim.world.client_probes`: consumer-group lag, producer
  backlog, the Burrow pool's queue, error counts) and of the proxy's servers
  (:mod:`~sim.world.proxy_probes`); the faults, with a warning to the
  recorder for each fault that would change nothing (:func:`~sim.world.faults.fault_warnings`);
* at the end of the run (``simulation.duration``), the Burrow pools report the work they
  finished and nobody observed yet (:meth:`~sim.clients.burrow.BurrowConsumer.flush`); once
  the engine has stopped, the final leader logs of the producers' topics go to the recorder
  (:mod:`~sim.world.final_logs`), which checks every message against them (loss counted).

Nothing of the broker's behaviour is re-implemented here: the world only carries messages and
time.
"""

from __future__ import annotations

from apis.config import KafkaConfig
from cluster import BrokerNode, Cluster, broker_node_name
from replica.types import GROUP_METADATA_TOPIC_NAME
from sim.clients import BurrowConsumer, MetricsAdapter
from sim.core.engine import Simulator
from sim.core.network import Network
from sim.output import MetricsRecorder
from sim.proxy import ProxyDeployment, proxy_topics
from sim.scenario import CONTROLLER_NODE, Scenario
from sim.world.client_probes import register_client_probes
from sim.world.clients import ConsumerSlot, ProducerClient, start_clients
from sim.world.faults import fault_warnings, schedule_faults
from sim.world.final_logs import report_final_logs
from sim.world.probes import register_probes
from sim.world.proxy_probes import register_proxy_probes
from sim.world.timers import BrokerTimers, EngineClock
from sim.world.transport import SimTransport

__all__ = ["CONTROLLER_NODE", "World"]


class World:
    """Everything ``scenario`` simulates, built on ``sim`` and reporting to ``recorder``.

    Raises whatever the cluster raises for an impossible cluster (the scenario loader has
    already checked topics, replication factors and fault targets).
    """

    def __init__(self, sim: Simulator, scenario: Scenario, recorder: MetricsRecorder) -> None:
        self.sim = sim
        self.scenario = scenario
        broker_ids = list(range(scenario.cluster.brokers))
        self.network = Network(sim, scenario.network)
        for broker_id in broker_ids:
            self.network.add_node(broker_node_name(broker_id), "broker")
        self.network.add_node(CONTROLLER_NODE, "broker")
        self.transport = SimTransport(sim, self.network, recorder, scenario.cluster, broker_ids)
        config = KafkaConfig(
            broker=scenario.cluster.broker, offsets=scenario.offsets, group=scenario.cluster.group
        )
        self.cluster = Cluster(
            broker_ids,
            config=config,
            transport=self.transport,
            clock=EngineClock(sim),
            create_offsets_topic=False,
        )
        self._create_topics(scenario)
        self.timers = BrokerTimers(sim, self.cluster)
        # The proxy's servers assign their partitions while requests are answered at once.
        self.proxy = (
            None
            if scenario.proxy is None
            else ProxyDeployment(sim, self.network, self.cluster, scenario, recorder)
        )
        self.transport.go_live(self.timers)
        self.timers.arm_all()
        register_probes(recorder, self.cluster, self.transport.pools)
        self.producers: list[ProducerClient]
        self.consumers: dict[str, ConsumerSlot]
        self.producers, self.consumers = start_clients(
            sim, self.network, self.transport, broker_ids, MetricsAdapter(recorder), scenario
        )
        register_client_probes(recorder, self.cluster, scenario, self.producers, self.consumers)
        if self.proxy is not None and scenario.proxy is not None:
            register_proxy_probes(recorder, self.cluster, self.proxy, scenario.proxy.group_id)
        for client, section in zip(self.producers, scenario.producers, strict=True):
            recorder.producer_acks(client.producer.client_id, section.config.acks)
        topics = [section.workload.topic for section in scenario.producers]
        recorder.at_run_end(lambda: report_final_logs(self.cluster, topics, recorder))
        schedule_faults(self, scenario.faults)
        sim.call_at(scenario.simulation.duration, self._flush_pools)
        for warning in fault_warnings(
            scenario.faults, scenario.simulation.duration, follows=self._follows
        ):
            recorder.warn(warning)

    def _create_topics(self, scenario: Scenario) -> None:
        """``__consumer_offsets`` (its replication factor capped at the broker count, as the
        cluster does) and the scenario's topics, with the followers' fetchers held back
        until every partition exists: otherwise a fetch built before the last topic is
        created would long-poll without that topic's partitions, and the first acks=all
        produces would wait replica.fetch.wait.max.ms for their followers."""
        cluster = self.cluster
        offsets = scenario.offsets
        topics = [
            (GROUP_METADATA_TOPIC_NAME, offsets.offsets_topic_num_partitions,
             min(offsets.offsets_topic_replication_factor, len(cluster.brokers))),
            *((t.name, t.partitions, t.replication_factor) for t in scenario.topics),
            *proxy_topics(scenario),
        ]  # fmt: skip
        for broker_id in cluster.brokers:
            cluster.pause_fetchers(broker_id)
        for name, partitions, replication_factor in topics:
            cluster.create_topic(name, partitions, replication_factor)
        for broker_id in cluster.brokers:
            cluster.resume_fetchers(broker_id)

    def _flush_pools(self) -> None:
        """The run ends: every Burrow pool reports what it finished by now."""
        for slot in self.consumers.values():
            if isinstance(slot.instance, BurrowConsumer):
                slot.instance.flush()

    def _follows(self, broker_id: int) -> bool:
        """Whether broker ``broker_id`` hosts a follower replica of some partition."""
        partitions = self.cluster.brokers[broker_id].replica_manager.partitions.values()
        return any(not partition.is_leader for partition in partitions)

    # -- faults -------------------------------------------------------------------------------

    def crash_broker(self, broker_id: int) -> None:
        """Broker ``broker_id`` crashes: its links break (messages in flight are lost), the
        requests in its queue are dropped, what it was answering is answered
        NETWORK_EXCEPTION, and the controller moves its leaderships to live ISR members."""
        self.network.disconnect(broker_node_name(broker_id))
        self.transport.drop_requests(broker_id)
        self.cluster.stop_broker(broker_id)
        self.timers.arm_all()

    def restart_broker(self, broker_id: int, *, lose_log: bool = False) -> None:
        """Broker ``broker_id`` comes back, with the logs it had or (``lose_log``) with none:
        then it restarts as a fresh broker that re-replicates everything from the leaders."""
        if lose_log:
            # The cluster restarts a broker with its state; a lost disk is a new, empty
            # broker under the same id.
            old = self.cluster.brokers[broker_id]
            fresh = BrokerNode(broker_id, self.cluster.config, self.cluster.clock)
            fresh.stop()
            fresh.fetchers_paused = old.fetchers_paused  # a follower stall still in force
            self.cluster.brokers[broker_id] = fresh
        self.network.reconnect(broker_node_name(broker_id))
        self.cluster.restart_broker(broker_id)
        self.timers.arm_all()

    def stall_follower(self, broker_id: int) -> None:
        """Broker ``broker_id``'s replica fetchers stop sending fetches."""
        self.cluster.pause_fetchers(broker_id)

    def resume_follower(self, broker_id: int) -> None:
        """Broker ``broker_id``'s replica fetchers fetch again."""
        self.cluster.resume_fetchers(broker_id)
        self.timers.arm(broker_id)

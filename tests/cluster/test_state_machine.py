"""Runs the exported cluster state machine with modest settings (a few seconds)."""

import attrs
from hypothesis import HealthCheck, settings

from cluster.testing import ClusterStateMachine
from replica.config import BrokerConfig


class Machine(ClusterStateMachine):
    """The exported machine; subclassed so that these settings stay local to this module."""


TestClusterStateMachine = Machine.TestCase
TestClusterStateMachine.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],  # a loaded CI machine is not a bug
)


# -- the machine's parameters ----------------------------------------------------------------


def test_the_defaults_are_three_brokers_rf_3_and_min_isr_2() -> None:
    machine = ClusterStateMachine()
    assert sorted(machine.cluster.brokers) == [0, 1, 2]
    assert machine.replication_factor == 3 and machine.min_insync_replicas == 2
    broker = machine.cluster.config.broker
    assert broker == BrokerConfig(
        min_insync_replicas=2, replica_lag_time_max_ms=2_000, replica_fetch_backoff_ms=100
    )
    states = [machine.cluster.controller.partition_state(tp) for tp in machine.partitions]
    assert [len(state.replicas) for state in states] == [3, 3]


def test_brokers_replication_factor_min_isr_and_broker_config_are_parameters() -> None:
    config = BrokerConfig(replica_lag_time_max_ms=1_000, replica_fetch_backoff_ms=50)
    machine = ClusterStateMachine(
        brokers=4, replication_factor=2, min_insync_replicas=1, broker_config=config
    )
    assert sorted(machine.cluster.brokers) == [0, 1, 2, 3]
    states = [machine.cluster.controller.partition_state(tp) for tp in machine.partitions]
    assert [len(state.replicas) for state in states] == [2, 2]
    broker = machine.cluster.config.broker
    assert broker.min_insync_replicas == 1 and broker.replica_lag_time_max_ms == 1_000
    # without min_insync_replicas, the broker config's own value is used
    machine = ClusterStateMachine(broker_config=attrs.evolve(config, min_insync_replicas=3))
    assert machine.min_insync_replicas == 3
    assert machine.cluster.config.broker.min_insync_replicas == 3


class FourBrokersRf2MinIsr1(ClusterStateMachine):
    def __init__(self) -> None:
        super().__init__(
            brokers=4,
            replication_factor=2,
            min_insync_replicas=1,
            broker_config=BrokerConfig(replica_lag_time_max_ms=1_000, replica_fetch_backoff_ms=50),
        )


TestFourBrokersRf2MinIsr1 = FourBrokersRf2MinIsr1.TestCase
TestFourBrokersRf2MinIsr1.settings = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_a_follower_that_truncated_to_a_diverging_epoch_still_learns_the_high_watermark() -> None:
    """Found by the machine: a follower in a fetch session whose response told it to truncate
    (it had been leader for an epoch that wrote nothing) ignores that response's high
    watermark, so the leader's session must not count it as sent; before the fix the quiet
    partition's follower kept a high watermark of 0 for ever."""
    machine = ClusterStateMachine()
    machine.deliver_follower_fetch_round()
    machine.cluster.stop_broker(0)
    machine.stopped.add(0)
    machine.deliver_follower_fetch_round()
    machine.replication_converges()
    machine.produce(0, -1, 1, 0)
    machine.deliver_follower_fetch_round()
    tp = machine.partitions[0]
    machine.cluster.elect_leader(tp, 2)
    machine.cluster.elect_leader(tp, 1)
    machine.replication_converges()
    assert machine.cluster.broker(2).replica_manager.high_watermark(tp) == 1

"""Runs the exported cluster state machine with modest settings (a few seconds)."""

from hypothesis import HealthCheck, settings

from cluster.testing import ClusterStateMachine


class Machine(ClusterStateMachine):
    """The exported machine; subclassed so that these settings stay local to this module."""


TestClusterStateMachine = Machine.TestCase
TestClusterStateMachine.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],  # a loaded CI machine is not a bug
)

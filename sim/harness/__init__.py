"""sim.harness: an in-process cluster of real brokers over a pluggable transport.

Each :class:`BrokerNode` runs the real ``replica`` / ``coordinator`` / ``apis`` layers; a
minimal :class:`Controller` creates topics and elects leaders; a :class:`Transport` carries
requests (:class:`ImmediateTransport`: in order, no delay); a :class:`ManualClock` gives
integer milliseconds. :class:`Cluster` wires them together. :mod:`sim.harness.testing` holds
a hypothesis state machine of the cluster that checks Kafka's replication invariants.
"""

from sim.harness.broker import BrokerNode
from sim.harness.client import Client
from sim.harness.clock import ManualClock
from sim.harness.cluster import Call, Cluster
from sim.harness.controller import Controller
from sim.harness.errors import (
    BrokerStateError,
    DuplicateResponseError,
    HarnessError,
    IneligibleLeaderError,
    InvalidTopicError,
    UnexpectedResponseError,
    UnknownBrokerError,
)
from sim.harness.transport import (
    ImmediateTransport,
    Receiver,
    ResponseCallback,
    Transport,
    broker_node_name,
)

__all__ = [
    "BrokerNode",
    "BrokerStateError",
    "Call",
    "Client",
    "Cluster",
    "Controller",
    "DuplicateResponseError",
    "HarnessError",
    "ImmediateTransport",
    "IneligibleLeaderError",
    "InvalidTopicError",
    "ManualClock",
    "Receiver",
    "ResponseCallback",
    "Transport",
    "UnexpectedResponseError",
    "UnknownBrokerError",
    "broker_node_name",
]

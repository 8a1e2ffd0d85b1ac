"""cluster: an in-process cluster of real brokers over a pluggable transport.

Each :class:`BrokerNode` runs the real ``replica`` / ``coordinator`` / ``apis`` layers; a
minimal :class:`Controller` creates topics and elects leaders; a :class:`Transport` carries
requests (:class:`ImmediateTransport`: in order, no delay); the brokers read one
:class:`Clock` of integer milliseconds (a :class:`ManualClock` unless the driver brings its
own). :class:`Cluster` wires them together. :mod:`cluster.testing` holds
a hypothesis state machine of the cluster that checks Kafka's replication invariants.
"""

from cluster.broker import BrokerNode
from cluster.client import Client
from cluster.clock import Clock, ManualClock
from cluster.cluster import Call, Cluster
from cluster.controller import Controller
from cluster.errors import (
    BrokerStateError,
    ClusterError,
    DuplicateResponseError,
    IneligibleLeaderError,
    InvalidTopicError,
    UnexpectedResponseError,
    UnknownBrokerError,
)
from cluster.transport import (
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
    "Clock",
    "Cluster",
    "ClusterError",
    "Controller",
    "DuplicateResponseError",
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

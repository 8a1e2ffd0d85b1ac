"""Simulated Kafka clients: a Sarama-style producer, a consumer and the Burrow consumer.

All are sans-IO state machines on the simulator's clock (:mod:`sim.core.engine`): they talk to
brokers through a :class:`ClientNetwork` (``apis`` request objects in, response objects out),
learn leaders and coordinators from a :class:`MetadataView`, draw randomness only from the
``random.Random`` they are given, and report what happens to every message to a
:class:`ClientRecorder` as immutable events.
"""

from sim.clients.burrow import BurrowConfig, BurrowConsumer
from sim.clients.consumer import Consumer, ConsumerRecords
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.errors import ClientConfigError, ClientError, ClientStateError
from sim.clients.events import (
    ClientEvent,
    ClientRecorder,
    CommitCompleted,
    ConsumerHalted,
    InMemoryRecorder,
    MessageAcked,
    MessageCommittable,
    MessageCommitted,
    MessageDelivered,
    MessageProcessed,
    MessagesAcked,
    MessageSent,
    MessagesSent,
    ProcessingOutcome,
)
from sim.clients.metadata import ClientMetadata
from sim.clients.metrics import MessageMetrics, MetricsAdapter
from sim.clients.network import ClientNetwork, MetadataView
from sim.clients.producer import Producer
from sim.clients.producer_config import ProducerConfig
from sim.clients.workload import ProducerWorkload, WorkloadDriver, arrival_times

__all__ = [
    "BurrowConfig",
    "BurrowConsumer",
    "ClientConfigError",
    "ClientError",
    "ClientEvent",
    "ClientMetadata",
    "ClientNetwork",
    "ClientRecorder",
    "ClientStateError",
    "CommitCompleted",
    "Consumer",
    "ConsumerConfig",
    "ConsumerHalted",
    "ConsumerRecords",
    "InMemoryRecorder",
    "MessageAcked",
    "MessageCommittable",
    "MessageCommitted",
    "MessageDelivered",
    "MessageMetrics",
    "MessageProcessed",
    "MessageSent",
    "MessagesAcked",
    "MessagesSent",
    "MetadataView",
    "MetricsAdapter",
    "ProcessingOutcome",
    "Producer",
    "ProducerConfig",
    "ProducerWorkload",
    "WorkloadDriver",
    "arrival_times",
]

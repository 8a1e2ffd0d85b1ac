"""kafka_server: the Kafka wire protocol in front of the in-process cluster.

Real Kafka clients (kafka-python, aiokafka, confluent-kafka/librdkafka) talk to the brokers of
a :class:`cluster.Cluster` over TCP. :class:`KafkaServer` is the trio driver (listeners,
connections, the real-time reaper); :mod:`kafka_server.translations` maps wire messages to
:mod:`apis` request and response types, API by API; :mod:`kafka_server.protocol` frames and
decodes with ``kio``; :mod:`kafka_server.records` reads and writes v2 record batches.
:class:`ServerThread` runs a server in a background thread for synchronous callers (tests
with blocking clients); :mod:`kafka_server.pytest_plugin` gives a test a running cluster.
Run one with ``python -m kafka_server serve``; see docs/server.md.
"""

from kafka_server.server import KafkaServer, TopicSpec
from kafka_server.thread import ServerThread
from kafka_server.translations import TRANSLATIONS, Translation

__all__ = ["TRANSLATIONS", "KafkaServer", "ServerThread", "TopicSpec", "Translation"]

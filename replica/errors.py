"""Kafka's numeric error codes (``org.apache.kafka.common.protocol.Errors``).

This is the one place the project defines error codes: ``replica`` is the lowest Kafka-aware
layer and every layer above imports downward only, so ``coordinator`` and ``apis`` use (and
``apis`` re-exports) this enum. The numbers are Kafka's wire values; only the codes the broker
model can produce or a client of it must understand are listed.
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    """A Kafka error code. ``int(error)`` is the value sent on the wire."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    INVALID_PRODUCER_EPOCH = 47
    KAFKA_STORAGE_ERROR = 56
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88

    @property
    def is_retriable(self) -> bool:
        """Whether Kafka's exception for this code is a ``RetriableException``.

        Clients (the simulator's producers and consumers) retry these after a backoff.
        """
        return self in _RETRIABLE


_RETRIABLE = frozenset(
    {
        Errors.CORRUPT_MESSAGE,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.REQUEST_TIMED_OUT,
        Errors.REPLICA_NOT_AVAILABLE,
        Errors.NETWORK_EXCEPTION,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.FETCH_SESSION_ID_NOT_FOUND,
        Errors.INVALID_FETCH_SESSION_EPOCH,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.OFFSET_NOT_AVAILABLE,
        Errors.UNSTABLE_OFFSET_COMMIT,
    }
)

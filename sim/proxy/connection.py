"""A reader's connection to its proxy server: requests and answers over the simulated network.

The seed's clients speak HTTP to the proxy (``consume_proxy.http``); here a request is a call
on the server that travels the network like a Kafka request does: reader -> server on the
link between the two nodes (in order, with the ``client_broker`` latency of the scenario's
``[network]``), handled by the server at arrival, its answer back on the reverse link. The
server's handling takes no simulated time (the core answers in microseconds of CPU; there is
no request queue in front of it). The network loses nothing between these nodes (no fault
takes a proxy or a reader down), so every request gets exactly one answer.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from functools import partial
from typing import NamedTuple, Protocol, TypeVar

from replica.types import TopicPartition
from sim.core.network import Network

__all__ = ["Answer", "Connection", "Delivery", "ProxyEndpoint"]

_T = TypeVar("_T")


class Delivery(NamedTuple):
    """A record a Read handed out: where it is, which delivery of it this is (1 for the first
    hand-out), and the message id its producer gave it."""

    tp: TopicPartition
    offset: int
    delivery: int
    message_id: int


class Answer(enum.Enum):
    """The answer to an Acknowledge or a Cancel."""

    ACCEPTED = "accepted"
    ENDED = "ended"
    """Refused, changing nothing: the delivery had ended (its lease expired, so the record
    was handed out again or archived); the HTTP API's 409."""


class ProxyEndpoint(Protocol):
    """What a connection needs of a proxy server: its node, and the three requests, each
    answered through ``reply`` (at once or, for a waiting Read, later)."""

    name: str

    def read(self, timeout_ms: int, reply: Callable[[Delivery | None], None]) -> None: ...

    def acknowledge(self, delivery: Delivery, reply: Callable[[Answer], None]) -> None: ...

    def cancel(self, delivery: Delivery, reply: Callable[[Answer], None]) -> None: ...


class Connection:
    """Reader ``reader``'s connection to ``server`` over ``network`` (see the module doc)."""

    __slots__ = ("_network", "reader", "server")

    def __init__(self, network: Network, reader: str, server: ProxyEndpoint) -> None:
        self._network = network
        self.reader = reader
        self.server = server

    def read(self, timeout_ms: int, on_answer: Callable[[Delivery | None], None]) -> None:
        """Read(timeout): ``on_answer`` gets a delivery, or None if none came in time."""
        self._send(partial(self.server.read, timeout_ms, partial(self._back, on_answer)))

    def acknowledge(self, delivery: Delivery, on_answer: Callable[[Answer], None]) -> None:
        """Acknowledge(topic, partition, offset) of ``delivery``, pinned to its delivery."""
        self._send(partial(self.server.acknowledge, delivery, partial(self._back, on_answer)))

    def cancel(self, delivery: Delivery, on_answer: Callable[[Answer], None]) -> None:
        """Cancel(topic, partition, offset) of ``delivery``: hand it back for another reader."""
        self._send(partial(self.server.cancel, delivery, partial(self._back, on_answer)))

    def _send(self, handle: Callable[[], object]) -> None:
        self._network.send(self.reader, self.server.name, handle)

    def _back(self, on_answer: Callable[[_T], None], answer: _T) -> None:
        self._network.send(self.server.name, self.reader, partial(on_answer, answer))

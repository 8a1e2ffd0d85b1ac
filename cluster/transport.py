"""How requests and responses travel between the cluster's nodes.

A :class:`Transport` carries a request from a node (a client, the controller or a broker's
replica fetcher) to a broker and the broker's response back. The cluster binds a *receiver*
to it: the transport calls ``receiver(destination, request, reply)`` when the request reaches
the broker, and the broker calls ``reply(response_body)`` once it has answered; the transport
then hands the body to the sender's ``on_response``.

Contract every transport keeps: **``on_response`` is called exactly once per** :meth:`send`,
with the broker's response, or with ``request.body.error_response(Errors.NETWORK_EXCEPTION)``
when the connection fails (the broker is down, or the transport loses the message). The
the cluster relies on it: a replica fetcher waits for its in-flight fetch to be answered.

:class:`ImmediateTransport` delivers in FIFO order with no delay, when :meth:`poll` runs (the
cluster polls it until idle). A simulator plugs in its own transport with network delays and
does its delivering in its own event loop (its ``poll`` returns False).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

from apis.request_channel import Request, ResponseBody

__all__ = ["ImmediateTransport", "Receiver", "ResponseCallback", "Transport", "broker_node_name"]

#: Called with the response body to a request.
ResponseCallback = Callable[[ResponseBody], None]
#: ``receiver(destination_broker_id, request, reply)``: a request reaches a broker.
Receiver = Callable[[int, Request, ResponseCallback], None]


def broker_node_name(broker_id: int) -> str:
    """The node name of a broker as a transport's ``source`` (e.g. ``"broker-1"``)."""
    return f"broker-{broker_id}"


class Transport(Protocol):
    """Carries requests to brokers and responses back (see the module docstring)."""

    def bind(self, receiver: Receiver) -> None:
        """Set the function that hands a request to its destination broker."""

    def send(
        self, source: str, destination: int, request: Request, on_response: ResponseCallback
    ) -> None:
        """Send ``request`` from node ``source`` to broker ``destination``."""

    def poll(self) -> bool:
        """Deliver what is deliverable now; True if anything was delivered."""


class ImmediateTransport:
    """Zero-delay, in-order delivery: every message is queued and delivered by :meth:`poll`
    in the order it was sent (requests and responses share one FIFO).

    ``hold(source, destination, request)``, if given, picks requests that are not delivered
    by :meth:`poll` but wait in :attr:`held` until :meth:`release` (tests use it to decide
    when each follower fetch reaches its leader).
    """

    __slots__ = ("_hold", "_queue", "_receiver", "delivered", "held")

    def __init__(self, hold: Callable[[str, int, Request], bool] | None = None) -> None:
        self._queue: deque[Callable[[], None]] = deque()
        self._receiver: Receiver | None = None
        self._hold = hold
        #: Held requests, oldest first (each a delivery waiting for :meth:`release`).
        self.held: list[Callable[[], None]] = []
        #: Messages (requests and responses) delivered so far.
        self.delivered = 0

    def __len__(self) -> int:
        """Messages queued for delivery (held requests not included)."""
        return len(self._queue)

    def bind(self, receiver: Receiver) -> None:
        """Set the receiver (once, by the cluster)."""
        self._receiver = receiver

    def send(
        self, source: str, destination: int, request: Request, on_response: ResponseCallback
    ) -> None:
        """Queue (or hold) the request; its response is queued when the broker replies.

        Raises ``RuntimeError`` if no receiver is bound.
        """
        receiver = self._receiver
        if receiver is None:
            raise RuntimeError("ImmediateTransport.send before bind(): no receiver to deliver to")

        def reply(body: ResponseBody) -> None:
            self._queue.append(lambda: on_response(body))

        def deliver() -> None:
            receiver(destination, request, reply)

        if self._hold is not None and self._hold(source, destination, request):
            self.held.append(deliver)
        else:
            self._queue.append(deliver)

    def release(self, index: int) -> None:
        """Queue held request ``index`` for delivery by the next :meth:`poll`.

        Raises ``IndexError`` if there is no such held request.
        """
        self._queue.append(self.held.pop(index))

    def poll(self) -> bool:
        """Deliver queued messages, oldest first, until the queue is empty (messages queued
        while delivering are delivered too). Returns True if any was delivered."""
        delivered = False
        while self._queue:
            self._queue.popleft()()
            self.delivered += 1
            delivered = True
        return delivered

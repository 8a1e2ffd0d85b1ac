"""The simulated network: per-link latency, in-order delivery, latency spikes and outages.

Its settings (:class:`NetworkConfig`, the scenario's ``[network]`` section) and its fault
(:class:`LatencySpike`, a ``[[faults]]`` entry) are declared in :mod:`sim.core.network_config`
and exported here too.

Sans-IO on top of the engine: :meth:`Network.send` takes a zero-argument ``deliver`` callback
and schedules it at the arrival time; the network never looks at what is sent.

* Each ordered pair of nodes is a *link* with its own latency distribution (by link class:
  ``broker_broker`` between two brokers, ``client_broker`` otherwise) and its own random
  stream ``network:<src>-><dst>``, so adding a node or a link never changes the latencies
  drawn on the others.
* Delivery is in order per link, like TCP: a message never arrives before one sent earlier
  on the same link (its arrival is pushed back to the previous arrival; equal arrival times
  keep sending order through the engine's FIFO tie-break).
* A latency spike (:class:`LatencySpike`, a scenario fault) adds one-way latency to matching
  links for messages *sent* inside its time window.
* :meth:`Network.disconnect` takes a node down: messages to or from it are dropped at
  sending, and messages in flight on its links are dropped on arrival (the connection
  broke), even if the node is back by then.

Every message ends in exactly one callback: ``deliver()`` when it arrives, or ``on_drop()``
(if given) when it is lost -- right after sending (as a new event, never inside ``send``)
when an endpoint is down, or at its arrival time when the connection broke while it was in
flight. A transport that must answer every request (e.g. with NETWORK_EXCEPTION) uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from typing import Literal

from sim.core.distributions import Distribution
from sim.core.engine import Scheduler
from sim.core.network_config import LatencySpike, NetworkConfig

__all__ = [
    "LatencySpike",
    "Link",
    "Network",
    "NetworkConfig",
    "NetworkError",
    "NodeKind",
    "spike_links",
]

NodeKind = Literal["broker", "client"]


class NetworkError(ValueError):
    """A call named an unknown node or added a node twice."""


class Link:
    """One direction between two nodes; see :class:`Network` for the guarantees."""

    __slots__ = (
        "draw_latency", "dst", "generation", "last_arrival", "latency", "rng", "spikes", "src",
    )  # fmt: skip

    def __init__(self, network: Network, src: str, dst: str, latency: Distribution) -> None:
        self.src = src
        self.dst = dst
        self.latency = latency
        self.rng = network.scheduler.rng(f"network:{src}->{dst}")
        self.draw_latency = latency.sampler(self.rng)
        self.last_arrival = 0
        self.generation = 0  # bumped when an endpoint goes down: in-flight messages are lost
        self.spikes: list[LatencySpike] = []

    def extra_latency(self, now: int) -> int:
        """Sum of the spikes active at ``now`` on this link."""
        return sum(s.extra for s in self.spikes if s.at <= now < s.at + s.duration)


class Network:
    """Nodes and the links between them. Times are integer microseconds."""

    def __init__(self, scheduler: Scheduler, config: NetworkConfig) -> None:
        self.scheduler = scheduler
        self.config = config
        self._kinds: dict[str, NodeKind] = {}
        self._down: set[str] = set()
        self._links: dict[tuple[str, str], Link] = {}
        self._links_of: dict[str, list[Link]] = {}
        self._spikes: list[LatencySpike] = []
        self.messages_sent = 0
        self.messages_delivered = 0
        self.messages_dropped = 0

    # -- topology -----------------------------------------------------------------------------

    def add_node(self, node: str, kind: NodeKind) -> None:
        """Register ``node``. Raises NetworkError if it exists already."""
        if node in self._kinds:
            raise NetworkError(f"node {node!r} already exists")
        if kind not in ("broker", "client"):
            raise NetworkError(f"node kind must be 'broker' or 'client', got {kind!r}")
        self._kinds[node] = kind
        self._links_of[node] = []

    @property
    def nodes(self) -> list[str]:
        """Registered nodes, in registration order."""
        return list(self._kinds)

    def link(self, src: str, dst: str) -> Link:
        """The link ``src -> dst`` (created on first use). Raises NetworkError for unknown nodes."""
        link = self._links.get((src, dst))
        if link is None:
            link = self._new_link(src, dst)
        return link

    def _new_link(self, src: str, dst: str) -> Link:
        for node in (src, dst):
            if node not in self._kinds:
                raise NetworkError(f"unknown node {node!r} (known: {', '.join(self._kinds)})")
        both_brokers = self._kinds[src] == "broker" and self._kinds[dst] == "broker"
        latency = self.config.broker_broker if both_brokers else self.config.client_broker
        link = Link(self, src, dst, latency)
        link.spikes = [spike for spike in self._spikes if _matches(spike, src, dst)]
        self._links[(src, dst)] = link
        self._links_of[src].append(link)
        if dst != src:
            self._links_of[dst].append(link)
        return link

    # -- faults -------------------------------------------------------------------------------

    def add_latency_spike(self, spike: LatencySpike) -> None:
        """Slow the links matching ``spike`` (existing and future) during its window."""
        self._spikes.append(spike)
        for (src, dst), link in self._links.items():
            if _matches(spike, src, dst):
                link.spikes.append(spike)

    def disconnect(self, node: str) -> None:
        """Take ``node`` down: drop what it sends or is sent, and what is in flight."""
        if node not in self._kinds:
            raise NetworkError(f"unknown node {node!r}")
        self._down.add(node)
        for link in self._links_of[node]:
            link.generation += 1
            link.last_arrival = 0

    def reconnect(self, node: str) -> None:
        """Bring ``node`` back; messages sent from now on are delivered again."""
        if node not in self._kinds:
            raise NetworkError(f"unknown node {node!r}")
        self._down.discard(node)

    def is_up(self, node: str) -> bool:
        return node not in self._down

    # -- sending ------------------------------------------------------------------------------

    def send(
        self,
        src: str,
        dst: str,
        deliver: Callable[[], object],
        on_drop: Callable[[], object] | None = None,
    ) -> int | None:
        """Send a message: call ``deliver()`` when it arrives at ``dst``, or ``on_drop()``
        when it is lost (see the module docstring).

        Returns the arrival time, or None if the message is dropped at once because ``src``
        or ``dst`` is down. Raises NetworkError for unknown nodes.
        """
        link = self._links.get((src, dst)) or self._new_link(src, dst)
        self.messages_sent += 1
        scheduler = self.scheduler
        if src in self._down or dst in self._down:
            self.messages_dropped += 1
            if on_drop is not None:
                scheduler.call_later(0, on_drop)
            return None
        now = scheduler.now
        arrival = now + link.draw_latency.draw()
        if link.spikes:
            arrival += link.extra_latency(now)
        if arrival < link.last_arrival:
            arrival = link.last_arrival
        link.last_arrival = arrival
        scheduler.call_at(arrival, _InFlight(self, link, deliver, on_drop))
        return arrival


class _InFlight:
    """A message sent on ``link``, scheduled for its arrival: calling it delivers it, or drops
    it if an endpoint went down since it was sent (the connection broke while it was in
    flight). One object per message (a partial would be three: itself, its arguments and a
    bound method), and a native call in the compiled build."""

    __slots__ = ("deliver", "generation", "link", "network", "on_drop")

    def __init__(
        self,
        network: Network,
        link: Link,
        deliver: Callable[[], object],
        on_drop: Callable[[], object] | None,
    ) -> None:
        self.network = network
        self.link = link
        self.generation = link.generation
        self.deliver = deliver
        self.on_drop = on_drop

    def __call__(self) -> None:
        network = self.network
        if self.link.generation == self.generation:
            network.messages_delivered += 1
            self.deliver()
        else:
            network.messages_dropped += 1
            on_drop = self.on_drop
            if on_drop is not None:
                on_drop()


def spike_links(spike: LatencySpike, nodes: Mapping[str, NodeKind]) -> list[tuple[str, str]]:
    """The (src, dst) pairs of ``nodes`` (name -> kind) that ``spike`` slows, leaving out pairs
    of two clients (clients only talk to brokers)."""
    return [
        (src, dst)
        for src in nodes
        for dst in nodes
        if src != dst and "broker" in (nodes[src], nodes[dst]) and _matches(spike, src, dst)
    ]


def _matches(spike: LatencySpike, src: str, dst: str) -> bool:
    forward = fnmatchcase(src, spike.src) and fnmatchcase(dst, spike.dst)
    backward = spike.bidirectional and fnmatchcase(dst, spike.src) and fnmatchcase(src, spike.dst)
    return forward or backward

"""The simulated world: the real broker code wired to the simulator's network, time and clients.

:class:`World` is what :func:`sim.runner.build_cluster` builds for a run; the modules are its
parts: :mod:`~sim.world.transport` (requests over the network and the handler pools),
:mod:`~sim.world.timers` (broker clock and timer wake-ups), :mod:`~sim.world.clients`,
:mod:`~sim.world.faults`, :mod:`~sim.world.probes` (brokers),
:mod:`~sim.world.client_probes` (clients) and :mod:`~sim.world.requests`.
"""

from sim.world.clients import ClientPort, ConsumerSlot, ProducerClient, start_clients
from sim.world.timers import BrokerTimers
from sim.world.transport import Exchange, SimTransport
from sim.world.world import CONTROLLER_NODE, World

__all__ = [
    "CONTROLLER_NODE",
    "BrokerTimers",
    "ClientPort",
    "ConsumerSlot",
    "Exchange",
    "ProducerClient",
    "SimTransport",
    "World",
    "start_clients",
]

"""Injecting a scenario's ``[[faults]]`` into a running world.

* ``latency_spike``: handed to the network, which slows matching links during the window.
* ``broker_failure``: at ``at`` the broker crashes (:meth:`World.crash_broker`); after
  ``duration`` it restarts (:meth:`World.restart_broker`), with its logs or without them.
* ``follower_stall``: the broker's replica fetchers stop fetching during the window
  (``Cluster.pause_fetchers`` / ``resume_fetchers``).
* ``consumer_crash``: the consumer is killed at ``at`` and a new instance starts after
  ``duration`` (:class:`~sim.world.clients.ConsumerSlot`).

Faults at the same time are applied in the order of the scenario file. They act on a
:class:`FaultTarget`, the few things a fault needs of the world (which :class:`~sim.world.World`
provides), so this module does not depend on the world that schedules it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Protocol

from sim.core.engine import Simulator
from sim.core.network import Network
from sim.scenario import BrokerFailure, Fault, FollowerStall, LatencySpike
from sim.world.clients import ConsumerSlot

__all__ = ["FaultTarget", "schedule_faults"]


class FaultTarget(Protocol):
    """What faults act on: the engine that times them, the network (latency spikes), the
    consumers by client id (crashes) and the broker-level fault actions."""

    @property
    def sim(self) -> Simulator: ...

    @property
    def network(self) -> Network: ...

    @property
    def consumers(self) -> Mapping[str, ConsumerSlot]: ...

    def crash_broker(self, broker_id: int) -> None: ...

    def restart_broker(self, broker_id: int, *, lose_log: bool = False) -> None: ...

    def stall_follower(self, broker_id: int) -> None: ...

    def resume_follower(self, broker_id: int) -> None: ...


def schedule_faults(world: FaultTarget, faults: Sequence[Fault]) -> None:
    """Schedule every fault of ``faults`` on ``world`` (see the module docstring)."""
    for fault in faults:
        if isinstance(fault, LatencySpike):
            world.network.add_latency_spike(fault)
            continue
        begin: Callable[[], None]
        end: Callable[[], None]
        if isinstance(fault, BrokerFailure):
            begin = partial(world.crash_broker, fault.broker)
            end = partial(world.restart_broker, fault.broker, lose_log=fault.log == "lost")
        elif isinstance(fault, FollowerStall):
            begin = partial(world.stall_follower, fault.broker)
            end = partial(world.resume_follower, fault.broker)
        else:
            slot = world.consumers[fault.consumer]
            begin, end = slot.crash, slot.restart
        world.sim.call_at(fault.at, begin)
        if fault.duration is not None:
            world.sim.call_at(fault.at + fault.duration, end)

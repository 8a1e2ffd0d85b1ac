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

The scenario loader refuses faults aimed at a broker or consumer that does not exist and
latency spikes whose ``src``/``dst`` patterns match no link (e.g. ``broker-7`` in a 3-broker
cluster, a misspelt client id); :func:`fault_warnings` finds those it lets through that would
change nothing: a fault that starts after the run ends, a latency spike that adds no latency,
and a follower stall of a broker that follows no partition at the start (every replication
factor 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Protocol

from sim.core.engine import Simulator
from sim.core.network import Network
from sim.core.units import format_duration
from sim.scenario import BrokerFailure, Fault, FollowerStall, LatencySpike
from sim.world.clients import ConsumerSlot

__all__ = ["FaultTarget", "fault_warnings", "schedule_faults"]


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


def fault_warnings(
    faults: Sequence[Fault], duration_us: int, *, follows: Callable[[int], bool]
) -> list[str]:
    """Warnings for the ``faults`` that would change nothing in a run of ``duration_us`` (see
    the module docstring); ``follows(broker_id)`` says whether a broker hosts a follower
    replica."""
    warnings = []
    for i, fault in enumerate(faults):
        name = f"faults[{i}] ({fault.type})"
        if fault.at >= duration_us:
            warnings.append(
                f"{name} starts at {format_duration(fault.at, 'us')}, when the run has ended "
                f"({format_duration(duration_us, 'us')}): it never happens"
            )
        elif isinstance(fault, LatencySpike) and fault.extra == 0:
            warnings.append(f"{name} adds 0 latency: it changes nothing")
        elif isinstance(fault, FollowerStall) and not follows(fault.broker):
            warnings.append(
                f"{name} stalls broker {fault.broker}, which follows no partition: "
                "it changes nothing"
            )
    return warnings

"""The consume proxy in the simulator: seed 001's proxy servers and the readers using them.

The servers run the real ``consume_proxy`` code (:class:`~consume_proxy.ConsumeProxy` fed by
:class:`~consume_proxy.cluster_feed.ClusterFeed`) on the simulated cluster; the readers are
simulated processes that long-poll Read, work on each record, and acknowledge it, forget it
or cancel it. A scenario's ``[proxy]`` section (:mod:`sim.scenario.proxy`) asks for them; the
world builds them (:class:`ProxyDeployment`); what they do is measured in the run's ``proxy``
table (:mod:`sim.output.proxy_recorder`) and the summary's ``proxy`` section. See
docs/simulator.md, "The consume proxy".
"""

from sim.proxy.connection import Answer, Connection, Delivery
from sim.proxy.deployment import ProxyDeployment, proxy_topics
from sim.proxy.reader import TRANSITIONS, Outcome, ProxyReader, ReaderState, ReaderStateError
from sim.proxy.server import ProxyServer

__all__ = [
    "TRANSITIONS",
    "Answer",
    "Connection",
    "Delivery",
    "Outcome",
    "ProxyDeployment",
    "ProxyReader",
    "ProxyServer",
    "ReaderState",
    "ReaderStateError",
    "proxy_topics",
]

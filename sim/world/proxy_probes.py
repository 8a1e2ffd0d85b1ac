"""Time-series probes of the consume proxy's servers, sampled with the others.

Per server (source ``proxy-<i>``): ``proxy_pending`` (records handed out and not finished:
leases running), ``proxy_available`` (records fetched and waiting for a reader) and
``proxy_waiting_reads`` (Reads the server holds, waiting for a record or their timeout); and
``commit_errors``, its OffsetCommit responses that carried an error, cumulative, as a
consumer's. Per partition it serves (source ``proxy-<i>:<topic>-<partition>``), the proxy
group's ``group_lag``, read from the brokers as a consumer group's
(:func:`~sim.world.client_probes.group_lag`), so the summary warns when the proxy and its
readers fall behind the producers, as it does for a consumer.
"""

from __future__ import annotations

from functools import partial

from cluster import Cluster
from consume_proxy import RecordState
from sim.output import MetricsRecorder
from sim.output.health import GROUP_LAG
from sim.proxy import ProxyDeployment, ProxyServer
from sim.world.client_probes import group_lag

__all__ = ["register_proxy_probes"]


def _records_in(server: ProxyServer, state: RecordState) -> int:
    proxy = server.proxy
    return sum(proxy.partition(tp).count(state) for tp in proxy.served)


def _reads_waiting(server: ProxyServer) -> int:
    return server.reads_waiting


def register_proxy_probes(
    recorder: MetricsRecorder, cluster: Cluster, deployment: ProxyDeployment, group_id: str
) -> None:
    """Register the probes of ``deployment``'s servers (see the module docstring)."""
    for server in deployment.servers:
        name = server.name
        recorder.add_probe(name, "proxy_pending", partial(_records_in, server, RecordState.PENDING))
        recorder.add_probe(
            name, "proxy_available", partial(_records_in, server, RecordState.AVAILABLE)
        )
        recorder.add_probe(name, "proxy_waiting_reads", partial(_reads_waiting, server))
        recorder.add_probe(
            name, "commit_errors", partial(recorder.request_errors, name, "OffsetCommit")
        )
        for tp in server.proxy.served:
            recorder.add_probe(
                f"{name}:{tp.topic}-{tp.partition}",
                GROUP_LAG,
                partial(group_lag, cluster, group_id, tp),
            )

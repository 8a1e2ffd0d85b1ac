"""ClusterFeed end to end on the in-process cluster: records produced to a topic reach
waiting reads, an unacknowledged record comes back after its lease, the group's committed
offsets follow the acknowledged prefix, and a proxy started afresh resumes from them."""

from __future__ import annotations

from apis.offset_fetch import OffsetFetchResponse
from cluster import Client, Cluster
from consume_proxy import ConsumeProxy, Record, RecordState
from consume_proxy.cluster_feed import ClusterFeed
from replica.types import TopicPartition

GROUP = "proxies"
P0, P1 = TopicPartition("jobs", 0), TopicPartition("jobs", 1)


def started() -> tuple[Cluster, Client]:
    cluster = Cluster(1)
    cluster.create_topic("jobs", 2, 1)
    cluster.advance(500)
    return cluster, Client(cluster)


def feed(cluster: Cluster, client: Client) -> ClusterFeed:
    proxy = ConsumeProxy(lease_duration=1_000, start=cluster.clock.now)
    feed = ClusterFeed(proxy, client, GROUP, max_wait_ms=100)
    for tp in (P0, P1):
        feed.assign(tp)
    return feed


def committed(client: Client) -> dict[TopicPartition, int]:
    offsets = client.fetch_offsets(GROUP, [P0, P1]).result(OffsetFetchResponse).offsets
    return {tp: offsets[tp].offset for tp in (P0, P1)}


def test_reads_acks_redelivery_and_commits_through_the_cluster() -> None:
    cluster, client = started()
    f = feed(cluster, client)
    got: list[Record | None] = []
    for _ in range(3):
        f.proxy.read(5_000, got.append)  # long polls waiting in the proxy
    client.produce(P0, [b"a", b"b"])
    client.produce(P1, [b"c"])
    assert f.poll() == 3
    assert sorted((r.partition, r.offset, r.value) for r in got if r) == [
        (0, 0, b"a"),
        (0, 1, b"b"),
        (1, 0, b"c"),
    ]
    # Two acknowledged; jobs-0 offset 0 never is: its lease ends and it comes back.
    f.proxy.acknowledge(P0, 1)
    f.proxy.acknowledge(P1, 0)
    f.poll()
    assert committed(client) == {P0: -1, P1: 1}  # jobs-0 waits for offset 0
    cluster.advance(1_000)
    f.poll()
    assert f.proxy.state(P0, 0) is RecordState.AVAILABLE
    again: list[Record | None] = []
    f.proxy.read(0, again.append)
    assert [(r.offset, r.delivery_count) for r in again if r] == [(0, 2)]
    f.proxy.acknowledge(P0, 0)
    f.poll()
    assert committed(client) == {P0: 2, P1: 1}


def test_a_new_proxy_resumes_from_the_committed_offsets() -> None:
    cluster, client = started()
    first = feed(cluster, client)
    client.produce(P0, [b"a", b"b", b"c"])
    first.poll()
    for _ in range(2):
        first.proxy.read(0, lambda record: first.proxy.acknowledge(P0, record.offset))
    first.poll()
    assert committed(client)[P0] == 2
    # The server dies; a fresh one takes the partitions over from the group's commits.
    second = feed(cluster, client)
    second.poll()
    got: list[Record | None] = []
    second.proxy.read(0, got.append)
    assert [(r.offset, r.value) for r in got if r] == [(2, b"c")]

"""ClusterFeed end to end on the in-process cluster: records produced to a topic reach
waiting reads, an unacknowledged record comes back after its lease, the group's committed
offsets follow the acknowledged prefix, the state log is produced and committed, and a server
taking over after a crash catches up from the log: nothing is lost, and records are handed
out again only if their lease had expired or was running at the crash."""

from __future__ import annotations

from apis.fetch import FetchResponse
from apis.offset_fetch import OffsetFetchResponse
from cluster import Client, Cluster
from consume_proxy import ConsumeProxy, LogEntry, LogEntryKind, Record, RecordState, decode_entry
from consume_proxy.cluster_feed import DEFAULT_LOG_TOPIC, ClusterFeed
from replica.types import TopicPartition

GROUP = "proxies"
P0, P1 = TopicPartition("jobs", 0), TopicPartition("jobs", 1)


def started(brokers: int = 1) -> tuple[Cluster, Client]:
    cluster = Cluster(brokers)
    cluster.create_topic("jobs", 2, brokers)
    cluster.create_topic(DEFAULT_LOG_TOPIC, 2, brokers)
    cluster.advance(500)
    return cluster, Client(cluster)


def feed(cluster: Cluster, client: Client, writer: int = 1) -> ClusterFeed:
    proxy = ConsumeProxy(lease_duration=1_000, writer=writer, start=cluster.clock.now)
    feed = ClusterFeed(proxy, client, GROUP, max_wait_ms=100)
    for tp in (P0, P1):
        feed.assign(tp)
    caught_up(feed)
    return feed


def caught_up(feed: ClusterFeed) -> None:
    """Poll until the feed has read its claims back (a round trip through the log)."""
    for _ in range(5):
        feed.poll()
    assert feed.proxy.catching_up() == []
    return feed


def committed(client: Client, *partitions: TopicPartition) -> dict[TopicPartition, int]:
    partitions = partitions or (P0, P1)
    offsets = client.fetch_offsets(GROUP, partitions).result(OffsetFetchResponse).offsets
    return {tp: offsets[tp].offset for tp in partitions}


def log_of(client: Client, tp: TopicPartition) -> list[LogEntry]:
    """Every entry in the state log of ``tp``."""
    answer = client.fetch(TopicPartition(DEFAULT_LOG_TOPIC, tp.partition), 0, max_wait_ms=0)
    data = answer.result(FetchResponse).responses[TopicPartition(DEFAULT_LOG_TOPIC, tp.partition)]
    return [
        decode_entry(record.key, record.value, batch.base_offset + index)
        for batch in data.records
        for index, record in enumerate(batch.records)
    ]


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
    second = feed(cluster, client, writer=2)
    second.poll()
    got: list[Record | None] = []
    second.proxy.read(0, got.append)
    assert [(r.offset, r.value) for r in got if r] == [(2, b"c")]


LOG0 = TopicPartition(DEFAULT_LOG_TOPIC, 0)


def test_the_state_log_is_produced_in_order_and_committed_with_the_data() -> None:
    cluster, client = started()
    f = feed(cluster, client)
    client.produce(P0, [b"a", b"b"])
    f.poll()
    got: list[Record | None] = []
    f.proxy.read(0, got.append)
    f.proxy.read(0, got.append)
    f.proxy.acknowledge(P0, 1)
    f.poll()
    assert [(e.position, e.kind, e.offset, e.writer) for e in log_of(client, P0)] == [
        (0, LogEntryKind.CLAIM, 0, 1),
        (1, LogEntryKind.PENDING, 0, 1),
        (2, LogEntryKind.PENDING, 1, 1),
        (3, LogEntryKind.ACKNOWLEDGED, 1, 1),
    ]
    f.poll()  # the entries are read back
    # Offset 0 is pending: the data cannot move, nor the log past its Pending entry (at 1).
    assert committed(client, P0, LOG0) == {P0: -1, LOG0: 1}
    f.proxy.acknowledge(P0, 0)
    f.poll()  # data committed to 2 and, in the same OffsetCommit, the log to what was read
    assert committed(client, P0, LOG0) == {P0: 2, LOG0: 4}
    f.poll()  # the Acknowledged entry of offset 0 read back: settled by the data commit
    assert committed(client, P0, LOG0) == {P0: 2, LOG0: 5}


def run(cluster: Cluster, feeds: list[ClusterFeed], ms: int, step: int = 10) -> None:
    for _ in range(ms // step):
        cluster.advance(step)
        for f in feeds:
            f.poll()


def test_a_server_taking_over_after_a_crash_loses_nothing_and_repeats_only_open_leases() -> None:
    cluster, client = started(brokers=3)  # replicated: acks=all produces wait for followers
    a = feed(cluster, client)
    client.produce(P0, [b"%d" % i for i in range(10)])
    client.produce(P1, [b"%d" % i for i in range(10)])
    run(cluster, [a], 100)
    handed: dict[tuple[int, int], list[tuple[str, int, int]]] = {}  # -> (server, time, lease)

    def reader(server: str, f: ClusterFeed) -> None:
        def got(record: Record | None) -> None:
            if record is not None:
                key = (record.partition, record.offset)
                handed.setdefault(key, []).append((server, f.proxy.now(), record.lease_deadline))

        f.proxy.read(0, got)

    for _ in range(12):
        reader("a", a)
    acked = sorted(handed)[::2]  # every other record handed out is acknowledged
    for partition, offset in acked:
        a.proxy.acknowledge(TopicPartition("jobs", partition), offset)
    cancelled = sorted(handed)[1]
    a.proxy.cancel(TopicPartition("jobs", cancelled[0]), cancelled[1])
    run(cluster, [a], 200)  # the log entries replicate, the commits land
    crash = cluster.clock.now
    del a  # a dies: nothing of it runs again

    proxy = ConsumeProxy(lease_duration=1_000, writer=2, start=crash)
    b = ClusterFeed(proxy, client, GROUP, max_wait_ms=50)
    for tp in (P0, P1):
        b.assign(tp)
    run(cluster, [b], 50)
    assert b.proxy.catching_up() == []
    for _ in range(100):  # b's readers take everything, again and again, acknowledging
        reader("b", b)
        for (partition, offset), deliveries in handed.items():
            server, _, _ = deliveries[-1]
            tp = TopicPartition("jobs", partition)
            if server == "b" and b.proxy.state(tp, offset) is RecordState.PENDING:
                b.proxy.acknowledge(tp, offset)
        run(cluster, [b], 50)
    assert committed(client) == {P0: 10, P1: 10}  # nothing lost
    again = {key: d for key, d in handed.items() if [s for s, _, _ in d].count("b") and len(d) > 1}
    assert not set(again) & set(acked)  # an acknowledged record is never handed out again
    for key, deliveries in again.items():  # the rest only once a's lease had ended, but the
        (_, _, a_lease), (_, b_time, _) = deliveries[-2], deliveries[-1]  # cancelled one: the
        assert b_time >= a_lease or key == cancelled  # log commit passed its ended delivery
    assert len(again) == 12 - len(acked)


def test_an_acknowledgement_sent_to_any_server_reaches_the_owner_through_the_log() -> None:
    cluster, client = started()
    owner = feed(cluster, client, writer=1)
    other = ClusterFeed(ConsumeProxy(lease_duration=1_000, writer=2), client, GROUP)
    client.produce(P0, [b"a"])
    run(cluster, [owner], 20)
    got: list[Record | None] = []
    owner.proxy.read(0, got.append)
    record = got[0]
    assert record is not None
    other.proxy.forward(LogEntryKind.ACKNOWLEDGE_REQUEST, P0, 0, record.delivery_count)
    run(cluster, [owner, other], 40)  # produced by other, read and applied by owner
    assert owner.proxy.counts.applied == 1 and other.proxy.counts.forwarded == 1
    assert committed(client, P0) == {P0: 1}


def test_a_partition_revoked_from_a_live_server_moves_with_its_leases() -> None:
    cluster, client = started()
    a = feed(cluster, client, writer=1)
    client.produce(P0, [b"a", b"b"])
    run(cluster, [a], 20)
    held: list[Record | None] = []
    a.proxy.read(0, held.append)
    a.proxy.read(0, held.append)
    first, second = held
    assert first is not None and second is not None
    a.proxy.acknowledge(P0, first.offset)
    run(cluster, [a], 20)
    a.revoke(P0)  # the group moves jobs-0: a commits and stops serving it
    assert a.proxy.served == [P1]
    b = ClusterFeed(
        ConsumeProxy(lease_duration=1_000, writer=2, start=cluster.clock.now), client, GROUP
    )
    run(cluster, [a], 20)
    assert b.assign(P0) == 1
    run(cluster, [a, b], 40)
    assert b.proxy.state(P0, 1) is RecordState.PENDING  # a's lease runs on at b
    # a's reader acknowledges at a, which forwards it: b applies it.
    a.proxy.forward(LogEntryKind.ACKNOWLEDGE_REQUEST, P0, 1, second.delivery_count)
    run(cluster, [a, b], 40)
    assert committed(client, P0) == {P0: 2}


def test_a_previous_owner_still_alive_is_fenced_by_the_new_owners_claim() -> None:
    cluster, client = started()
    a = feed(cluster, client, writer=1)
    client.produce(P0, [b"%d" % i for i in range(4)])
    run(cluster, [a], 20)
    # b is given jobs-0 while a has not been told (a session that a thinks is alive).
    b = ClusterFeed(
        ConsumeProxy(lease_duration=1_000, writer=2, start=cluster.clock.now), client, GROUP
    )
    b.assign(P0)
    run(cluster, [b], 30)  # b claims jobs-0 and catches up
    late: list[Record | None] = []
    a.proxy.read(0, late.append)  # a hands out a record before it reads b's claim
    (record,) = late
    assert record is not None and record.partition == 0
    run(cluster, [a, b], 40)
    assert a.proxy.served == [P1] and a.proxy.counts.fenced == 1  # a stopped serving jobs-0
    # b merged a's late hand-out: the record keeps a's lease and is not handed out again.
    assert b.proxy.state(P0, record.offset) is RecordState.PENDING
    assert b.proxy.partition(P0).lease_deadline(record.offset) == record.lease_deadline
    others: list[Record | None] = []
    for _ in range(4):
        b.proxy.read(0, others.append)
    assert record.offset not in [r.offset for r in others if r is not None]


def test_archived_records_go_to_the_dead_letter_topic_before_the_commit_passes_them() -> None:
    cluster, client = started()
    cluster.create_topic("jobs.dead", 2, 1)
    proxy = ConsumeProxy(lease_duration=1_000, delivery_count_limit=1, writer=1, start=500)
    f = ClusterFeed(proxy, client, GROUP, max_wait_ms=100, dead_letter_topic="jobs.dead")
    for tp in (P0, P1):
        f.assign(tp)
    caught_up(f)
    client.produce(P1, [b"poison", b"fine"])
    run(cluster, [f], 20)
    got: list[Record | None] = []
    proxy.read(0, got.append)
    proxy.read(0, got.append)
    proxy.reject(P1, 0)
    proxy.acknowledge(P1, 1)
    run(cluster, [f], 40)
    dead = TopicPartition("jobs.dead", 1)
    answer = client.fetch(dead, 0, max_wait_ms=0).result(FetchResponse).responses[dead]
    (letter,) = [r for batch in answer.records for r in batch.records]
    assert letter.value == b"poison"
    assert dict(letter.headers)["consume_proxy.offset"] == b"0"
    assert committed(client, P1) == {P1: 2}


def test_a_proxy_without_a_writer_id_takes_one_from_its_client() -> None:
    cluster, _ = started()
    ids = []
    for name in ("proxy-0", "proxy-1", "proxy-0"):
        proxy = ConsumeProxy(lease_duration=1_000, start=cluster.clock.now)
        ClusterFeed(proxy, Client(cluster, name), GROUP)
        ids.append(proxy.writer)
    assert ids[0] == ids[2] != ids[1] and all(ids)  # the same id in every run, distinct
    given = ConsumeProxy(writer=7)
    ClusterFeed(given, Client(cluster, "proxy-0"), GROUP)
    assert given.writer == 7

"""The Feed without any Kafka: batches go out one per partition at a time and a failed one is
sent again first, commits pair the data and log positions and go out one at a time (a failed
one again), a dead letter holds its partition's commit back until it is produced, flow
control pauses and resumes fetching, and a newer owner's claim fences a partition."""

from __future__ import annotations

import pytest

from consume_proxy import ConsumeProxy, Record, RecordState, decode_entry
from consume_proxy.feed import DEAD_LETTER_HEADERS, Batch, Feed, OutRecord
from replica.types import TopicPartition

TP = TopicPartition("jobs", 0)
LOG = TopicPartition("__consume_proxy_state", 0)
DEAD = TopicPartition("jobs.dead", 0)


class Broker:
    """The log partition as the feed's driver sees it: what was produced, read back on."""

    def __init__(self, feed: Feed) -> None:
        self.feed = feed
        self.log: list[OutRecord] = []
        self.dead: list[OutRecord] = []

    def produce(self, *, fail: bool = False) -> list[Batch]:
        batches = self.feed.batches()
        for batch in batches:
            if not fail:
                (self.log if batch.tp == LOG else self.dead).extend(batch.records)
            self.feed.produced(batch, not fail)
        return batches

    def read_back(self) -> None:
        position = self.feed.log_position(TP)
        records = [(p, r.key, r.value) for p, r in enumerate(self.log)][position:]
        self.feed.log(TP, records)


def started(records: int = 3, **options: object) -> tuple[Feed, Broker]:
    proxy = ConsumeProxy(lease_duration=10, delivery_count_limit=1, writer=5)
    feed = Feed(proxy, **options)  # type: ignore[arg-type]
    broker = Broker(feed)
    feed.assign(TP, 0, 0)
    broker.produce()  # the claim
    broker.read_back()
    assert proxy.catching_up() == []
    feed.data(TP, [(o, None, b"%d" % o) for o in range(records)])
    return feed, broker


def hand_out(feed: Feed) -> Record:
    got: list[Record | None] = []
    feed.proxy.read(0, got.append)
    assert got[0] is not None
    return got[0]


def test_a_failed_batch_goes_again_before_anything_later() -> None:
    feed, broker = started()
    hand_out(feed)
    (first,) = broker.produce(fail=True)
    hand_out(feed)
    (again,) = broker.produce()
    assert again.records == first.records + again.records[len(first.records) :]
    kinds = [decode_entry(r.key, r.value, 0).offset for r in broker.log[1:]]
    assert kinds == [0, 1]  # in the order written


def test_one_batch_per_partition_is_in_flight() -> None:
    feed, _ = started()
    hand_out(feed)
    (batch,) = feed.batches()
    hand_out(feed)
    assert feed.batches() == []  # the first is not answered yet
    feed.produced(batch, True)
    (later,) = feed.batches()
    assert len(later.records) == 1
    with pytest.raises(ValueError, match="not the one in flight"):
        feed.produced(batch, True)


def test_commits_pair_data_and_log_one_at_a_time_and_a_failed_one_goes_again() -> None:
    feed, broker = started()
    assert feed.commits() == {LOG: 1}  # past the claim
    assert feed.commits() == {}  # one in flight
    feed.committed({LOG: 1}, failed=[LOG])
    record = hand_out(feed)
    feed.proxy.acknowledge(TP, record.offset)
    broker.produce()
    broker.read_back()
    due = feed.commits()
    assert due == {TP: 1, LOG: 3}  # the refused position again, with the new ones
    feed.committed(due)
    assert feed.commits() == {}


def test_a_dead_letter_holds_its_partitions_commit_back_until_it_is_produced() -> None:
    feed, broker = started(dead_letter_topic="jobs.dead")
    first = hand_out(feed)
    feed.proxy.reject(TP, first.offset)  # archived: a dead letter
    second = hand_out(feed)
    feed.proxy.acknowledge(TP, second.offset)
    assert feed.commits() == {}  # neither data nor log may pass offset 0 yet
    broker.produce(fail=True)
    assert feed.commits() == {}
    broker.produce()
    (letter,) = broker.dead
    assert (letter.value, [name for name, _ in letter.headers]) == (b"0", list(DEAD_LETTER_HEADERS))
    assert dict(letter.headers)["consume_proxy.delivery_count"] == b"1"
    assert feed.commits() == {TP: 2, LOG: 1}
    assert feed.proxy.state(TP, 0) is RecordState.COMMITTED


def test_flow_pauses_a_full_partition_and_resumes_it_from_the_proxys_end() -> None:
    feed, _ = started(records=4, window=4)
    flow = feed.flow()
    assert (flow.pause, flow.resume, feed.paused) == ([TP], {}, {TP})
    for _ in range(2):
        feed.proxy.acknowledge(TP, hand_out(feed).offset)
    feed.commits()
    assert feed.flow().resume == {TP: 4}
    assert feed.paused == frozenset()


def test_a_newer_claim_fences_the_partition_and_revoke_then_commits_nothing() -> None:
    feed, broker = started()
    other = ConsumeProxy(lease_duration=10, writer=6)
    newer = Feed(other)
    newer.assign(TP, 0, 0)
    broker.log.extend(newer.batches()[0].records)  # its claim lands after ours
    broker.read_back()
    assert feed.take_fenced() == [TP] and feed.take_fenced() == []
    assert feed.owned == [] and feed.proxy.served == []
    assert feed.revoke(TP) == {} and feed.commits() == {}
    assert feed.data(TP, [(3, None, b"late")]) == 0


def test_revoke_returns_the_last_positions_and_records_not_about_the_partition_are_skipped() -> (
    None
):
    feed, broker = started()
    feed.log(TP, [(len(broker.log), b"junk", b"junk")])
    feed.proxy.acknowledge(TP, hand_out(feed).offset)
    assert feed.bad_log_records == 1
    assert feed.revoke(TP) == {TP: 1, LOG: 1}  # its entries are not read back: the log waits
    assert feed.proxy.served == []
    assert len(broker.produce()[0].records) == 2  # its entries are still produced


@pytest.mark.parametrize("data_first", [False, True])
def test_a_server_catching_up_produces_again_a_dead_letter_its_archiver_lost(
    data_first: bool,
) -> None:
    feed, broker = started(dead_letter_topic="jobs.dead")
    feed.proxy.reject(TP, hand_out(feed).offset)
    for batch in feed.batches():  # the archiver dies having produced its log, not the letter
        if batch.tp == LOG:
            broker.log.extend(batch.records)
    assert broker.dead == []
    new = Feed(ConsumeProxy(lease_duration=10, writer=6), dead_letter_topic="jobs.dead")
    records = [(o, None, b"%d" % o) for o in range(3)]
    new.assign(TP, 0, 0)
    if data_first:
        new.data(TP, records)
    broker.log.extend(new.batches()[0].records)  # its claim
    new.log(TP, [(p, r.key, r.value) for p, r in enumerate(broker.log)])
    assert new.proxy.catching_up() == []
    if not data_first:
        new.data(TP, records)
    assert new.commits() == {}  # data and log wait for the letter: offset 0 is archived
    (letter,) = [b for b in new.batches() if b.tp == DEAD]
    assert letter.records[0].value == b"0"
    assert dict(letter.records[0].headers)["consume_proxy.delivery_count"] == b"1"
    new.produced(letter, True)
    assert new.commits() == {TP: 1, LOG: 4}  # past its claim, at 3


def test_a_dead_letter_the_group_committed_past_is_not_produced_again() -> None:
    feed, broker = started(dead_letter_topic="jobs.dead")
    feed.proxy.reject(TP, hand_out(feed).offset)
    broker.produce()  # the log and the letter
    assert feed.commits()[TP] == 1  # the letter is out: the commit passes it
    new = Feed(ConsumeProxy(lease_duration=10, writer=6), dead_letter_topic="jobs.dead")
    new.assign(TP, 1, 0)  # the group's committed data offset is past the archived record
    broker.log.extend(new.batches()[0].records)
    new.log(TP, [(p, r.key, r.value) for p, r in enumerate(broker.log)])
    new.data(TP, [(o, None, b"%d" % o) for o in range(1, 3)])
    assert [b.tp for b in new.batches()] == []

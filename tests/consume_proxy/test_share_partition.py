"""SharePartition: every transition of the record lifecycle and every error, one by one."""

from __future__ import annotations

import pytest

from consume_proxy import (
    FINISHED,
    TRANSITIONS,
    ConsumeProxy,
    InvalidProxyConfigError,
    InvalidRecordStateError,
    LeaseExpiredError,
    OffsetOutOfRangeError,
    Record,
    RecordNotHandedOutError,
    RecordState,
    UnknownPartitionError,
)
from replica.types import TopicPartition

TP = TopicPartition("data", 0)
S = RecordState


class Harness:
    """A proxy serving TP with records 0..n-1 fetched; collects reads and dead letters."""

    def __init__(self, records: int = 3, *, lease: int = 10, limit: int = 3) -> None:
        self.dead: list[Record] = []
        self.proxy = ConsumeProxy(
            lease_duration=lease, delivery_count_limit=limit, dead_letter=self.dead.append
        )
        self.proxy.assign(TP, 0)
        for offset in range(records):
            self.proxy.append(TP, offset, b"k%d" % offset, b"v%d" % offset)

    def read(self, timeout: int = 0) -> Record | None:
        got: list[Record | None] = []
        self.proxy.read(timeout, got.append)
        assert len(got) == 1
        return got[0]

    def state(self, offset: int) -> RecordState:
        return self.proxy.state(TP, offset)


def test_the_table_has_every_state_and_committed_is_final() -> None:
    assert set(TRANSITIONS) == set(RecordState)
    assert TRANSITIONS[S.COMMITTED] == frozenset()
    assert {S.ACKNOWLEDGED, S.ARCHIVED} == FINISHED


def test_available_to_pending_on_read() -> None:
    h = Harness()
    assert h.state(0) is S.AVAILABLE
    record = h.read()
    assert record == Record("data", 0, 0, b"k0", b"v0", 1, 10)
    assert h.state(0) is S.PENDING
    assert h.proxy.partition(TP).lease_deadline(0) == 10


def test_pending_to_acknowledged() -> None:
    h = Harness()
    h.read()
    h.proxy.acknowledge(TP, 0)
    assert h.state(0) is S.ACKNOWLEDGED
    assert h.proxy.partition(TP).lease_deadline(0) is None
    assert h.proxy.next_deadline() is None  # the lease left the wheel


def test_pending_to_available_on_cancel_then_handed_out_again() -> None:
    h = Harness()
    h.read()
    h.proxy.cancel(TP, 0)
    assert h.state(0) is S.AVAILABLE
    again = h.read()
    assert again is not None and (again.offset, again.delivery_count) == (0, 2)


def test_pending_to_available_exactly_at_the_lease_deadline() -> None:
    h = Harness(lease=10)
    h.read()
    h.proxy.advance(9)
    assert h.state(0) is S.PENDING
    h.proxy.advance(10)
    assert h.state(0) is S.AVAILABLE


def test_pending_to_archived_at_the_delivery_count_limit() -> None:
    h = Harness(records=1, lease=10, limit=2)
    h.read()
    h.proxy.advance(10)  # delivery 1 expires: available again
    assert h.read() is not None
    h.proxy.cancel(TP, 0)  # delivery 2 ends at the limit: archived
    assert h.state(0) is S.ARCHIVED
    assert [(r.offset, r.delivery_count) for r in h.dead] == [(0, 2)]
    assert h.read() is None


def test_pending_to_archived_on_reject() -> None:
    h = Harness()
    h.read()
    h.proxy.reject(TP, 0)
    assert h.state(0) is S.ARCHIVED
    assert [r.offset for r in h.dead] == [0]


def test_finished_to_committed_at_the_contiguous_prefix() -> None:
    h = Harness(records=3)
    for _ in range(3):
        h.read()
    h.proxy.acknowledge(TP, 1)
    assert h.proxy.commit() == {}  # offset 0 is still pending: a gap
    h.proxy.reject(TP, 0)
    assert h.proxy.commit() == {TP: 2}
    assert (h.state(0), h.state(1), h.state(2)) == (S.COMMITTED, S.COMMITTED, S.PENDING)
    assert h.proxy.commit() == {}


def test_renew_restarts_the_lease_from_now() -> None:
    h = Harness(lease=10)
    h.read()
    h.proxy.advance(8)
    assert h.proxy.renew(TP, 0) == 18
    h.proxy.advance(17)
    assert h.state(0) is S.PENDING
    h.proxy.advance(18)
    assert h.state(0) is S.AVAILABLE


def test_holes_in_the_offsets_are_passed_by_the_commit() -> None:
    h = Harness(records=0)
    h.proxy.append(TP, 0, None, b"a")
    h.proxy.append(TP, 5, None, b"b")
    for _ in range(2):
        h.read()
    h.proxy.acknowledge(TP, 0)
    h.proxy.acknowledge(TP, 5)
    assert h.proxy.commit() == {TP: 6}


@pytest.mark.parametrize("action", ["acknowledge", "cancel", "reject", "renew"])
def test_a_record_never_handed_out_is_refused(action: str) -> None:
    h = Harness()
    with pytest.raises(RecordNotHandedOutError, match="never handed out"):
        getattr(h.proxy, action)(TP, 1)
    assert h.state(1) is S.AVAILABLE


@pytest.mark.parametrize("action", ["acknowledge", "cancel", "reject", "renew"])
def test_an_expired_lease_is_refused(action: str) -> None:
    h = Harness(lease=10)
    h.read()
    h.proxy.advance(10)
    with pytest.raises(LeaseExpiredError, match="lease expired"):
        getattr(h.proxy, action)(TP, 0)
    assert h.state(0) is S.AVAILABLE


def test_a_stale_delivery_is_refused_while_another_reader_holds_the_record() -> None:
    h = Harness(lease=10)
    first = h.read()
    h.proxy.advance(10)
    second = h.read()
    assert first is not None and second is not None and first.offset == second.offset == 0
    with pytest.raises(LeaseExpiredError, match="delivery 1 ended"):
        h.proxy.acknowledge(TP, 0, first.delivery_count)
    assert h.state(0) is S.PENDING
    h.proxy.acknowledge(TP, 0, second.delivery_count)
    assert h.state(0) is S.ACKNOWLEDGED


def test_acknowledging_twice_is_refused() -> None:
    h = Harness()
    h.read()
    h.proxy.acknowledge(TP, 0)
    with pytest.raises(InvalidRecordStateError, match="acknowledged already"):
        h.proxy.acknowledge(TP, 0)


def test_a_committed_record_is_refused() -> None:
    h = Harness()
    h.read()
    h.proxy.acknowledge(TP, 0)
    h.proxy.commit()
    with pytest.raises(InvalidRecordStateError, match="committed already"):
        h.proxy.cancel(TP, 0)


def test_offsets_past_the_end_and_unknown_partitions_are_refused() -> None:
    h = Harness(records=3)
    with pytest.raises(OffsetOutOfRangeError, match="offsets 0 to 2"):
        h.proxy.acknowledge(TP, 3)
    with pytest.raises(UnknownPartitionError, match="data-7 is not served"):
        h.proxy.acknowledge(TopicPartition("data", 7), 0)
    with pytest.raises(OffsetOutOfRangeError, match="offset order"):
        h.proxy.append(TP, 1, None, None)


@pytest.mark.parametrize(
    "kwargs", [{"lease_duration": 0}, {"delivery_count_limit": 0}, {"lease_duration": 1.5}]
)
def test_bad_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidProxyConfigError, match="must be an int >= 1"):
        ConsumeProxy(**kwargs)  # type: ignore[arg-type]


def test_bad_assignments_are_refused() -> None:
    proxy = ConsumeProxy()
    with pytest.raises(UnknownPartitionError, match="serves no partition"):
        proxy.read(10, lambda record: None)
    with pytest.raises(InvalidProxyConfigError, match="start_offset"):
        proxy.assign(TP, -1)
    proxy.assign(TP, 0)
    with pytest.raises(InvalidProxyConfigError, match="served already"):
        proxy.assign(TP, 0)

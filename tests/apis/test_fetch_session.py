"""Fetch sessions (KIP-227) through KafkaApis: full and incremental fetches, session errors,
what an incremental response lists, and the session cache's eviction."""

from __future__ import annotations

import pytest

from apis import FetchRequest, FetchResponse, KafkaConfig, ProduceRequest
from apis.fetch_session import (
    CachedPartition,
    FetchSessionCache,
)
from replica.errors import Errors
from replica.records import Record
from replica.types import FetchPartitionData, PartitionFetchInfo
from tests.apis.single_broker import T0, T1, SingleBroker

RECORDS = [Record(None, b"v", 0)]


def fetch(broker: SingleBroker, request: FetchRequest) -> FetchResponse:
    body = broker.request(request).body
    assert isinstance(body, FetchResponse)
    return body


def changed(data: FetchPartitionData, error: Errors, high_watermark: int) -> FetchPartitionData:
    """``data`` with another error and high watermark."""
    return FetchPartitionData(
        error,
        high_watermark,
        data.log_start_offset,
        data.last_stable_offset,
        data.records,
        data.records_size,
        data.log_end_offset,
        data.diverging_epoch,
    )


def full(session_id: int = 0, epoch: int = 0, offsets: tuple[int, int] = (0, 0)) -> FetchRequest:
    return FetchRequest(
        {T0: PartitionFetchInfo(offsets[0], 1000), T1: PartitionFetchInfo(offsets[1], 1000)},
        max_wait_ms=0,
        session_id=session_id,
        session_epoch=epoch,
    )


def test_a_sessionless_fetch_makes_no_session() -> None:
    broker = SingleBroker()
    response = fetch(broker, full(epoch=-1))
    assert response.session_id == 0 and set(response.responses) == {T0, T1}
    assert len(broker.apis.fetch_manager.cache) == 0


def test_an_incremental_fetch_lists_only_partitions_with_news() -> None:
    broker = SingleBroker()
    opened = fetch(broker, full())
    session_id = opened.session_id
    assert session_id != 0 and set(opened.responses) == {T0, T1}
    # Nothing changed: an incremental fetch asking for nothing new gets nothing back.
    quiet = fetch(broker, FetchRequest({}, max_wait_ms=0, session_id=session_id, session_epoch=1))
    assert (quiet.error, quiet.session_id, dict(quiet.responses)) == (Errors.NONE, session_id, {})
    # Records on T1 (its high watermark moves too): only T1 comes back, from the remembered
    # fetch offset.
    broker.request(ProduceRequest(1, 1000, {T1: RECORDS}))
    news = fetch(broker, FetchRequest({}, max_wait_ms=0, session_id=session_id, session_epoch=2))
    assert list(news.responses) == [T1] and len(news.responses[T1].records) == 1
    # The fetcher moves T1's offset (a changed partition); T1 has no new records, but its
    # high watermark was already sent: nothing comes back.
    moved = FetchRequest(
        {T1: PartitionFetchInfo(1, 1000)}, max_wait_ms=0, session_id=session_id, session_epoch=3
    )
    assert dict(fetch(broker, moved).responses) == {}
    # Forgetting T0 drops it from the session: records on T0 are not fetched.
    broker.request(ProduceRequest(1, 1000, {T0: RECORDS}))
    forget = FetchRequest(
        {}, max_wait_ms=0, session_id=session_id, session_epoch=4, forgotten=(T0,)
    )
    assert dict(fetch(broker, forget).responses) == {}
    session = broker.apis.fetch_manager.cache.get(session_id)
    assert session is not None and list(session.partitions) == [T1] and session.epoch == 5


def test_an_idle_partition_removed_from_the_broker_is_answered_with_its_error() -> None:
    broker = SingleBroker()
    session_id = fetch(broker, full()).session_id  # both read nothing: idle in the session
    assert broker.rm.stop_replica(T0, delete=True) is Errors.NONE
    after = fetch(broker, FetchRequest({}, max_wait_ms=0, session_id=session_id, session_epoch=1))
    assert list(after.responses) == [T0]
    assert after.responses[T0].error is Errors.NOT_LEADER_OR_FOLLOWER


def test_session_errors_are_answered_at_top_level_without_fetching() -> None:
    broker = SingleBroker()
    session_id = fetch(broker, full()).session_id
    wrong_epoch = fetch(broker, FetchRequest({}, session_id=session_id, session_epoch=7))
    assert (wrong_epoch.error, dict(wrong_epoch.responses)) == (
        Errors.INVALID_FETCH_SESSION_EPOCH,
        {},
    )
    unknown = fetch(broker, FetchRequest({}, session_id=session_id + 1, session_epoch=1))
    assert unknown.error is Errors.FETCH_SESSION_ID_NOT_FOUND
    assert Errors.FETCH_SESSION_ID_NOT_FOUND.is_retriable
    # The session survives a bad epoch: the right one still works.
    ok = fetch(broker, FetchRequest({}, max_wait_ms=0, session_id=session_id, session_epoch=1))
    assert ok.error is Errors.NONE


def test_a_full_fetch_closes_the_session_it_names() -> None:
    broker = SingleBroker()
    cache = broker.apis.fetch_manager.cache
    first = fetch(broker, full()).session_id
    second = fetch(broker, full(session_id=first, epoch=0)).session_id  # close, open anew
    assert second not in (0, first) and cache.get(first) is None and len(cache) == 1
    assert fetch(broker, full(session_id=second, epoch=-1)).session_id == 0  # close only
    assert len(cache) == 0


def test_a_long_polling_incremental_fetch_answers_with_the_partition_that_got_data() -> None:
    broker = SingleBroker()
    session_id = fetch(broker, full()).session_id
    waiting = broker.send(FetchRequest({}, max_wait_ms=500, session_id=session_id, session_epoch=1))
    assert broker.responses() == []
    broker.send(ProduceRequest(1, 1000, {T0: RECORDS}))  # completes the waiting fetch
    [response] = [r for r in broker.responses() if r.request is waiting]
    assert isinstance(response.body, FetchResponse)
    assert list(response.body.responses) == [T0]


def test_the_cache_is_bounded_and_evicts_stale_then_unprivileged_sessions() -> None:
    cache = FetchSessionCache(max_entries=2, eviction_ms=100)
    consumer = cache.maybe_create_session(0, False, {})
    follower = cache.maybe_create_session(10, True, {})
    assert 0 not in (consumer, follower)
    assert cache.maybe_create_session(20, False, {}) == 0  # full, nothing stale: no session
    third = cache.maybe_create_session(20, True, {})  # a follower evicts the consumer
    assert third != 0 and cache.get(consumer) is None and cache.evictions == 1
    assert cache.maybe_create_session(50, True, {}) == 0  # only followers left, none stale
    session = cache.get(third)
    assert session is not None
    cache.touch(session, 105)
    fourth = cache.maybe_create_session(110, False, {})  # `follower`, unused since 10, is stale
    assert fourth != 0 and cache.get(follower) is None and cache.get(third) is session


def test_the_cache_size_comes_from_the_broker_config() -> None:
    config = KafkaConfig(max_incremental_fetch_session_cache_slots=0)
    assert config.min_incremental_fetch_session_eviction_ms == 120_000
    with pytest.raises(ValueError):
        FetchSessionCache(max_entries=-1)


def test_a_cached_partition_reports_news() -> None:
    broker = SingleBroker()
    data = fetch(broker, full(epoch=-1)).responses[T0]
    cached = CachedPartition()
    assert cached.maybe_update_response_data(data, incremental=True)  # first sight: news
    assert not cached.maybe_update_response_data(data, incremental=True)
    assert cached.maybe_update_response_data(data, incremental=False)  # full: always
    assert cached.maybe_update_response_data(
        changed(data, Errors.NOT_LEADER_OR_FOLLOWER, data.high_watermark), True
    )
    assert cached.maybe_update_response_data(changed(data, data.error, 5), True)

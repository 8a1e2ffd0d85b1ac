"""The fetcher's side of fetch sessions: full then incremental fetches, and starting over."""

from __future__ import annotations

from replica.errors import Errors
from replica.fetch_session_handler import (
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchMetadata,
    FetchSessionHandler,
)
from replica.types import PartitionFetchInfo, TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))


def infos(**offsets: int) -> dict[TopicPartition, PartitionFetchInfo]:
    tps = {"a": A, "b": B, "c": C}
    return {tps[name]: PartitionFetchInfo(offset, 100) for name, offset in offsets.items()}


def test_full_then_incremental_fetches_send_only_what_changed() -> None:
    handler = FetchSessionHandler()
    first = handler.build(infos(a=0, b=0))
    assert first.metadata == FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
    assert dict(first.to_send) == infos(a=0, b=0)
    assert handler.handle_response(7, Errors.NONE)
    second = handler.build(infos(a=3, c=0))  # a moved, b dropped, c added
    assert second.metadata == FetchMetadata(7, 1)
    assert dict(second.to_send) == infos(a=3, c=0) and second.forgotten == (B,)
    assert handler.handle_response(7, Errors.NONE)
    third = handler.build(infos(a=3, c=0))
    assert third.metadata == FetchMetadata(7, 2) and dict(third.to_send) == {}


def test_errors_and_sessionless_brokers_make_the_next_fetch_full() -> None:
    handler = FetchSessionHandler()
    handler.build(infos(a=0))
    assert handler.handle_response(INVALID_SESSION_ID, Errors.NONE)  # no session given
    assert handler.build(infos(a=0)).metadata == FetchMetadata(0, INITIAL_EPOCH)
    handler.handle_response(5, Errors.NONE)
    handler.build(infos(a=0))
    assert not handler.handle_response(5, Errors.INVALID_FETCH_SESSION_EPOCH)
    retry = handler.build(infos(a=0))
    assert retry.metadata == FetchMetadata(5, INITIAL_EPOCH)  # close 5, open a new one
    assert dict(retry.to_send) == infos(a=0)
    assert not handler.handle_response(0, Errors.FETCH_SESSION_ID_NOT_FOUND)
    assert handler.build(infos(a=0)).metadata == FetchMetadata(0, INITIAL_EPOCH)
    handler.handle_response(6, Errors.NONE)
    handler.handle_error()  # no response at all
    assert handler.build(infos(a=0)).metadata == FetchMetadata(6, INITIAL_EPOCH)
    assert FetchMetadata(6, 2**31 - 1).next_incremental() == FetchMetadata(6, 1)


def test_fetch_metadata_is_a_value() -> None:
    assert FetchMetadata() == FetchMetadata(INVALID_SESSION_ID, -1) and FetchMetadata().is_full
    assert FetchMetadata(3, 4) != FetchMetadata(3, 5) and FetchMetadata(3, 4) != (3, 4)
    assert len({FetchMetadata(3, 4), FetchMetadata(3, 4)}) == 1
    assert repr(FetchMetadata(3, 4)) == "FetchMetadata(session_id=3, epoch=4)"


def test_an_unchanged_partition_is_not_sent_again_however_it_is_given() -> None:
    handler = FetchSessionHandler()
    same = infos(a=0, b=0)
    handler.build(same)
    handler.handle_response(7, Errors.NONE)
    assert dict(handler.build(same).to_send) == {}  # the very same fetch data objects
    handler.handle_response(7, Errors.NONE)
    assert dict(handler.build(infos(a=0, b=1)).to_send) == infos(b=1)  # equal ones, and a move


def test_build_changed_sends_the_changed_partitions_that_differ_in_their_order() -> None:
    handler = FetchSessionHandler()
    first = infos(a=0, b=0, c=0)
    assert handler.build_changed(first, ()).to_send is first  # no session yet: a full fetch
    handler.handle_response(7, Errors.NONE)
    second = {**first, A: PartitionFetchInfo(2, 100), C: PartitionFetchInfo(1, 100)}
    sent = handler.build_changed(second, [A, B, C])  # b listed, its object unchanged
    assert sent.metadata == FetchMetadata(7, 1) and sent.forgotten == ()
    assert list(sent.to_send.items()) == [(A, second[A]), (C, second[C])]
    handler.handle_response(7, Errors.NONE)
    again = handler.build_changed(second, ())
    assert again.metadata == FetchMetadata(7, 2) and dict(again.to_send) == {}
    handler.handle_error()  # the next fetch is full again, whatever changed
    assert dict(handler.build_changed(second, ()).to_send) == second

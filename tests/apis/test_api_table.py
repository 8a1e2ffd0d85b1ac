"""The API table: complete, consistent with the body types and KafkaApis, and the errors a
response carries in Kafka's order."""

from __future__ import annotations

import typing

import pytest

from apis import ApiKeys, KafkaApis
from apis.api_table import API_TABLE, RequestBody, ResponseBody, api_of, response_errors
from apis.fetch import FetchResponse, fetch_error
from apis.metadata import MetadataResponse, TopicMetadata
from replica.errors import Errors
from replica.types import TopicPartition


def test_every_api_key_has_one_row_in_key_order() -> None:
    assert list(API_TABLE) == sorted(ApiKeys)


@pytest.mark.parametrize("key", list(ApiKeys))
def test_a_row_matches_its_body_types_and_handler(key: ApiKeys) -> None:
    api = API_TABLE[key]
    assert api.request.API_KEY is key
    assert callable(getattr(KafkaApis, api.handler))


def test_the_unions_are_the_table_columns() -> None:
    assert set(typing.get_args(RequestBody)) == {api.request for api in API_TABLE.values()}
    assert set(typing.get_args(ResponseBody)) == {api.response for api in API_TABLE.values()}


def test_names_are_kafkas() -> None:
    names = {api.key: api.name for api in API_TABLE.values()}
    assert names[ApiKeys.PRODUCE] == "Produce"
    assert names[ApiKeys.LEADER_AND_ISR] == "LeaderAndIsr"
    assert names[ApiKeys.FIND_COORDINATOR] == "FindCoordinator"


def test_delayed_responses_wait_in_the_purgatory_kafka_uses() -> None:
    delayed = {api.name: api.delayed_in for api in API_TABLE.values() if api.delayed_in}
    assert delayed == {
        "Produce": "produce",
        "OffsetCommit": "produce",
        "Fetch": "fetch",
        "JoinGroup": "rebalance",
        "SyncGroup": "rebalance",
    }


def test_response_errors_are_top_level_first_then_in_response_order() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    parts = {a: fetch_error(Errors.NONE), b: fetch_error(Errors.NOT_LEADER_OR_FOLLOWER)}
    fetch = FetchResponse(Errors.NONE, parts)
    assert api_of(fetch) is API_TABLE[ApiKeys.FETCH]
    assert list(response_errors(fetch)) == [
        Errors.NONE, Errors.NONE, Errors.NOT_LEADER_OR_FOLLOWER,
    ]  # fmt: skip
    topics = {"t": TopicMetadata(Errors.UNKNOWN_TOPIC_OR_PARTITION, {})}
    metadata = MetadataResponse((), 0, topics)
    assert list(response_errors(metadata)) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]

"""Settling the cluster visits only the brokers something happened to (``has_work``)."""

from __future__ import annotations

from typing import Any

import pytest

from apis import KafkaConfig, MetadataRequest, MetadataResponse
from cluster import Cluster
from cluster.broker import BrokerNode
from coordinator import OffsetConfig


def count_visits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    visits: list[int] = []
    original = BrokerNode.ready_fetches

    def ready_fetches(self: BrokerNode, now: int) -> Any:
        visits.append(self.broker_id)
        return original(self, now)

    monkeypatch.setattr(BrokerNode, "ready_fetches", ready_fetches)
    return visits


@pytest.mark.pure_python
def test_a_request_settles_only_the_broker_it_went_to(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(3, config=KafkaConfig(offsets=OffsetConfig(offsets_topic_num_partitions=1)))
    cluster.advance(1000)
    visits = count_visits(monkeypatch)
    call = cluster.send(1, MetadataRequest(None))
    assert call.result(MetadataResponse).brokers
    assert set(visits) == {1}
    assert not any(node.has_work for node in cluster.brokers.values())


@pytest.mark.pure_python
def test_run_until_idle_visits_every_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = Cluster(3, config=KafkaConfig(offsets=OffsetConfig(offsets_topic_num_partitions=1)))
    visits = count_visits(monkeypatch)
    cluster.run_until_idle()
    assert visits == [0, 1, 2]

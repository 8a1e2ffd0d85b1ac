"""MetadataCache: updated by UpdateMetadata, answers topic and coordinator lookups."""

from apis import BrokerEndpoint, Errors, MetadataCache, UpdateMetadataRequest
from replica.types import PartitionState, TopicPartition


def test_update_and_lookups() -> None:
    cache = MetadataCache()
    assert cache.controller_epoch == -1
    states = {
        TopicPartition("t", 0): PartitionState(1, 3, (1, 2), (1, 2)),
        TopicPartition("t", 1): PartitionState(-1, 4, (2,), (2, 1)),
    }
    brokers = [BrokerEndpoint(2), BrokerEndpoint(1)]
    assert cache.update_metadata(UpdateMetadataRequest(7, 5, brokers, states)) is Errors.NONE
    assert cache.controller_id == 7
    assert [b.broker_id for b in cache.alive_brokers()] == [1, 2]
    assert cache.alive_broker(3) is None
    assert cache.contains_topic("t") and not cache.contains_topic("u")
    assert cache.contains_partition(TopicPartition("t", 1))
    assert not cache.contains_partition(TopicPartition("t", 2))
    metadata = cache.topic_metadata(None)["t"]
    assert metadata.partitions[0].error is Errors.NONE
    assert metadata.partitions[0].leader == 1
    assert metadata.partitions[1].error is Errors.LEADER_NOT_AVAILABLE
    # an older controller epoch is refused and changes nothing
    assert (
        cache.update_metadata(UpdateMetadataRequest(8, 4, [], {})) is Errors.STALE_CONTROLLER_EPOCH
    )
    assert [b.broker_id for b in cache.alive_brokers()] == [1, 2]
    assert cache.controller_id == 7


def test_later_updates_replace_brokers_and_merge_partitions() -> None:
    cache = MetadataCache()
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    cache.update_metadata(
        UpdateMetadataRequest(1, 1, [BrokerEndpoint(0)], {tp0: PartitionState(0, 0, (0,), (0,))})
    )
    cache.update_metadata(
        UpdateMetadataRequest(1, 1, [BrokerEndpoint(1)], {tp1: PartitionState(1, 0, (1,), (1,))})
    )
    assert [b.broker_id for b in cache.alive_brokers()] == [1]
    assert cache.partition_state(tp0) is not None
    assert cache.topics() == ["t"]

"""OffsetConfig has Kafka's defaults and rejects values out of range."""

import pytest

from coordinator import InvalidOffsetConfigError, OffsetConfig


def test_kafka_defaults() -> None:
    config = OffsetConfig()
    assert config.offsets_topic_num_partitions == 50
    assert config.offsets_topic_replication_factor == 3
    assert config.offsets_commit_timeout_ms == 5000
    assert config.offset_metadata_max_bytes == 4096
    assert config.offsets_load_buffer_size == 5 * 1024 * 1024


@pytest.mark.parametrize(
    "field",
    [
        "offsets_topic_num_partitions",
        "offsets_topic_replication_factor",
        "offsets_commit_timeout_ms",
        "offset_metadata_max_bytes",
        "offsets_load_buffer_size",
    ],
)
@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_bad_values_name_the_field(field: str, bad: object) -> None:
    with pytest.raises(InvalidOffsetConfigError, match=f"{field} must be a positive int"):
        OffsetConfig(**{field: bad})  # type: ignore[arg-type]

"""java_string_hash matches Java's String.hashCode; groups map to partitions like Kafka."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator import java_string_hash, partition_for_group
from tests.builds import bad_argument

# Values printed by a JVM (OpenJDK 17, String.hashCode()).
JAVA_HASHES = {
    "": 0,
    "a": 97,
    "hello": 99162322,
    "Hello World": -862545276,
    "group-1": 293427299,
    "h\u00e9llo": 103094734,
    "consumer-group-\u4e2d\u6587": 277651199,
    "polygenelubricants": -(2**31),
    "GydZG_": -(2**31),
    "DESIGNING WORKHOUSES": -(2**31),
    "\U0001f600": 1772899,  # one emoji = a surrogate pair of two UTF-16 code units
}


@pytest.mark.parametrize(("text", "expected"), JAVA_HASHES.items())
def test_known_java_values(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


@given(st.text())
def test_hash_is_a_signed_32_bit_int_following_the_recurrence(text: str) -> None:
    h = java_string_hash(text)
    assert -(2**31) <= h < 2**31
    if text:
        # hash(s + c) == 31 * hash(s) + c (mod 2^32) for a BMP character c
        last = text[-1]
        if ord(last) < 0x10000:
            expected = (31 * java_string_hash(text[:-1]) + ord(last)) & 0xFFFFFFFF
            assert h & 0xFFFFFFFF == expected


def test_int_min_maps_to_partition_zero() -> None:
    # Java's Math.abs(Integer.MIN_VALUE) is negative; Kafka's Utils.abs gives 0.
    assert partition_for_group("polygenelubricants", 50) == 0
    assert partition_for_group("polygenelubricants", 7) == 0


def test_partition_is_abs_hash_mod_partitions() -> None:
    assert partition_for_group("hello", 50) == 99162322 % 50
    assert partition_for_group("Hello World", 50) == 862545276 % 50
    assert partition_for_group("", 50) == 0


@given(st.text(), st.integers(min_value=1, max_value=1000))
def test_partition_is_in_range(group: str, partitions: int) -> None:
    assert 0 <= partition_for_group(group, partitions) < partitions


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3"])
def test_bad_partition_count_raises(bad: object) -> None:
    match = "num_partitions must be a positive int"
    with bad_argument(ValueError, bad, where=partition_for_group, match=match):
        partition_for_group("g", bad)  # type: ignore[arg-type]


def test_non_string_raises_type_error() -> None:
    with bad_argument(TypeError, b"bytes", where=java_string_hash, annotated=str, match="a str"):
        java_string_hash(b"bytes")  # type: ignore[arg-type]

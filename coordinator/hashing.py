"""Which partition of ``__consumer_offsets`` holds a group: Java's ``String.hashCode``.

Kafka places a group on partition ``abs(groupId.hashCode) % offsets.topic.num.partitions``
where ``hashCode`` is Java's: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, in
signed 32-bit arithmetic, and Kafka's ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 (Java's
``Math.abs`` would leave it negative). Both rules are reproduced exactly so that a group lands
on the same partition as it would on a real cluster.
"""

from __future__ import annotations

from typing import Final

__all__ = ["java_string_hash", "partition_for_group"]

_INT_MIN: Final = -(2**31)


def java_string_hash(s: str) -> int:
    """Return Java's ``String.hashCode()`` of ``s`` as a signed 32-bit int.

    Characters outside the Basic Multilingual Plane count as two UTF-16 code units (a surrogate
    pair), as in Java. Raises ``TypeError`` if ``s`` is not a ``str``.
    """
    if not isinstance(s, str):
        raise TypeError(f"java_string_hash needs a str, got {type(s).__name__}")
    units = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def partition_for_group(group_id: str, num_partitions: int) -> int:
    """Return the ``__consumer_offsets`` partition of ``group_id``.

    ``abs(java_string_hash(group_id)) % num_partitions`` with ``abs(INT_MIN) == 0``.
    Raises ``ValueError`` if ``num_partitions`` is not a positive int.
    """
    if type(num_partitions) is not int or num_partitions < 1:
        raise ValueError(f"num_partitions must be a positive int, got {num_partitions!r}")
    h = java_string_hash(group_id)
    return (0 if h == _INT_MIN else abs(h)) % num_partitions

"""Choosing a message's partition: Sarama's hash partitioner, or round robin.

* ``"hash"`` (Sarama's default ``NewHashPartitioner``): FNV-1a 32-bit hash of the key,
  read as a signed 32-bit int, modulo the partition count, negated if negative. A message
  without a key goes to a random partition (drawn from the producer's seeded rng), as Sarama
  does.
* ``"round_robin"``: partitions in turn, per topic, whatever the key.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Final, Literal

from sim.clients.errors import ClientConfigError
from sim.core.draws import below_with

__all__ = ["Partitioner", "PartitionerName", "fnv1a_32"]

PartitionerName = Literal["hash", "round_robin"]

_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193


def fnv1a_32(data: bytes) -> int:
    """The 32-bit FNV-1a hash of ``data`` (unsigned), as Go's ``hash/fnv.New32a``."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


class Partitioner:
    """Picks partitions for one producer. Deterministic given the rng's seed."""

    __slots__ = ("_counters", "_getrandbits", "_name")

    def __init__(self, name: PartitionerName, rng: random.Random) -> None:
        if name not in ("hash", "round_robin"):
            raise ClientConfigError(f"partitioner must be 'hash' or 'round_robin', got {name!r}")
        self._name = name
        self._getrandbits = rng.getrandbits
        self._counters: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        """The partition (``0 <= p < num_partitions``) for a message of ``topic`` with ``key``."""
        return self.partitions(topic, (key,), num_partitions)[0]

    def partitions(
        self, topic: str, keys: Sequence[bytes | None], num_partitions: int
    ) -> list[int]:
        """:meth:`partition` for each of ``keys``, in order (the same choices and draws)."""
        if num_partitions < 1:
            raise ClientConfigError(f"topic {topic!r} needs >= 1 partition, got {num_partitions}")
        if self._name == "hash":
            getrandbits = self._getrandbits
            return [
                below_with(getrandbits, num_partitions)
                if key is None
                else _hashed(key, num_partitions)
                for key in keys
            ]
        first = self._counters.get(topic, 0)
        self._counters[topic] = first + len(keys)
        return [(first + i) % num_partitions for i in range(len(keys))]


def _hashed(key: bytes, num_partitions: int) -> int:
    """Sarama's hash partition of ``key``."""
    h = fnv1a_32(key)
    signed = h - (1 << 32) if h >= 1 << 31 else h
    # Go's % truncates toward zero; Sarama then negates a negative result.
    return abs(signed) % num_partitions

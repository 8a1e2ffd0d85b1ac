"""Kafka error codes as the API layer sees them: re-exported from :mod:`replica.errors`.

``replica`` is the lowest Kafka-aware layer, so the one ``Errors`` enum lives there; request
handlers and clients import it from here.
"""

from replica.errors import Errors

__all__ = ["Errors"]

"""Exceptions the apis package raises for bad library arguments.

A bad *request* never raises: it is answered with a Kafka error code. These are for callers
that build malformed objects.
"""

from __future__ import annotations

__all__ = ["ApisError", "RequestHeaderMismatchError"]


class ApisError(Exception):
    """Base class of every exception the apis package raises on purpose."""


class RequestHeaderMismatchError(ApisError, ValueError):
    """A :class:`~apis.request_channel.Request`'s header names another API than its body."""

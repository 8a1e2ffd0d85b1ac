"""Exceptions the simulated clients raise for bad library arguments.

A failed *request* never raises: its Kafka error code is reported to the caller (per message
for producers, per commit for consumers). These exceptions are for programming errors: a config
value out of range, a call in the wrong state.
"""

from __future__ import annotations

__all__ = ["ClientConfigError", "ClientError", "ClientStateError"]


class ClientError(Exception):
    """Base class of every exception ``sim.clients`` raises on purpose."""


class ClientConfigError(ClientError, ValueError):
    """A config field or constructor argument was given a value outside its allowed range."""


class ClientStateError(ClientError, RuntimeError):
    """A client method was called in a state that does not allow it (e.g. after close)."""

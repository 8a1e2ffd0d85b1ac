"""A pytest plugin: ``kafka_bootstrap`` and ``kafka_server`` fixtures backed by a running
:class:`~kafka_server.ServerThread` (three brokers on loopback ephemeral ports).

Enable it with ``pytest_plugins = ["kafka_server.pytest_plugin"]`` in a ``conftest.py``.
Each test gets a fresh cluster; topics are auto-created with 1 partition and replication
factor 3 (use ``ServerThread`` directly for other settings).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafka_server.thread import ServerThread

__all__ = ["kafka_bootstrap", "kafka_server"]


@pytest.fixture
def kafka_server() -> Iterator[ServerThread]:
    """A running three-broker server, stopped after the test."""
    with ServerThread(brokers=3) as server:
        yield server


@pytest.fixture
def kafka_bootstrap(kafka_server: ServerThread) -> str:
    """The bootstrap servers (``host:port,...``) of :func:`kafka_server`."""
    return kafka_server.bootstrap_servers

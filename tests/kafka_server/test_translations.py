"""Every served API and version, fed well-formed requests with arbitrary field values
(hypothesis builds them from kio's schema classes): the server answers with the request's
correlation id or closes that connection, never logs a failure of its own, and keeps serving."""

from __future__ import annotations

import logging
import socket
import struct
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader
from kio.static.primitive import Records

from kafka_server import TRANSLATIONS, ServerThread
from tests.kafka_server.test_server import frame

st.register_type_strategy(Records, st.binary(max_size=80).map(Records))

VERSIONS = [
    (t.api_key, v) for t in TRANSLATIONS.values() for v in range(t.min_version, t.max_version + 1)
]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread(brokers=2, default_replication_factor=2) as running:
        yield running


def _exchange(address: tuple[str, int], data: bytes) -> bytes | None:
    """The response frame to ``data``, None if the connection was closed, b"" if nothing
    came back within a second (a long poll, or an acks=0 produce)."""
    with socket.create_connection(address, timeout=1) as sock:
        sock.sendall(data)
        received = b""
        try:
            while len(received) < 4 or len(received) < 4 + int.from_bytes(received[:4], "big"):
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                received += chunk
        except TimeoutError:
            return b""
        except ConnectionResetError:
            return None
        return received


@settings(
    max_examples=200,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_arbitrary_well_formed_requests(
    server: ServerThread, caplog: pytest.LogCaptureFixture, data: st.DataObject
) -> None:
    api_key, version = data.draw(st.sampled_from(VERSIONS))
    request = data.draw(st.from_type(load_request_schema(api_key, version)))
    broker = data.draw(st.sampled_from(sorted(server.server.addresses)))
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="kafka_server"):
        answer = _exchange(server.server.addresses[broker], frame(api_key, version, 77, request))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    if answer:
        schema = load_response_schema(api_key, version)
        body = answer[4:]
        header, offset = entity_reader(schema.__header_schema__)(body, 0)
        assert header.correlation_id == 77
        entity_reader(schema)(body, offset)
    # whatever happened, the broker still serves
    again = _exchange(server.server.addresses[broker], frame(18, 0, 5))
    assert again is not None and struct.unpack(">i", again[4:8])[0] == 5

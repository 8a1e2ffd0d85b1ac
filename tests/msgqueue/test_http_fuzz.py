"""Fuzzing the HTTP interface (hypothesis): any method, path, query and body gets an answer
from the API's set of statuses, never an internal error; a refused request (4xx) has a one-line
reason and changes nothing."""

from __future__ import annotations

from urllib.parse import urlencode

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from msgqueue import Attributes, MemoryBackend, MessageQueue
from msgqueue.http import Frontend, Response

_SEGMENTS = st.one_of(
    st.sampled_from(
        ["v1.0", "acct", "q", "m", "other", "", "%ff", "%2F", "%00", "..", "v2.0", "%0D%0A", "["]
    ),
    st.text(max_size=8),
)
_VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "0",
            "1",
            "-1",
            "abc",
            "1.5",
            " 1",
            "+1",
            "true",
            "TRUE",
            "false",
            "maybe",
            "none",
            "id",
            "attributes",
            "body",
            "all",
            "99999999999",
            "2147483647",
            "m",
            "\x00",
        ]
    ),
    st.text(max_size=6),
)
_NAMES = st.sampled_from(
    ["limit", "marker", "match_hidden", "show_hidden", "hidden", "detail", "ttl", "hide", "x"]
)
_WAITS = st.sampled_from(["0", "-1", "x", "1.5", "", "00"])  # no real wait: nothing advances


def _state(engine: MessageQueue) -> list[tuple[object, ...]]:
    return [
        (m.account, m.queue, m.id, m.body, m.seq, m.ttl_at, m.hide_at)
        for m in engine.backend.messages()
    ]


@settings(max_examples=300)
@given(
    method=st.sampled_from(["GET", "PUT", "POST", "DELETE", "PATCH", "HEAD"]),
    segments=st.lists(_SEGMENTS, max_size=5),
    params=st.dictionaries(_NAMES, _VALUES, max_size=4),
    wait=st.none() | _WAITS,
    body=st.binary(max_size=40),
)
def test_any_request_gets_a_proper_answer(
    method: str,
    segments: list[str],
    params: dict[str, str],
    wait: str | None,
    body: bytes,
) -> None:
    engine = MessageQueue(MemoryBackend())
    engine.create_message("acct", "q", "m", "kept")
    engine.create_message("acct", "q", "h", "hidden", Attributes(hide=5))
    frontend = Frontend(engine, max_body=32)
    if wait is not None:
        params = {**params, "wait": wait}
    target = "/" + "/".join(segments) + ("?" + urlencode(params) if params else "")
    before = _state(engine)
    response: Response = trio.run(frontend.handle, method, target, {}, body)
    assert response.status in {200, 201, 204, 400, 404, 405, 413}
    if response.status >= 400:
        assert len(response.body.decode().splitlines()) == 1
        assert _state(engine) == before
    if response.status in (400, 405, 413):
        assert response.content_type.startswith("text/plain")

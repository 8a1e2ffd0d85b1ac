"""The consume proxy's HTTP front end, in process: every route, every refusal (a 4xx with a
one-line reason and no state change), long polls woken by data, and a hypothesis fuzz of
methods, paths and bodies."""

from __future__ import annotations

import base64
import json

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from consume_proxy import ConsumeProxy, RecordState, encode_entry
from consume_proxy.http import MAX_READ_TIMEOUT_MS, Frontend
from replica.types import TopicPartition
from trio_http import Response

A = TopicPartition("jobs", 0)
B = TopicPartition("jobs", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def setup(records: int = 3) -> tuple[ConsumeProxy, Frontend, Clock]:
    clock = Clock()
    proxy = ConsumeProxy(lease_duration=1_000, delivery_count_limit=3)
    proxy.assign(A, 0)
    proxy.assign(B, 0)
    for offset in range(records):
        proxy.append(A, offset, b"k%d" % offset, b"v%d" % offset)
    frontend = Frontend(proxy, clock, high_watermark={A: 10}.get, partitions={"jobs": 4}.get)
    return proxy, frontend, clock


def call(frontend: Frontend, method: str, target: str, body: object = None) -> Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    response: Response = trio.run(frontend.handle, method, target, {}, data)
    return response


def snapshot(proxy: ConsumeProxy) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for tp in proxy.served:
        share = proxy.partition(tp)
        rows.append((tp, share.start_offset, share.end_offset))
        for offset in range(share.start_offset, share.end_offset):
            rows.append((offset, share.state(offset), share.lease_deadline(offset)))
    return rows


def record_body(offset: int, delivery: int | None = None, tp: TopicPartition = A) -> object:
    body: dict[str, object] = {"topic": tp.topic, "partition": tp.partition, "offset": offset}
    if delivery is not None:
        body["delivery"] = delivery
    return body


def test_read_hands_out_a_record_in_json_with_base64_key_and_value() -> None:
    proxy, frontend, clock = setup()
    clock.now = 5
    response = call(frontend, "POST", "/read", {"timeout_ms": 0})
    assert response.status == 200
    assert json.loads(response.body) == {
        "topic": "jobs",
        "partition": 0,
        "offset": 0,
        "key": base64.b64encode(b"k0").decode(),
        "value": base64.b64encode(b"v0").decode(),
        "delivery": 1,
        "lease_deadline_ms": 1_005,  # the proxy was moved to the clock before the read
    }
    assert proxy.state(A, 0) is RecordState.PENDING


def test_a_read_with_nothing_to_give_answers_204() -> None:
    _, frontend, _ = setup(records=0)
    assert call(frontend, "POST", "/read", {"timeout_ms": 0}).status == 204


async def test_a_long_poll_is_woken_by_new_data() -> None:
    proxy, frontend, _ = setup(records=0)
    got: list[Response] = []

    async def read() -> None:
        got.append(await frontend.handle("POST", "/read", {}, b'{"timeout_ms": 60000}'))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        proxy.append(B, 0, None, b"late")
    assert got[0].status == 200
    assert json.loads(got[0].body)["partition"] == 1


async def test_a_cancelled_long_poll_takes_nothing() -> None:
    proxy, frontend, _ = setup(records=0)
    with trio.move_on_after(0.01):
        await frontend.handle("POST", "/read", {}, b'{"timeout_ms": 60000}')
    proxy.append(A, 0, None, b"x")
    assert proxy.state(A, 0) is RecordState.AVAILABLE


def test_acknowledge_cancel_reject_and_renew() -> None:
    proxy, frontend, clock = setup()
    for _ in range(3):
        assert call(frontend, "POST", "/read", {"timeout_ms": 0}).status == 200
    assert call(frontend, "POST", "/acknowledge", record_body(0, delivery=1)).body == b"{}"
    assert proxy.state(A, 0) is RecordState.ACKNOWLEDGED
    assert call(frontend, "POST", "/cancel", record_body(1)).status == 200
    assert proxy.state(A, 1) is RecordState.AVAILABLE
    clock.now = 400
    renewed = call(frontend, "POST", "/renew", record_body(2))
    assert json.loads(renewed.body) == {"lease_deadline_ms": 1_400}
    assert call(frontend, "POST", "/reject", record_body(2)).status == 200
    assert proxy.state(A, 2) is RecordState.ARCHIVED


def test_status_lists_partitions_pending_and_lag() -> None:
    _, frontend, _ = setup()
    call(frontend, "POST", "/read", {"timeout_ms": 0})
    status = json.loads(call(frontend, "GET", "/status").body)
    assert status["pending"] == 1
    assert status["partitions"][0] == {
        "topic": "jobs",
        "partition": 0,
        "start_offset": 0,
        "end_offset": 3,
        "high_watermark": 10,
        "lag": 10,
        "catching_up": False,
        "available": 2,
        "pending": 1,
        "acknowledged": 0,
    }
    assert status["partitions"][1]["high_watermark"] is None
    assert status["partitions"][1]["lag"] is None
    assert {k: status[k] for k in ("writer", "forwarded", "applied", "refused", "fenced")} == {
        "writer": 0,
        "forwarded": 0,
        "applied": 0,
        "refused": 0,
        "fenced": 0,
    }


def test_requests_for_a_partition_served_elsewhere_are_forwarded_through_the_log() -> None:
    proxy, frontend, _ = setup()
    C = TopicPartition("jobs", 2)  # of the topic, served by another server
    for route, kind in [("/acknowledge", "ACKNOWLEDGE"), ("/cancel", "CANCEL")]:
        response = call(frontend, "POST", route, record_body(5, delivery=2, tp=C))
        assert (response.status, json.loads(response.body)) == (202, {"forwarded": True})
        (entry,) = proxy.poll_log()
        assert (entry.kind.name, entry.tp, entry.offset, entry.delivery) == (
            f"{kind}_REQUEST",
            C,
            5,
            2,
        )
    assert call(frontend, "POST", "/renew", record_body(5, tp=C)).status == 404  # needs the owner
    assert json.loads(call(frontend, "GET", "/status").body)["forwarded"] == 2


def test_requests_for_a_partition_catching_up_are_forwarded_and_renew_waits() -> None:
    proxy = ConsumeProxy(writer=3)
    proxy.assign(A, 0, log_start=0, tail=True)
    proxy.append(A, 0, None, b"x")
    proxy.poll_log()  # its claim
    frontend = Frontend(proxy, Clock(), partitions={"jobs": 1}.get)
    assert call(frontend, "POST", "/acknowledge", record_body(0, delivery=1)).status == 202
    assert [e.kind.name for e in proxy.poll_log()] == ["ACKNOWLEDGE_REQUEST"]
    response = call(frontend, "POST", "/renew", record_body(0, delivery=1))
    assert response.status == 503 and dict(response.headers) == {"Retry-After": "1"}
    status = json.loads(call(frontend, "GET", "/status").body)
    assert status["partitions"][0]["catching_up"] is True


@pytest.mark.parametrize(
    ("method", "target", "body", "status", "reason"),
    [
        ("POST", "/read", b"{", 400, "JSON object"),
        ("POST", "/read", [1], 400, "JSON object"),
        ("POST", "/read", {}, 400, "'timeout_ms' is required"),
        ("POST", "/read", {"timeout_ms": -1}, 400, "timeout_ms must be 0 to"),
        ("POST", "/read", {"timeout_ms": MAX_READ_TIMEOUT_MS + 1}, 400, "timeout_ms must be"),
        ("POST", "/read", {"timeout_ms": 1.5}, 400, "JSON int"),
        ("POST", "/read", {"timeout_ms": True}, 400, "JSON int"),
        ("POST", "/read", {"timeout_ms": 0, "x": 1}, 400, "unknown field 'x'"),
        ("GET", "/read", None, 405, "GET is not allowed"),
        ("POST", "/status", None, 405, "POST is not allowed"),
        ("POST", "/nowhere", None, 404, "no such route"),
        ("POST", "/acknowledge", record_body(0, tp=TopicPartition("jobs", 7)), 404, "not served"),
        ("POST", "/acknowledge", record_body(0, tp=TopicPartition("x", 2)), 404, "not served"),
        ("POST", "/cancel", record_body(2**63, tp=TopicPartition("jobs", 2)), 400, "int64"),
        ("POST", "/acknowledge", record_body(9), 404, "has not been fetched"),
        ("POST", "/acknowledge", record_body(1), 409, "never handed out"),
        ("POST", "/acknowledge", record_body(0, delivery=2), 409, "delivery 2 ended"),
        ("POST", "/cancel", {"topic": "jobs", "partition": 0}, 400, "'offset' is required"),
        ("POST", "/renew", {"topic": 1, "partition": 0, "offset": 0}, 400, "JSON str"),
        ("POST", "/reject", record_body(-1), 400, "must be >= 0"),
        ("POST", "/acknowledge", record_body(0, delivery=0), 400, "delivery >= 1"),
    ],
)
def test_bad_requests_get_a_4xx_with_one_line_and_change_nothing(
    method: str, target: str, body: object, status: int, reason: str
) -> None:
    proxy, frontend, _ = setup()
    call(frontend, "POST", "/read", {"timeout_ms": 0})  # offset 0 is pending, delivery 1
    before = snapshot(proxy)
    response = call(frontend, method, target, body)
    assert response.status == status
    text = response.body.decode()
    assert reason in text
    assert len(text.splitlines()) == 1
    assert response.content_type.startswith("text/plain")
    assert snapshot(proxy) == before
    if status == 405:
        assert dict(response.headers)["Allow"] in ("GET", "POST")


def test_a_read_before_any_assignment_is_503_with_retry_after() -> None:
    frontend = Frontend(ConsumeProxy(), Clock())
    response = call(frontend, "POST", "/read", {"timeout_ms": 100})
    assert response.status == 503
    assert dict(response.headers) == {"Retry-After": "1"}


_TARGETS = st.sampled_from(
    ["/read", "/acknowledge", "/cancel", "/reject", "/renew", "/status", "/", "/read/", "/x"]
)
_VALUES = st.one_of(
    st.integers(min_value=-3, max_value=12),
    st.sampled_from([2**70, -(2**70), 1.0, True, None, "0", "jobs", "", [], {}]),
    st.text(max_size=4),
)
_FIELDS = st.dictionaries(
    st.sampled_from(["topic", "partition", "offset", "delivery", "timeout_ms", "other"]),
    _VALUES,
    max_size=5,
)


@settings(max_examples=400, deadline=None)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD"]),
    target=_TARGETS,
    body=st.one_of(_FIELDS.map(lambda d: json.dumps(d).encode()), st.binary(max_size=30)),
)
def test_any_request_gets_a_proper_answer(method: str, target: str, body: bytes) -> None:
    proxy, frontend, _ = setup()
    call(frontend, "POST", "/read", {"timeout_ms": 0})
    call(frontend, "POST", "/read", {"timeout_ms": 0})
    before = snapshot(proxy)
    answered: list[Response] = []

    async def request() -> None:
        # A read that waits never ends here (nothing appends or advances): give it up.
        with trio.move_on_after(1):
            answered.append(await frontend.handle(method, target, {}, body))

    trio.run(request, clock=trio.testing.MockClock(autojump_threshold=0))
    if not answered:  # a long poll, given up: it took nothing
        assert snapshot(proxy) == before
        return
    response = answered[0]
    assert response.status in {200, 202, 204, 400, 404, 405, 409}
    for entry in proxy.poll_log():  # whatever went to the log can be produced
        encode_entry(entry)
    if response.status >= 400:
        assert len(response.body.decode().splitlines()) == 1
        assert snapshot(proxy) == before
    else:
        json.loads(response.body or b"{}")

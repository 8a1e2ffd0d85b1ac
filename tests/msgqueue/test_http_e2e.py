"""End to end over loopback: a real server (h11 on trio) and a real HTTP client (httpx).

Every route and filter, the status codes, bad input refused with nothing changed, long polls
woken by inserts and by hide expiry, ttl expiry, get-and-hide under many concurrent waiters,
tokens, the worker patterns of the original's docs, and restart durability on SQLite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio
import trio.testing

from msgqueue import Backend, MemoryBackend, SqliteBackend
from msgqueue.client import AccessDeniedError, Client
from msgqueue.server import serve
from tests.msgqueue.http_server import running

ROOT = Path(__file__).resolve().parents[2]
Q = "/v1.0/acct/q"


async def test_every_route_and_filter(backend: Backend) -> None:
    async with running(backend) as http:
        assert (await http.get("/")).json() == ["v1.0"]
        assert (await http.get("/v1.0")).status_code == 404
        assert (await http.put(f"{Q}/m1", content=b"one")).status_code == 201
        assert (await http.put(f"{Q}/m1", content=b"uno")).status_code == 204
        assert (await http.put(f"{Q}/m2?hide=60&ttl=100", content=b"two")).status_code == 201
        assert (await http.put(f"{Q}/m3", content=b"three")).status_code == 201
        assert (await http.get("/v1.0")).json() == ["acct"]
        assert (await http.get("/v1.0?detail=all")).json() == [{"id": "acct"}]
        assert (await http.get("/v1.0/acct")).json() == ["q"]
        assert (await http.get("/v1.0/acct?detail=none")).status_code == 204

        listed = (await http.get(Q)).json()
        assert listed == [
            {"id": "m1", "ttl": 600, "hide": 0, "body": "uno"},
            {"id": "m3", "ttl": 600, "hide": 0, "body": "three"},
        ]
        for name in ("match_hidden", "show_hidden", "hidden"):
            ids = (await http.get(f"{Q}?{name}=true&detail=id")).json()
            assert ids == ["m1", "m2", "m3"]
        assert (await http.get(f"{Q}?detail=id&limit=1")).json() == ["m1"]
        assert (await http.get(f"{Q}?detail=id&marker=m1")).json() == ["m3"]
        assert (await http.get(f"{Q}?detail=body")).json() == ["uno", "three"]
        attributes = await http.get(f"{Q}?detail=attributes&match_hidden=true&marker=m1&limit=1")
        assert attributes.json() == [{"id": "m2", "ttl": 100, "hide": 60}]
        assert (await http.get(f"{Q}?detail=none")).status_code == 204

        body = await http.get(f"{Q}/m2?detail=body")
        assert (body.status_code, body.content) == (200, b"two")
        assert body.headers["content-type"] == "application/octet-stream"
        assert (await http.get(f"{Q}/m2")).json()["hide"] == 60
        assert (await http.get(f"{Q}/nope")).status_code == 404
        assert (await http.post(f"{Q}/m2?hide=0")).status_code == 204
        assert (await http.post(f"{Q}/m2?detail=id")).json() == "m2"
        assert (await http.get(f"{Q}?detail=id")).json() == ["m1", "m2", "m3"]

        assert (await http.post(f"{Q}?limit=1&ttl=600&match_hidden=true")).status_code == 204
        hidden = await http.post(f"{Q}?limit=1&hide=60&detail=all")  # get-and-hide
        assert [m["id"] for m in hidden.json()] == ["m1"] and hidden.json()[0]["hide"] == 60
        assert (await http.delete(f"{Q}/m1")).status_code == 204
        assert (await http.delete(f"{Q}/m1")).status_code == 404
        taken = await http.delete(f"{Q}?limit=1&detail=all")  # get-and-delete
        assert [m["id"] for m in taken.json()] == ["m2"]
        assert (await http.delete(Q)).status_code == 204
        assert (await http.get(f"{Q}?match_hidden=true")).status_code == 404
        assert (await http.delete("/v1.0/acct")).status_code == 404
        await http.put("/v1.0/acct/a/x", content=b"")
        await http.put("/v1.0/acct/b/x", content=b"")
        assert (await http.delete("/v1.0/acct?detail=id")).json() == ["a", "b"]
        assert (await http.get("/v1.0")).status_code == 404


@pytest.mark.parametrize(
    ("method", "target", "body", "status"),
    [
        ("PUT", f"{Q}/new?ttl=-1", b"x", 400),
        ("PUT", f"{Q}/new?ttl=abc", b"x", 400),
        ("PUT", f"{Q}/new?hide=1.5", b"x", 400),
        ("PUT", f"{Q}/new?hide=99999999999", b"x", 400),
        ("PUT", f"{Q}/new", b"\xff\xfe", 400),
        ("PUT", f"{Q}/new", b"x" * 101, 413),
        ("GET", f"{Q}?limit=x", b"", 400),
        ("GET", f"{Q}?limit=-1", b"", 400),
        ("DELETE", f"{Q}?wait=-2", b"", 400),
        ("DELETE", f"{Q}?detail=everything", b"", 400),
        ("DELETE", f"{Q}?match_hidden=maybe", b"", 400),
        ("POST", f"{Q}?hide=-5", b"", 400),
        ("DELETE", "/v1.0/acct?detail=body", b"", 400),
        ("DELETE", "/v1.0/acct/%ff/m", b"", 400),
        ("DELETE", "/v1.0/acct/q/%01", b"", 400),
        ("DELETE", "/v2.0/acct", b"", 404),
        ("DELETE", f"{Q}/m/extra", b"", 404),
        ("PATCH", Q, b"", 405),
        ("PUT", Q, b"", 405),
        ("DELETE", "/v1.0", b"", 405),
    ],
)
async def test_bad_input_is_refused_with_a_reason_and_changes_nothing(
    method: str, target: str, body: bytes, status: int
) -> None:
    async with running(MemoryBackend(), max_body=100) as http:
        await http.put(f"{Q}/m", content=b"kept")
        before = (await http.get(f"{Q}?match_hidden=true")).json()
        response = await http.request(method, target, content=body)
        assert response.status_code == status
        assert response.text.count("\n") == 1 and response.text.strip()
        assert (await http.get(f"{Q}?match_hidden=true")).json() == before
        if status == 405:
            assert response.headers["allow"]


async def test_long_polls_are_woken_by_insert_and_by_hide_expiry(backend: Backend) -> None:
    async with running(backend) as http:
        results: list[httpx.Response] = []

        async def poll(target: str) -> None:
            results.append(await http.post(target))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll, f"{Q}?limit=1&hide=60&wait=30&detail=id")
            await trio.sleep(0.2)  # the poll is waiting (not asserted: it cannot end early)
            await http.put(f"{Q}/inserted", content=b"x")
        assert results[0].json() == ["inserted"]

        await http.put(f"{Q}/unhidden?hide=1", content=b"x")
        with trio.fail_after(20):
            await poll(f"{Q}?limit=1&hide=60&wait=30&detail=id")
        assert results[1].json() == ["unhidden"]


async def test_a_long_poll_that_expires_is_404_and_ttl_expires(backend: Backend) -> None:
    async with running(backend) as http:
        assert (await http.get(f"{Q}?wait=1")).status_code == 404
        await http.put(f"{Q}/brief?ttl=1", content=b"x")
        assert (await http.get(f"{Q}/brief")).status_code == 200
        await trio.sleep(1.05)
        assert (await http.get(f"{Q}/brief")).status_code == 404
        assert (await http.get("/v1.0")).status_code == 404


async def test_get_and_hide_gives_each_message_to_exactly_one_of_many_waiters(
    backend: Backend,
) -> None:
    waiters = 30
    async with running(backend) as http:
        got: list[str] = []

        async def worker() -> None:
            response = await http.post(f"{Q}?limit=1&hide=60&wait=20&detail=id")
            got.extend(response.json())

        async with trio.open_nursery() as nursery:
            for _ in range(waiters):
                nursery.start_soon(worker)
            await trio.sleep(0.3)
            for number in range(waiters):
                await http.put(f"{Q}/m{number}", content=b"x")
        assert sorted(got) == sorted(f"m{number}" for number in range(waiters))
        hidden = (await http.get(f"{Q}?match_hidden=true&detail=attributes")).json()
        assert len(hidden) == waiters and all(m["hide"] > 0 for m in hidden)


async def test_tokens_keep_accounts_apart() -> None:
    tokens = {"alice": "secret-a", "bob": "secret-b"}
    async with running(MemoryBackend(), tokens=tokens) as http:
        alice = Client.over_http(http, token="secret-a")
        assert await alice.create_message("alice", "q", "m", "hers")
        with pytest.raises(AccessDeniedError) as refused:
            await alice.get_messages("bob", "q")
        assert refused.value.status == 403
        response = await http.get("/v1.0/alice/q", headers={"x-auth-token": "secret-b"})
        assert response.status_code == 403
        assert (await http.get("/v1.0/alice/q")).status_code == 401
        assert (await http.put("/v1.0/bob/q/m", content=b"x")).status_code == 401
        bob = Client.over_http(http, token="secret-b")
        assert await bob.create_message("bob", "q", "m", "his")
        assert await alice.get_accounts() == ["alice"]
        assert await bob.get_accounts() == ["bob"]
        assert [m["body"] for m in await alice.get_messages("alice", "q")] == ["hers"]  # type: ignore[index]


async def test_the_worker_patterns_of_the_original_docs() -> None:
    async with running(MemoryBackend()) as http:
        client = Client.over_http(http)
        for number in range(3):
            await client.create_message("acct", "jobs", f"job{number}", f"work {number}")
        # Reliable: take one with a hide, extend the hide, delete when done.
        (job,) = await client.update_messages(
            "acct", "jobs", limit=1, wait=60, hide=60, detail="all"
        )
        assert job == {"id": "job0", "ttl": 600, "hide": 60, "body": "work 0"}
        assert await client.update_message("acct", "jobs", "job0", hide=120) is None
        assert (await client.get_message("acct", "jobs", "job0"))["hide"] == 120  # type: ignore[index]
        assert await client.delete_message("acct", "jobs", "job0") is None
        # Fast and lossy: take everything visible at once.
        taken = await client.delete_messages("acct", "jobs", limit=100, wait=60, detail="id")
        assert taken == ["job1", "job2"]
        # Multicast: every reader sees every message, following its own marker.
        for number in range(3):
            await client.create_message("acct", "news", f"n{number}", "x", ttl=60)
        for _reader in range(2):
            seen: list[object] = []
            marker = None
            while batch := await client.get_messages(
                "acct", "news", marker=marker, detail="id", limit=2
            ):
                seen += batch
                marker = str(batch[-1])
            assert seen == ["n0", "n1", "n2"]


async def test_sqlite_survives_a_restart_with_its_deadlines(tmp_path: Path) -> None:
    path = tmp_path / "queue.db"
    backend = SqliteBackend(path)
    async with running(backend) as http:
        await http.put(f"{Q}/kept?ttl=100&hide=60", content=b"durable")
        await http.put(f"{Q}/open", content=b"visible")
    backend.close()
    backend = SqliteBackend(path)
    async with running(backend) as http:
        listed = (await http.get(f"{Q}?match_hidden=true")).json()
        assert [m["id"] for m in listed] == ["kept", "open"]
        assert listed[0]["body"] == "durable"
        assert 95 <= listed[0]["ttl"] <= 100 and 55 <= listed[0]["hide"] <= 60
        assert [m["id"] for m in (await http.get(Q)).json()] == ["open"]
    backend.close()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])  # Ctrl-C, a process manager
def test_the_serve_command_stops_cleanly_on_ctrl_c_or_sigterm(
    tmp_path: Path, stop: signal.Signals
) -> None:
    command = [sys.executable, "-m", "msgqueue", "serve", "--port", "0"]
    command += ["--backend", f"sqlite:{tmp_path / 'q.db'}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as server:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert "serving" in line
        url = line.rsplit(" ", 1)[1].strip()
        assert httpx.put(f"{url}/acct/q/m", content=b"x").status_code == 201
        server.send_signal(stop)
        try:
            _, errors = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()  # never leave a server behind (Popen's exit would wait for it)
            raise
    assert server.returncode == 0
    assert errors.strip() == "msgqueue: stopped"
    assert SqliteBackend(tmp_path / "q.db").get("acct", "q", "m") is not None


async def _raw(port: int, data: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        if data:
            await stream.send_all(data)
        received = b""
        while chunk := await stream.receive_some(65536):
            received += chunk
        return received


async def test_malformed_http_gets_400_and_idle_connections_are_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("trio_http.server.IDLE_TIMEOUT_S", 0.3)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve, MemoryBackend(), host="127.0.0.1", port=0))
        answer = await _raw(port, b"NOT HTTP AT ALL\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400 ")
        with trio.fail_after(10):
            assert await _raw(port, b"") == b""  # closed by the server, unanswered
            assert await _raw(port, b"PUT /v1.0/a/q/m HTTP/1.1\r\nHost: x\r\n") == b""
        nursery.cancel_scope.cancel()


async def test_a_long_poll_whose_client_left_takes_no_message() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve, MemoryBackend(), host="127.0.0.1", port=0))
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(
            b"POST /v1.0/acct/q?limit=1&hide=60&wait=30 HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 0\r\n\r\n"
        )
        await trio.sleep(0.2)
        await stream.aclose()  # the worker goes away while it waits
        await trio.sleep(0.2)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            await http.put(f"{Q}/m", content=b"x")
            assert (await http.get(f"{Q}?detail=attributes")).json() == [
                {"id": "m", "ttl": 600, "hide": 0}
            ]
        nursery.cancel_scope.cancel()

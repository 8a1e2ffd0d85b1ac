"""The Python client: the API's calls as methods, in-process or over HTTP, same answers.

A :class:`Client` speaks the HTTP API's requests through a transport: :meth:`Client.over_http`
sends them with httpx to a server, :meth:`Client.in_process` hands them straight to a
:class:`~msgqueue.http.Frontend` in this process (no socket: the seed's "local or in-process
queues"). Both go through the same routing, validation and status codes, so a program
behaves the same on either.

Every ``detail`` defaults to None: the server's default for the call (``all`` for reads,
``none`` for updates and deletes). Results are the API's JSON values: a message list is a
list of views (dicts, ids or bodies, per ``detail``), ``[]`` when nothing matched (the API's
404, including a wait that ended empty) or nothing is to be returned (``none``); a
one-message call returns the view, or None for a success with nothing to return, and raises
:class:`MessageNotFoundError` when there is no such message. A refused request raises
:class:`RequestError` (400 and 413 as :class:`InvalidRequestError`, a ValueError; 401 and
403 as :class:`AccessDeniedError`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import quote, urlencode

import httpx

from msgqueue.http import TOKEN_HEADER, VERSION, Frontend
from msgqueue.model import QueueError

__all__ = [
    "AccessDeniedError",
    "Client",
    "InvalidRequestError",
    "MessageNotFoundError",
    "RequestError",
]

_Transport = Callable[[str, str, bytes], Awaitable[tuple[int, str, bytes]]]
"""(method, target, body) -> (status, content type, body)."""


class RequestError(QueueError):
    """The server refused a request; :attr:`status` is the HTTP status."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


class InvalidRequestError(RequestError, ValueError):
    """400 or 413: a bad parameter, name or body."""


class AccessDeniedError(RequestError, PermissionError):
    """401 or 403: no valid token, or a token of another account."""


class MessageNotFoundError(QueueError, LookupError):
    """A one-message call named a message that does not exist."""


class Client:
    """The API as methods (see the module docstring); build one with :meth:`over_http` or
    :meth:`in_process`."""

    def __init__(self, transport: _Transport) -> None:
        self._transport = transport

    @classmethod
    def in_process(cls, frontend: Frontend, *, token: str | None = None) -> Client:
        """A client of ``frontend`` in this process."""
        headers = {} if token is None else {TOKEN_HEADER: token}

        async def transport(method: str, target: str, body: bytes) -> tuple[int, str, bytes]:
            response = await frontend.handle(method, target, headers, body)
            return response.status, response.content_type, response.body

        return cls(transport)

    @classmethod
    def over_http(cls, http: httpx.AsyncClient, *, token: str | None = None) -> Client:
        """A client of the server ``http`` is set up for (its ``base_url``); the caller
        owns ``http`` and closes it."""
        headers = {} if token is None else {TOKEN_HEADER: token}

        async def transport(method: str, target: str, body: bytes) -> tuple[int, str, bytes]:
            response = await http.request(method, target, content=body, headers=headers)
            return response.status_code, response.headers.get("content-type", ""), response.content

        return cls(transport)

    async def _call(
        self, method: str, names: tuple[str, ...], params: Mapping[str, object], body: bytes = b""
    ) -> tuple[int, object]:
        path = "/".join(["", VERSION, *(quote(name, safe="") for name in names)])
        query = urlencode(
            {
                name: str(value).lower() if isinstance(value, bool) else value
                for name, value in params.items()
                if value is not None and value is not False
            }
        )
        status, content_type, data = await self._transport(
            method, f"{path}?{query}" if query else path, body
        )
        if status in (400, 413):
            raise InvalidRequestError(status, data.decode(errors="replace").strip())
        if status in (401, 403):
            raise AccessDeniedError(status, data.decode(errors="replace").strip())
        if status >= 300 and status != 404:
            raise RequestError(status, data.decode(errors="replace").strip())
        if content_type == "application/json":
            return status, json.loads(data)
        if content_type == "application/octet-stream":
            return status, data.decode()
        return status, None

    async def _list(
        self, method: str, names: tuple[str, ...], params: Mapping[str, object]
    ) -> list[object]:
        _, value = await self._call(method, names, params)
        return value if isinstance(value, list) else []

    async def _one(
        self, method: str, names: tuple[str, ...], params: Mapping[str, object]
    ) -> object:
        status, value = await self._call(method, names, params)
        if status == 404:
            raise MessageNotFoundError(f"no message {names[-1]!r} in queue {names[-2]!r}")
        return value

    # -- accounts and queues ----------------------------------------------------------------

    async def get_accounts(
        self, *, limit: int = 0, marker: str | None = None, detail: str | None = None
    ) -> list[object]:
        """Accounts holding messages."""
        return await self._list(
            "GET", (), {"limit": limit or None, "marker": marker, "detail": detail}
        )

    async def get_queues(
        self, account: str, *, limit: int = 0, marker: str | None = None, detail: str | None = None
    ) -> list[object]:
        """The account's queues."""
        params = {"limit": limit or None, "marker": marker, "detail": detail}
        return await self._list("GET", (account,), params)

    async def delete_queues(
        self, account: str, *, limit: int = 0, marker: str | None = None, detail: str | None = None
    ) -> list[object]:
        """Delete the account's (matching) queues."""
        params = {"limit": limit or None, "marker": marker, "detail": detail}
        return await self._list("DELETE", (account,), params)

    # -- many messages ----------------------------------------------------------------------

    async def get_messages(
        self,
        account: str,
        queue: str,
        *,
        limit: int = 0,
        marker: str | None = None,
        match_hidden: bool = False,
        detail: str | None = None,
        wait: int = 0,
    ) -> list[object]:
        """List messages; with ``wait``, long-poll until one matches."""
        params = _filters(limit, marker, match_hidden, detail, wait)
        return await self._list("GET", (account, queue), params)

    async def update_messages(
        self,
        account: str,
        queue: str,
        *,
        ttl: int | None = None,
        hide: int | None = None,
        limit: int = 0,
        marker: str | None = None,
        match_hidden: bool = False,
        detail: str | None = None,
        wait: int = 0,
    ) -> list[object]:
        """Set attributes of the matching messages atomically (with ``hide``: get-and-hide)."""
        params = {**_filters(limit, marker, match_hidden, detail, wait), "ttl": ttl, "hide": hide}
        return await self._list("POST", (account, queue), params)

    async def delete_messages(
        self,
        account: str,
        queue: str,
        *,
        limit: int = 0,
        marker: str | None = None,
        match_hidden: bool = False,
        detail: str | None = None,
        wait: int = 0,
    ) -> list[object]:
        """Delete the matching messages atomically (get-and-delete)."""
        params = _filters(limit, marker, match_hidden, detail, wait)
        return await self._list("DELETE", (account, queue), params)

    # -- one message ------------------------------------------------------------------------

    async def create_message(
        self,
        account: str,
        queue: str,
        id: str,
        body: str,
        *,
        ttl: int | None = None,
        hide: int | None = None,
    ) -> bool:
        """Insert or overwrite a message; True if it is new."""
        status, _ = await self._call(
            "PUT", (account, queue, id), {"ttl": ttl, "hide": hide}, body.encode()
        )
        return status == 201

    async def get_message(
        self, account: str, queue: str, id: str, *, detail: str | None = None
    ) -> object:
        """Read a message."""
        return await self._one("GET", (account, queue, id), {"detail": detail})

    async def update_message(
        self,
        account: str,
        queue: str,
        id: str,
        *,
        ttl: int | None = None,
        hide: int | None = None,
        detail: str | None = None,
    ) -> object:
        """Set a message's attributes (a worker extends its hide this way)."""
        params = {"ttl": ttl, "hide": hide, "detail": detail}
        return await self._one("POST", (account, queue, id), params)

    async def delete_message(
        self, account: str, queue: str, id: str, *, detail: str | None = None
    ) -> object:
        """Delete a message."""
        return await self._one("DELETE", (account, queue, id), {"detail": detail})


def _filters(
    limit: int, marker: str | None, match_hidden: bool, detail: str | None, wait: int
) -> dict[str, object]:
    return {
        "limit": limit or None,
        "marker": marker,
        "match_hidden": match_hidden,
        "detail": detail,
        "wait": wait or None,
    }

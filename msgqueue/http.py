"""The HTTP front end: Burrow's API 1.0 mapped onto a :class:`~msgqueue.MessageQueue`.

:class:`Frontend` turns one HTTP request (method, target, headers, body) into one
:class:`Response`; it owns routing, parameter validation, access control and the status
codes, and does no I/O of its own (:mod:`trio_http` carries requests over sockets with
h11). Its only wait is a long poll (``wait``), an awaited delayed operation of the engine.

Routes (a trailing ``/`` is ignored; names are percent-decoded path segments)::

    GET    /                                versions: ["v1.0"]
    GET    /v1.0                            accounts
    GET    /v1.0/{account}                  queues of the account
    DELETE /v1.0/{account}                  delete queues (all their messages)
    GET    /v1.0/{account}/{queue}          list messages
    POST   /v1.0/{account}/{queue}          set attributes of matching messages (get-and-hide)
    DELETE /v1.0/{account}/{queue}          delete matching messages (get-and-delete)
    GET    /v1.0/{account}/{queue}/{id}     read a message
    PUT    /v1.0/{account}/{queue}/{id}     insert or overwrite (body = message body, UTF-8)
    POST   /v1.0/{account}/{queue}/{id}     set attributes of a message
    DELETE /v1.0/{account}/{queue}/{id}     delete a message

Query parameters: ``limit``, ``marker``, ``match_hidden`` (also ``show_hidden``, the seed's
name, and ``hidden``, the original's later one), ``detail``, ``wait`` (queue routes), ``ttl``
and ``hide`` (PUT and POST). Every one present is validated, whatever the route: integers
are plain decimal digits up to :data:`~msgqueue.model.MAX_SECONDS`, booleans ``true`` or
``false``.

Status codes, as the original answers them: 200 with a JSON body; 201 for a new message; 204
for a success with nothing to return (``detail=none``, a DELETE, a PUT that overwrites);
404 when nothing matches, a long poll that ends empty included. Where the original
misbehaves, better: 400 with a one-line reason for a bad parameter, name or body (it
answered 500 or accepted negatives), 405 with ``Allow`` for a method a route lacks (it
answered 400), 413 past the body size limit, 401/403 with tokens. A rejected request changes
nothing. Error bodies are one line of text.

Details, as the original's last version answers them: a message reads as its id (a JSON
string) for ``id``, ``{"id", "ttl", "hide"}`` for ``attributes``, its body for ``body`` (a
JSON string in a list, the raw bytes for one message) and all of it for ``all``; the default
is ``all`` for GET, ``none`` for POST and DELETE (so they answer 204). Accounts and queues
accept ``none``, ``id`` (their names, the default) and ``all`` (``{"id": name}``).

Tokens: with ``tokens`` (account -> token) a request naming an account must carry that
account's token in ``X-Auth-Token``: none, or one nobody holds, is 401; another account's is
403. ``GET /v1.0`` then lists the caller's own account only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote

from msgqueue.message_queue import Action, MessageQueue, Request
from msgqueue.model import (
    MAX_SECONDS,
    Attributes,
    Detail,
    Filters,
    InvalidArgumentError,
    Message,
    check_name,
)
from trio_http import Response

__all__ = ["DEFAULT_MAX_BODY", "TOKEN_HEADER", "VERSION", "Frontend", "Response"]

VERSION = "v1.0"
DEFAULT_MAX_BODY = 65536
"""Bytes a request body may have by default; more is answered 413."""
TOKEN_HEADER = "x-auth-token"

_DIGITS = re.compile(r"[0-9]{1,10}")
_HIDDEN_NAMES = ("match_hidden", "show_hidden", "hidden")
_ALLOWED = {
    1: ("GET",),
    2: ("GET",),
    3: ("GET", "DELETE"),
    4: ("GET", "POST", "DELETE"),
    5: ("GET", "PUT", "POST", "DELETE"),
}
"""Methods per route, by the number of path segments (``/`` is one, empty)."""


_NO_CONTENT = Response(204, b"", "")


class _Refused(Exception):
    """Answer with this response (raised by the checks below)."""

    def __init__(self, response: Response) -> None:
        self.response = response


class Frontend:
    """Burrow's HTTP API over ``engine`` (see the module docstring).

    ``tokens`` (account -> token) turns on access control; ``max_body`` bounds request
    bodies in bytes.
    """

    def __init__(
        self,
        engine: MessageQueue,
        *,
        tokens: Mapping[str, str] | None = None,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.engine = engine
        self.tokens = dict(tokens) if tokens is not None else None
        self.max_body = max_body

    def may_wait(self, method: str, target: str) -> bool:
        """True for a request with a ``wait`` (a long poll)."""
        return "wait=" in target

    async def handle(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        """Answer one request. ``headers`` are keyed by lower-case name."""
        try:
            if len(body) > self.max_body:
                raise _Refused(Response.error(413, f"body exceeds {self.max_body} bytes"))
            return await self._route(method, target, headers, body)
        except _Refused as refused:
            return refused.response
        except InvalidArgumentError as error:
            return Response.error(400, str(error))

    async def _route(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> Response:
        path, _, query = target.partition("?")  # origin form; any other form matches no route
        names = _segments(path)
        if len(names) > 5 or (len(names) > 1 and names[1] != VERSION) or names[0] != "":
            raise _Refused(Response.error(404, f"no such route: {path}"))
        allowed = _ALLOWED[len(names)]
        if method not in allowed:
            raise _Refused(
                Response.error(405, f"{method} is not allowed here", ("Allow", ", ".join(allowed)))
            )
        params = _params(query)
        filters = _filters(params)
        attributes = _attributes(params)
        if len(names) == 1:
            return Response.json([VERSION])
        if len(names) == 2:
            return self._accounts(filters, headers)
        account = check_name("account", names[2])
        self._authorize(account, headers)
        engine = self.engine
        if len(names) == 3:
            _check_list_detail(filters)
            if method == "GET":
                return _names(engine.get_queues(account, filters), filters, Detail.ID)
            return _names(engine.delete_queues(account, filters), filters, Detail.NONE)
        queue = check_name("queue", names[3])
        if len(names) == 4:
            action, default = {
                "GET": (Action.GET, Detail.ALL),
                "POST": (Action.UPDATE, Detail.NONE),
                "DELETE": (Action.DELETE, Detail.NONE),
            }[method]
            request = Request(action, account, queue, filters, attributes)
            wait = _count(params, "wait")
            if wait:
                found = await engine.execute_waiting(request, wait)
            else:
                found = engine.execute(request)
            return self._messages(found, filters.detail or default)
        id = check_name("message id", names[4])
        if method == "PUT":
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                raise _Refused(Response.error(400, "the body must be UTF-8 text")) from None
            created = engine.create_message(account, queue, id, text, attributes)
            return Response(201, b"", "") if created else _NO_CONTENT
        if method == "GET":
            message, default = engine.get_message(account, queue, id), Detail.ALL
        elif method == "POST":
            message = engine.update_message(account, queue, id, attributes)
            default = Detail.NONE
        else:
            message, default = engine.delete_message(account, queue, id), Detail.NONE
        if message is None:
            return Response.error(404, f"no message {id!r} in queue {queue!r}")
        detail = filters.detail or default
        if detail is Detail.BODY:
            return Response(200, message.body.encode(), "application/octet-stream")
        view = message.view(detail, engine.now)
        return _NO_CONTENT if view is None else Response.json(view)

    def _accounts(self, filters: Filters, headers: Mapping[str, str]) -> Response:
        _check_list_detail(filters)
        accounts = self.engine.get_accounts(filters)
        if self.tokens is not None:
            own = self._token_owner(headers)
            accounts = [account for account in accounts if account == own]
        return _names(accounts, filters, Detail.ID)

    def _token_owner(self, headers: Mapping[str, str]) -> str:
        token = headers.get(TOKEN_HEADER)
        assert self.tokens is not None
        for account, expected in self.tokens.items():
            if token == expected:
                return account
        raise _Refused(
            Response.error(
                401, f"a valid {TOKEN_HEADER} header is required", ("WWW-Authenticate", "Token")
            )
        )

    def _authorize(self, account: str, headers: Mapping[str, str]) -> None:
        if self.tokens is not None and self._token_owner(headers) != account:
            raise _Refused(Response.error(403, f"this token may not access account {account!r}"))

    def _messages(self, messages: list[Message], detail: Detail) -> Response:
        if not messages:
            return Response.error(404, "no message matched")
        if detail is Detail.NONE:
            return _NO_CONTENT
        now = self.engine.now
        return Response.json([message.view(detail, now) for message in messages])


def _segments(path: str) -> list[str]:
    """The percent-decoded path segments after the leading ``/`` ('' for the root)."""
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    raw = path.split("/")[1:] if path.startswith("/") else [path]
    names = [""] if raw in ([], [""]) else ["", *raw]
    try:
        return [unquote(name, errors="strict") for name in names]
    except UnicodeDecodeError:
        raise _Refused(Response.error(400, "path segments must be UTF-8")) from None


def _params(query: str) -> dict[str, str]:
    try:
        return dict(parse_qsl(query, keep_blank_values=True, errors="strict"))
    except (UnicodeDecodeError, ValueError):
        raise _Refused(Response.error(400, "the query string must be UTF-8")) from None


def _count(params: Mapping[str, str], name: str) -> int | None:
    text = params.get(name)
    if text is None:
        return None
    if not _DIGITS.fullmatch(text) or int(text) > MAX_SECONDS:
        raise InvalidArgumentError(
            f"{name} must be an integer from 0 to {MAX_SECONDS}, got {text!r}"
        )
    return int(text)


def _filters(params: Mapping[str, str]) -> Filters:
    hidden = False
    for name in _HIDDEN_NAMES:
        text = params.get(name)
        if text is not None:
            if text.lower() not in ("true", "false"):
                raise InvalidArgumentError(f"{name} must be true or false, got {text!r}")
            hidden = text.lower() == "true"
    detail = params.get("detail")
    _count(params, "wait")
    return Filters(
        limit=_count(params, "limit") or 0,
        marker=params.get("marker"),
        match_hidden=hidden,
        detail=None if detail is None else Detail.parse(detail),
    )


def _attributes(params: Mapping[str, str]) -> Attributes:
    return Attributes(ttl=_count(params, "ttl"), hide=_count(params, "hide"))


def _check_list_detail(filters: Filters) -> None:
    if filters.detail not in (None, Detail.NONE, Detail.ID, Detail.ALL):
        raise InvalidArgumentError(
            f"detail must be none, id or all for accounts and queues, got {filters.detail.value!r}"
        )


def _names(names: list[str], filters: Filters, default: Detail) -> Response:
    if not names:
        return Response.error(404, "nothing matched")
    detail = filters.detail or default
    if detail is Detail.NONE:
        return _NO_CONTENT
    if detail is Detail.ID:
        return Response.json(names)
    return Response.json([{"id": name} for name in names])

"""RequestChannel: where a broker's responses go, each paired with the request it answers.

A driver (the in-process cluster, the simulator, a network server) hands a :class:`Request` to
:meth:`apis.KafkaApis.handle`; sooner or later exactly one :class:`Response` for it appears in
the broker's :class:`RequestChannel`, and the driver drains the channel and routes each response
to the connection that sent the request. Responses can appear during ``handle`` (an immediate
answer) or later, during any call that completes a delayed operation (another request,
``ReplicaManager.advance_clock``, a leadership change).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from apis.api_table import RequestBody, ResponseBody
from apis.exceptions import RequestHeaderMismatchError
from apis.header import RequestHeader
from apis.produce import ProduceRequest

__all__ = ["Request", "RequestBody", "RequestChannel", "Response", "ResponseBody"]


class Request:
    """A received request: its header, its body and the connection it arrived on. Not to be
    changed once made (a plain class, not an attrs one: one is made per request, and a
    plain class is native, so cheap to build and read, in the compiled build).

    Raises:
        RequestHeaderMismatchError: ``header.api_key`` is not the API of ``body``.
    """

    __slots__ = ("body", "connection_id", "header")

    def __init__(self, header: RequestHeader, body: RequestBody, connection_id: str = "") -> None:
        if header.api_key != body.API_KEY:
            raise RequestHeaderMismatchError(
                f"header api_key {header.api_key.name} does not match a "
                f"{type(body).__name__} (api_key {body.API_KEY.name})"
            )
        self.header = header
        self.body = body
        self.connection_id = connection_id

    def __repr__(self) -> str:
        return f"Request({self.header!r}, {self.body!r}, connection_id={self.connection_id!r})"

    @classmethod
    def create(
        cls,
        body: RequestBody,
        *,
        correlation_id: int,
        client_id: str = "",
        connection_id: str = "",
        api_version: int = 0,
    ) -> Request:
        """A request whose header's API key is taken from ``body`` (``api_version``: the
        version the client sent it in, for the few rules that depend on it)."""
        header = RequestHeader(body.API_KEY, correlation_id, client_id, api_version)
        return cls(header, body, connection_id)

    @property
    def expects_response(self) -> bool:
        """False for an acks=0 produce: its response is a no-op that a network server would
        not write to the socket (Kafka's ``NoOpResponse``). It is still put in the channel, so
        every request gets exactly one :class:`Response`."""
        return not (isinstance(self.body, ProduceRequest) and self.body.acks == 0)


class Response:
    """The answer to ``request`` (a plain class, as :class:`Request` is)."""

    __slots__ = ("body", "request")

    def __init__(self, request: Request, body: ResponseBody) -> None:
        self.request = request
        self.body = body

    def __repr__(self) -> str:
        return f"Response({self.request!r}, {self.body!r})"

    @property
    def correlation_id(self) -> int:
        """The correlation id of the request this answers."""
        return self.request.header.correlation_id


class RequestChannel:
    """A FIFO of responses waiting to be sent back (one per broker).

    Single-threaded: :meth:`send_response` appends, :meth:`receive_responses` drains in the
    order responses were sent. Listeners (:meth:`add_listener`) see each response the moment
    it is sent, before any driver drains it: the place for metrics and invariant checks that
    must observe the broker's state at completion time.
    """

    __slots__ = ("_listeners", "_responses", "responses_sent")

    def __init__(self) -> None:
        self._responses: deque[Response] = deque()
        self._listeners: list[Callable[[Response], None]] = []
        #: Total responses ever sent through this channel.
        self.responses_sent = 0

    def add_listener(self, listener: Callable[[Response], None]) -> None:
        """Call ``listener(response)`` for every response from now on, as it is sent (in the
        order listeners were added). An exception from a listener propagates to the caller
        of :meth:`send_response`, after the response is queued."""
        self._listeners.append(listener)

    def __len__(self) -> int:
        """Responses sent and not yet received."""
        return len(self._responses)

    def send_response(self, request: Request, body: ResponseBody) -> None:
        """Queue ``body`` as the response to ``request``."""
        response = Response(request, body)
        self._responses.append(response)
        self.responses_sent += 1
        for listener in self._listeners:
            listener(response)

    def receive_responses(self) -> list[Response]:
        """Remove and return every queued response, oldest first."""
        if not self._responses:
            return []  # the common case: drivers poll after every step
        responses = list(self._responses)
        self._responses.clear()
        return responses

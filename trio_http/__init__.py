"""trio_http: a small HTTP/1.1 server on h11 and trio for the project's services.

A service writes a :class:`Handler` (request in, :class:`Response` out, no I/O) and hands it
to :func:`serve_handler`. Knows nothing of the project: the message queue (``msgqueue``) and
the consume proxy (``consume_proxy``) both serve their HTTP APIs with it. See
:mod:`trio_http.server`; :func:`stop_on_sigterm` makes SIGTERM stop a service as Ctrl-C does.
"""

from trio_http.server import IDLE_TIMEOUT_S, Handler, Response, serve_handler
from trio_http.stop import stop_on_sigterm

__all__ = ["IDLE_TIMEOUT_S", "Handler", "Response", "serve_handler", "stop_on_sigterm"]

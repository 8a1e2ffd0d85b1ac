"""ServerThread: a :class:`~kafka_server.KafkaServer` on its own trio loop in a daemon thread.

For callers that are not trio code: blocking clients (kafka-python, confluent-kafka) and
asyncio ones (aiokafka) in tests. :meth:`ServerThread.start` returns once every broker
listens; :meth:`ServerThread.call` runs a function on the server's loop (the cluster is not
thread-safe: touch it only through ``call``); :meth:`ServerThread.stop` cancels the server
and joins the thread. Also a context manager.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import trio

from kafka_server.server import KafkaServer

__all__ = ["ServerThread"]

_T = TypeVar("_T")


class ServerThread:
    """Runs ``KafkaServer(**options)`` in a daemon thread (see the module docstring)."""

    def __init__(self, **options: Any) -> None:
        self.server = KafkaServer(**options)
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel: trio.CancelScope | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kafka-server", daemon=True)

    @property
    def bootstrap_servers(self) -> str:
        """The brokers' ``host:port`` list."""
        return self.server.bootstrap_servers

    def start(self) -> ServerThread:
        """Start the thread; return once every broker listens.

        Raises:
            RuntimeError: the server failed to start (the cause is chained).
        """
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError("the Kafka server failed to start") from self._error
        return self

    def _run(self) -> None:
        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as self._cancel:
                async with trio.open_nursery() as nursery:
                    await nursery.start(self.server.serve)
                    self._ready.set()

        try:
            trio.run(main)
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    def call(self, function: Callable[[], _T]) -> _T:
        """Run ``function()`` on the server's loop and return its result (e.g.
        ``call(lambda: thread.server.stop_broker(1))``)."""
        if self._token is None:
            raise RuntimeError("the server is not running")
        return trio.from_thread.run_sync(function, trio_token=self._token)

    def stop(self) -> None:
        """Cancel the server and wait for its thread to end."""
        if self._cancel is not None and self._token is not None and self._thread.is_alive():
            cancel = self._cancel
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(cancel.cancel, trio_token=self._token)
        self._thread.join()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

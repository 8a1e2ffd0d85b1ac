"""msgqueue: a multi-tenant message queue (OpenStack Burrow's HTTP API 1.0) on the purgatory.

Accounts hold queues, queues hold messages; a message has an id, a body and two attributes,
``ttl`` and ``hide``. ``ttl`` and ``hide`` are timers on :class:`purgatory.TimingWheel`, and a
read with ``wait`` is a :class:`purgatory.DelayedOperation` woken by inserts and unhides (see
:mod:`msgqueue.message_queue`). Storage is a back end (:mod:`msgqueue.backend`: memory or
SQLite); :mod:`msgqueue.http` is the HTTP front end, :mod:`msgqueue.client` the Python client
(in-process or over HTTP), ``python -m msgqueue serve`` the server. See docs/queue.md.
"""

from msgqueue.backend import Backend, MemoryBackend, SqliteBackend, open_backend
from msgqueue.message_queue import Action, DelayedQueueRequest, MessageQueue, Request
from msgqueue.model import (
    ALL,
    DEFAULT_TTL,
    KEEP,
    Attributes,
    Detail,
    Filters,
    InvalidArgumentError,
    Message,
    QueueError,
)

__all__ = [
    "ALL",
    "DEFAULT_TTL",
    "KEEP",
    "Action",
    "Attributes",
    "Backend",
    "DelayedQueueRequest",
    "Detail",
    "Filters",
    "InvalidArgumentError",
    "MemoryBackend",
    "Message",
    "MessageQueue",
    "QueueError",
    "Request",
    "SqliteBackend",
    "open_backend",
]

"""Back ends: where messages are stored. One interface, two implementations.

A back end is plain synchronous storage with no notion of time: it keeps messages with their
absolute deadlines and answers the queries the engine (:class:`~msgqueue.MessageQueue`) needs.
Expiry, hiding and waking waiters are the engine's business, the same for every back end.

* :class:`MemoryBackend`: dicts and sorted indexes in this process; gone when it ends.
* :class:`SqliteBackend`: one SQLite database file. Every call is one transaction, committed
  before it returns (WAL journal, so a crash of the process loses nothing committed); a new
  back end on the same file sees every message with its deadlines, from which the engine
  re-arms the timers.

Order: messages of a queue are kept in insertion order by a sequence number given at the
first insert of an id (an overwrite keeps its place, as in the original). Accounts and queues
list in name order. A queue exists while it holds a message, an account while it has a queue.
Both back ends index the *visible* messages of a queue separately, so a worker's
``limit=1`` read skips the hidden (in-flight) ones without walking them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from sortedcontainers import SortedDict  # type: ignore[import-untyped]  # ships no type hints

from msgqueue.model import Message

__all__ = ["Backend", "MemoryBackend", "SqliteBackend", "open_backend"]


class Backend(Protocol):
    """What the engine needs of storage. Every method is atomic: it completes or changes
    nothing."""

    def put(
        self, account: str, queue: str, id: str, body: str, ttl_at: int | None, hide_at: int | None
    ) -> tuple[Message, bool]:
        """Insert the message, or overwrite the one with that id (body and deadlines; its
        place in the queue stays). Returns the stored message and True if it is new."""
        ...

    def get(self, account: str, queue: str, id: str) -> Message | None:
        """The message with that id, or None."""
        ...

    def scan(
        self, account: str, queue: str, after: str | None, match_hidden: bool, limit: int
    ) -> list[Message]:
        """Messages of the queue in order: those after the message ``after`` (all of them if
        None or unknown), hidden ones only if ``match_hidden``, at most ``limit`` (0: all)."""
        ...

    def save(self, messages: Iterable[Message]) -> None:
        """Store the new deadlines of these (stored) messages."""
        ...

    def delete(self, messages: Iterable[Message]) -> None:
        """Delete these messages (those already gone are ignored)."""
        ...

    def accounts(self) -> list[str]:
        """Accounts holding at least one message, in name order."""
        ...

    def queues(self, account: str) -> list[str]:
        """The account's queues holding at least one message, in name order."""
        ...

    def messages(self) -> Iterator[Message]:
        """Every stored message (the engine re-arms its timers from them)."""
        ...

    def close(self) -> None:
        """Release the storage; the back end is unusable afterwards."""
        ...


class _Queue:
    """One queue of the memory back end: by id, and by sequence (all, and visible only)."""

    __slots__ = ("by_id", "by_seq", "visible")

    def __init__(self) -> None:
        self.by_id: dict[str, Message] = {}
        self.by_seq = SortedDict()
        self.visible = SortedDict()

    def index(self, message: Message) -> None:
        if message.hide_at is None:
            self.visible[message.seq] = message
        else:
            self.visible.pop(message.seq, None)


class MemoryBackend:
    """Messages in memory (see the module docstring)."""

    def __init__(self) -> None:
        self._queues: dict[tuple[str, str], _Queue] = {}
        self._next_seq = 0

    def put(
        self, account: str, queue: str, id: str, body: str, ttl_at: int | None, hide_at: int | None
    ) -> tuple[Message, bool]:
        found = self._queues.get((account, queue))
        if found is None:
            found = self._queues[(account, queue)] = _Queue()
        message = found.by_id.get(id)
        created = message is None
        if message is None:
            message = Message(account, queue, id, body, self._next_seq, ttl_at, hide_at)
            self._next_seq += 1
            found.by_id[id] = message
            found.by_seq[message.seq] = message
        else:
            message.body, message.ttl_at, message.hide_at = body, ttl_at, hide_at
        found.index(message)
        return message, created

    def get(self, account: str, queue: str, id: str) -> Message | None:
        found = self._queues.get((account, queue))
        return None if found is None else found.by_id.get(id)

    def scan(
        self, account: str, queue: str, after: str | None, match_hidden: bool, limit: int
    ) -> list[Message]:
        found = self._queues.get((account, queue))
        if found is None:
            return []
        marker = None if after is None else found.by_id.get(after)
        index = found.by_seq if match_hidden else found.visible
        seqs = index.irange(minimum=None if marker is None else marker.seq, inclusive=(False, True))
        matched: list[Message] = []
        for seq in seqs:
            matched.append(index[seq])
            if len(matched) == limit:
                break
        return matched

    def save(self, messages: Iterable[Message]) -> None:
        for message in messages:
            found = self._queues.get((message.account, message.queue))
            if found is not None and found.by_id.get(message.id) is message:
                found.index(message)

    def delete(self, messages: Iterable[Message]) -> None:
        for message in messages:
            found = self._queues.get((message.account, message.queue))
            if found is None or found.by_id.get(message.id) is not message:
                continue
            del found.by_id[message.id]
            del found.by_seq[message.seq]
            found.visible.pop(message.seq, None)
            if not found.by_id:
                del self._queues[(message.account, message.queue)]

    def accounts(self) -> list[str]:
        return sorted({account for account, _ in self._queues})

    def queues(self, account: str) -> list[str]:
        return sorted(queue for owner, queue in self._queues if owner == account)

    def messages(self) -> Iterator[Message]:
        for found in list(self._queues.values()):
            yield from list(found.by_seq.values())

    def close(self) -> None:
        self._queues.clear()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    account TEXT NOT NULL,
    queue TEXT NOT NULL,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    ttl_at INTEGER,
    hide_at INTEGER,
    PRIMARY KEY (account, queue, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_seq ON messages (account, queue, seq);
CREATE INDEX IF NOT EXISTS visible_by_seq ON messages (account, queue, seq)
    WHERE hide_at IS NULL;
"""

_COLUMNS = "account, queue, id, body, seq, ttl_at, hide_at"


class SqliteBackend:
    """Messages in an SQLite database file (see the module docstring); ``":memory:"`` for a
    throw-away database."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        # isolation_level=None: no implicit transactions; each call runs its own.
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        (last,) = self._db.execute("SELECT MAX(seq) FROM messages").fetchone()
        self._next_seq = 0 if last is None else last + 1

    def put(
        self, account: str, queue: str, id: str, body: str, ttl_at: int | None, hide_at: int | None
    ) -> tuple[Message, bool]:
        db = self._db
        with _transaction(db):
            row = db.execute(
                "SELECT seq FROM messages WHERE account=? AND queue=? AND id=?",
                (account, queue, id),
            ).fetchone()
            if row is None:
                seq = self._next_seq
                db.execute(
                    f"INSERT INTO messages ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (account, queue, id, body, seq, ttl_at, hide_at),
                )
            else:
                (seq,) = row
                db.execute(
                    "UPDATE messages SET body=?, ttl_at=?, hide_at=? "
                    "WHERE account=? AND queue=? AND id=?",
                    (body, ttl_at, hide_at, account, queue, id),
                )
        if row is None:
            self._next_seq += 1
        return Message(account, queue, id, body, seq, ttl_at, hide_at), row is None

    def get(self, account: str, queue: str, id: str) -> Message | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM messages WHERE account=? AND queue=? AND id=?",
            (account, queue, id),
        ).fetchone()
        return None if row is None else Message(*row)

    def scan(
        self, account: str, queue: str, after: str | None, match_hidden: bool, limit: int
    ) -> list[Message]:
        after_seq = -1
        if after is not None:
            row = self._db.execute(
                "SELECT seq FROM messages WHERE account=? AND queue=? AND id=?",
                (account, queue, after),
            ).fetchone()
            if row is not None:
                (after_seq,) = row
        hidden = "" if match_hidden else " AND hide_at IS NULL"
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM messages WHERE account=? AND queue=? AND seq>?{hidden} "
            "ORDER BY seq LIMIT ?",
            (account, queue, after_seq, limit or -1),
        )
        return [Message(*row) for row in rows]

    def save(self, messages: Iterable[Message]) -> None:
        with _transaction(self._db):
            self._db.executemany(
                "UPDATE messages SET ttl_at=?, hide_at=? WHERE account=? AND queue=? AND id=?",
                [(m.ttl_at, m.hide_at, m.account, m.queue, m.id) for m in messages],
            )

    def delete(self, messages: Iterable[Message]) -> None:
        with _transaction(self._db):
            self._db.executemany(
                "DELETE FROM messages WHERE account=? AND queue=? AND id=?",
                [m.key for m in messages],
            )

    def accounts(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT account FROM messages ORDER BY account")
        return [account for (account,) in rows]

    def queues(self, account: str) -> list[str]:
        rows = self._db.execute(
            "SELECT DISTINCT queue FROM messages WHERE account=? ORDER BY queue", (account,)
        )
        return [queue for (queue,) in rows]

    def messages(self) -> Iterator[Message]:
        for row in self._db.execute(f"SELECT {_COLUMNS} FROM messages ORDER BY seq").fetchall():
            yield Message(*row)

    def close(self) -> None:
        self._db.close()


class _transaction:
    """``with _transaction(db):`` one BEGIN ... COMMIT (ROLLBACK if the body raises)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def open_backend(spec: str) -> Backend:
    """The back end ``spec`` names: ``memory``, or ``sqlite:PATH``. Raises ValueError for
    anything else."""
    if spec == "memory":
        return MemoryBackend()
    kind, _, path = spec.partition(":")
    if kind == "sqlite" and path:
        return SqliteBackend(path)
    raise ValueError(f"backend must be 'memory' or 'sqlite:PATH', got {spec!r}")

"""MessageQueue: the engine. Messages in a back end, ttl and hide on a timing wheel, waits in
a purgatory.

Theory of operation. Time is an integer number of milliseconds, read from the clock given to
the engine (a :class:`purgatory.ManualClock` in tests, the event loop's clock anchored at the
epoch in the server) and never from a clock of the engine's own. Every message deadline is a
task on the purgatory's :class:`~purgatory.TimingWheel`: a ttl task deletes the message, a
hide task makes it visible and calls ``check_and_complete((account, queue))``. So a message
expires, and a waiter hears of an unhidden message, at its deadline exactly (the wheel's tick
is 1 ms), where the original swept every second over whole-second deadlines. Whoever drives
the engine calls :meth:`MessageQueue.advance` (a trio reaper does, see
:mod:`msgqueue.server`); every public call first catches the wheel up with the clock, so a
read never sees a message past its ttl however late the driver is.

A multi-message call (:class:`Request`: list, update or delete the messages its filters
match) runs at once; with a wait (:meth:`MessageQueue.execute_waiting`) a call that matches
nothing becomes a :class:`DelayedQueueRequest` watched under ``(account, queue)`` and timed
out after the wait. An insert of a visible message, an update that unhides, and a hide expiry
check that key; each waiter tried runs its request in full inside ``try_complete``, so an
update (get-and-hide) or delete (get-and-delete) is atomic: the first waiter takes the
messages and the next one finds them gone. Each message goes to exactly one consuming waiter.
A waiter that times out ends with nothing (the HTTP front end answers 404).

Rebuilding: creating an engine over a back end that already holds messages (an SQLite file
after a restart) arms a timer for every stored deadline; those already past fire at the first
:meth:`~MessageQueue.advance` or call.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from functools import partial

import attrs

from msgqueue.backend import Backend
from msgqueue.model import (
    ALL,
    DEFAULT_TTL,
    KEEP,
    MS_PER_SECOND,
    Attributes,
    Filters,
    Message,
    check_count,
    check_name,
)
from purgatory import DelayedOperation, DelayedOperationPurgatory, TimerTask

__all__ = ["Action", "DelayedQueueRequest", "MessageQueue", "Request"]


class Action(enum.Enum):
    """What a multi-message request does to the messages its filters match."""

    GET = "get"
    UPDATE = "update"  # set their attributes: with hide, get-and-hide
    DELETE = "delete"  # get-and-delete


@attrs.frozen
class Request:
    """A multi-message call on one queue (names checked with :func:`check_name`)."""

    action: Action
    account: str = attrs.field(validator=lambda _, __, v: check_name("account", v))
    queue: str = attrs.field(validator=lambda _, __, v: check_name("queue", v))
    filters: Filters = attrs.field(factory=Filters)
    attributes: Attributes = attrs.field(factory=Attributes)


class DelayedQueueRequest(DelayedOperation):
    """A request waiting for messages to match, watched under ``(account, queue)``.

    ``try_complete`` runs the whole request; it completes when that matched something, and
    :attr:`messages` holds what it got. Expiry leaves :attr:`messages` empty.
    """

    __slots__ = ("_engine", "messages", "request")

    def __init__(self, timeout: int, engine: MessageQueue, request: Request) -> None:
        super().__init__(timeout)
        self._engine = engine
        self.request = request
        self.messages: list[Message] = []

    def try_complete(self) -> bool:
        found = self._engine._apply(self.request)
        if not found:
            return False
        self.messages = found
        return self.force_complete()

    def on_complete(self) -> None:
        """Nothing to do: the waiting caller reads :attr:`messages`."""


class MessageQueue:
    """The message queue over ``backend`` (see the module docstring).

    ``clock`` reads the current time in milliseconds (None: the wheel's own time, moved only
    by :meth:`advance`); ``start`` is the wheel's initial time (for a clock, at most its
    current reading). Creating it arms the timers of the messages already stored.
    """

    def __init__(
        self, backend: Backend, *, clock: Callable[[], int] | None = None, start: int = 0
    ) -> None:
        self.backend = backend
        self.purgatory: DelayedOperationPurgatory[DelayedQueueRequest] = DelayedOperationPurgatory(
            "queue-wait", clock=clock, start=start
        )
        self._ttl_timers: dict[tuple[str, str, str], TimerTask] = {}
        self._hide_timers: dict[tuple[str, str, str], TimerTask] = {}
        for message in backend.messages():
            self._arm(message)

    @property
    def now(self) -> int:
        """The current time (ms)."""
        return self.purgatory.now

    def advance(self, now: int) -> int:
        """Fire every ttl, hide and wait deadline up to ``now``; return how many fired."""
        return self.purgatory.advance_clock(now)

    def _catch_up(self) -> int:
        """Fire what the clock says is due (a no-op without a clock); return the time."""
        now = self.purgatory.now
        due = self.purgatory.next_deadline()
        if due is not None and due <= now:
            self.purgatory.advance_clock(max(now, self.purgatory.timer.now))
        return now

    # -- one message ------------------------------------------------------------------------

    def create_message(
        self, account: str, queue: str, id: str, body: str, attributes: Attributes = KEEP
    ) -> bool:
        """Insert a message, or overwrite the one with that id; True if it is new. A missing
        ttl is :data:`~msgqueue.model.DEFAULT_TTL`, a missing hide 0 (visible)."""
        _check_names(account, queue, id)
        now = self._catch_up()
        ttl = DEFAULT_TTL if attributes.ttl is None else attributes.ttl
        hide = 0 if attributes.hide is None else attributes.hide
        message, created = self.backend.put(
            account, queue, id, body, _deadline(now, ttl), _deadline(now, hide)
        )
        self._arm(message)
        if message.hide_at is None:
            self.purgatory.check_and_complete((account, queue))
        return created

    def get_message(self, account: str, queue: str, id: str) -> Message | None:
        """The message, hidden or not; None if there is none."""
        _check_names(account, queue, id)
        self._catch_up()
        return self.backend.get(account, queue, id)

    def update_message(
        self, account: str, queue: str, id: str, attributes: Attributes
    ) -> Message | None:
        """Set the given attributes of the message (hidden or not); None if there is none."""
        _check_names(account, queue, id)
        self._catch_up()
        message = self.backend.get(account, queue, id)
        if message is not None:
            self._update([message], attributes)
        return message

    def delete_message(self, account: str, queue: str, id: str) -> Message | None:
        """Delete the message (hidden or not) and return it; None if there is none."""
        _check_names(account, queue, id)
        self._catch_up()
        message = self.backend.get(account, queue, id)
        if message is not None:
            self._delete([message])
        return message

    # -- many messages ----------------------------------------------------------------------

    def execute(self, request: Request) -> list[Message]:
        """Run ``request`` now; the messages it matched (after the update, or as deleted)."""
        self._catch_up()
        return self._apply(request)

    async def execute_waiting(self, request: Request, wait: int) -> list[Message]:
        """Run ``request``; if it matches nothing, wait up to ``wait`` seconds for it to match
        (for trio or asyncio; something must :meth:`advance` the engine, normally a reaper).
        Returns [] if the wait ends empty."""
        check_count("wait", wait)
        self._catch_up()
        operation = DelayedQueueRequest(wait * MS_PER_SECOND, self, request)
        await self.purgatory.wait(operation, [(request.account, request.queue)])
        return operation.messages

    def _apply(self, request: Request) -> list[Message]:
        filters = request.filters
        matched = self.backend.scan(
            request.account, request.queue, filters.marker, filters.match_hidden, filters.limit
        )
        if matched:
            if request.action is Action.UPDATE:
                self._update(matched, request.attributes)
            elif request.action is Action.DELETE:
                self._delete(matched)
        return matched

    def _update(self, messages: list[Message], attributes: Attributes) -> None:
        now = self.purgatory.now
        for message in messages:
            if attributes.ttl is not None:
                message.ttl_at = _deadline(now, attributes.ttl)
            if attributes.hide is not None:
                message.hide_at = _deadline(now, attributes.hide)
        self.backend.save(messages)
        for message in messages:
            self._arm(message)
        if attributes.hide == 0:
            self.purgatory.check_and_complete((messages[0].account, messages[0].queue))

    def _delete(self, messages: list[Message]) -> None:
        self.backend.delete(messages)
        for message in messages:
            _cancel(self._ttl_timers.pop(message.key, None))
            _cancel(self._hide_timers.pop(message.key, None))

    # -- accounts and queues ----------------------------------------------------------------

    def get_accounts(self, filters: Filters = ALL) -> list[str]:
        """Accounts holding messages, in name order, after ``filters.marker``, at most
        ``filters.limit``."""
        self._catch_up()
        return _page(self.backend.accounts(), filters)

    def get_queues(self, account: str, filters: Filters = ALL) -> list[str]:
        """The account's queues holding messages, paged like :meth:`get_accounts`."""
        check_name("account", account)
        self._catch_up()
        return _page(self.backend.queues(account), filters)

    def delete_queues(self, account: str, filters: Filters = ALL) -> list[str]:
        """Delete every message of the account's queues that the filters match (paged like
        :meth:`get_queues`); return those queues."""
        queues = self.get_queues(account, filters)
        for queue in queues:
            self._delete(self.backend.scan(account, queue, None, True, 0))
        return queues

    # -- timers -----------------------------------------------------------------------------

    def _arm(self, message: Message) -> None:
        """(Re-)arm the message's ttl and hide timers from its deadlines."""
        key = message.key
        wheel = self.purgatory.timer
        _cancel(self._ttl_timers.pop(key, None))
        _cancel(self._hide_timers.pop(key, None))
        if message.ttl_at is not None:
            self._ttl_timers[key] = wheel.schedule(message.ttl_at, partial(self._expire, key))
        if message.hide_at is not None:
            self._hide_timers[key] = wheel.schedule(message.hide_at, partial(self._unhide, key))

    def _expire(self, key: tuple[str, str, str]) -> None:
        del self._ttl_timers[key]
        message = self.backend.get(*key)
        if message is not None:
            self._delete([message])

    def _unhide(self, key: tuple[str, str, str]) -> None:
        del self._hide_timers[key]
        message = self.backend.get(*key)
        if message is not None:
            message.hide_at = None
            self.backend.save([message])
            self.purgatory.check_and_complete((message.account, message.queue))


def _deadline(now: int, seconds: int) -> int | None:
    """The absolute deadline ``seconds`` after ``now`` (ms); None for 0 (no deadline)."""
    return None if seconds == 0 else now + seconds * MS_PER_SECOND


def _cancel(task: TimerTask | None) -> None:
    if task is not None:
        task.cancel()


def _check_names(account: str, queue: str, id: str) -> None:
    check_name("account", account)
    check_name("queue", queue)
    check_name("message id", id)


def _page(names: list[str], filters: Filters) -> list[str]:
    """The names after ``filters.marker`` (in order), at most ``filters.limit`` of them."""
    if filters.marker is not None:
        names = [name for name in names if name > filters.marker]
    return names[: filters.limit] if filters.limit else names

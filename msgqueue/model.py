"""The message queue's data types: messages, filters, attributes, and their validation.

A message lives in a queue of an account and is named by an id unique within that queue. Its
attributes are two optional deadlines in the queue's time units (milliseconds): ``ttl_at``,
when it ceases to exist, and ``hide_at``, until when it is hidden from listings. Clients give
both as whole seconds *relative* to now (``ttl=0`` never expires, ``hide=0`` is visible, as in
the original); :class:`Attributes` carries them in that form, and the engine turns them into
deadlines. Reads report the seconds left, rounded up, so a message hidden for another 0.2 s
still reads ``hide=1``, never 0 (visible).

:class:`Filters` select messages (or queues, or accounts) on every multi-object call:
``limit`` (0 = no limit, as in the original), ``marker`` (only names after it), ``match_hidden``
and ``detail``. :class:`Detail` says what a caller gets back of each object.

Bad values raise :class:`InvalidArgumentError` (a ValueError) with one line saying what was
wrong and what is allowed; the HTTP front end answers it with 400 and that line.
"""

from __future__ import annotations

import enum

import attrs

__all__ = [
    "ALL",
    "DEFAULT_TTL",
    "KEEP",
    "MAX_NAME_LENGTH",
    "MAX_SECONDS",
    "MS_PER_SECOND",
    "Attributes",
    "Detail",
    "Filters",
    "InvalidArgumentError",
    "Message",
    "QueueError",
    "check_count",
    "check_name",
    "seconds_left",
]

DEFAULT_TTL = 600
"""Seconds a message lives when its insert gives no ``ttl`` (the original's default)."""

MAX_SECONDS = 2**31 - 1
"""The largest ``ttl``, ``hide``, ``wait`` or ``limit`` accepted (about 68 years in seconds):
deadlines in milliseconds then fit SQLite's 64-bit integers with room to spare."""

MAX_NAME_LENGTH = 255
"""The longest account, queue or message name, in characters."""

MS_PER_SECOND = 1000
"""The queue's time unit is the millisecond; clients speak whole seconds."""


class QueueError(Exception):
    """Base class of the errors the message queue raises on purpose."""


class InvalidArgumentError(QueueError, ValueError):
    """A filter, attribute or name is not allowed; the message is one line saying why."""


class Detail(enum.Enum):
    """What a read returns of each object: nothing, its id, its attributes (id, ttl, hide),
    its body alone, or all of it."""

    NONE = "none"
    ID = "id"
    ATTRIBUTES = "attributes"
    BODY = "body"
    ALL = "all"

    @classmethod
    def parse(cls, text: str) -> Detail:
        """The detail named ``text``; raises InvalidArgumentError for any other word."""
        try:
            return cls(text)
        except ValueError:
            allowed = ", ".join(detail.value for detail in cls)
            raise InvalidArgumentError(f"detail must be one of {allowed}, got {text!r}") from None


def check_count(name: str, value: object) -> int:
    """``value`` if it is an int from 0 to :data:`MAX_SECONDS`; else InvalidArgumentError."""
    if type(value) is not int or not 0 <= value <= MAX_SECONDS:
        raise InvalidArgumentError(
            f"{name} must be an integer from 0 to {MAX_SECONDS}, got {value!r}"
        )
    return value


def check_name(kind: str, name: object) -> str:
    """``name`` if it is a usable account, queue or message name: a non-empty str of at most
    :data:`MAX_NAME_LENGTH` printable characters without ``/``; else InvalidArgumentError."""
    if (
        not isinstance(name, str)
        or not 0 < len(name) <= MAX_NAME_LENGTH
        or "/" in name
        or not name.isprintable()
    ):
        raise InvalidArgumentError(
            f"{kind} must be 1 to {MAX_NAME_LENGTH} printable characters without '/', got {name!r}"
        )
    return name


@attrs.frozen
class Filters:
    """Which objects a multi-object call matches, and what it returns of each.

    ``limit``: at most this many (0: all). ``marker``: only names after this one (messages in
    queue order; an unknown marker matches from the start, as in the original; accounts and
    queues in name order). ``match_hidden``: include hidden messages. ``detail``: None for the
    call's own default.
    """

    limit: int = attrs.field(default=0, validator=lambda _, __, v: check_count("limit", v))
    marker: str | None = None
    match_hidden: bool = False
    detail: Detail | None = None


@attrs.frozen
class Attributes:
    """Relative attributes in whole seconds; None leaves the attribute as it is (on an
    update) or takes the default (on an insert: ttl 600, hide 0)."""

    ttl: int | None = attrs.field(
        default=None, validator=lambda _, __, v: v is None or check_count("ttl", v)
    )
    hide: int | None = attrs.field(
        default=None, validator=lambda _, __, v: v is None or check_count("hide", v)
    )


ALL = Filters()
"""Filters matching everything (no limit, no marker, hidden messages left out)."""

KEEP = Attributes()
"""Attributes that change nothing (on an insert: the defaults)."""


@attrs.define(eq=False)
class Message:
    """One stored message. ``seq`` orders a queue (set at the first insert, kept when the id
    is overwritten); ``ttl_at`` and ``hide_at`` are absolute deadlines in milliseconds (None:
    never expires / visible)."""

    account: str
    queue: str
    id: str
    body: str
    seq: int
    ttl_at: int | None = None
    hide_at: int | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """(account, queue, id): the message's unique name."""
        return (self.account, self.queue, self.id)

    def view(self, detail: Detail, now: int) -> object:
        """What a reader gets of this message for ``detail`` at time ``now`` (ms): None, its
        id, its body, or a JSON-ready dict with ttl and hide in seconds left (0: none)."""
        if detail is Detail.NONE:
            return None
        if detail is Detail.BODY:
            return self.body
        if detail is Detail.ID:
            return self.id
        view: dict[str, object] = {
            "id": self.id,
            "ttl": seconds_left(self.ttl_at, now),
            "hide": seconds_left(self.hide_at, now),
        }
        if detail is Detail.ALL:
            view["body"] = self.body
        return view


def seconds_left(deadline: int | None, now: int) -> int:
    """Whole seconds from ``now`` to ``deadline`` (ms), rounded up; 0 for no deadline."""
    if deadline is None:
        return 0
    return max(0, -(-(deadline - now) // MS_PER_SECOND))

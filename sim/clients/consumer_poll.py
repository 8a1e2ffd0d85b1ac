"""The hand-over from fetcher to application: held records and the application's ``poll()``.

Fetched records are *held* until the application polls (Java's poll loop): :meth:`Poller.poll`
hands over every held record at once (columns: :class:`ConsumerRecords`), moves the consumed
positions past them, reports them in one ``MessagesDelivered`` and, with a group, enters them
in the commit ledger (which reports them committed later). While records are held the fetcher
sends nothing, so one round of fetches is pipelined with the application's processing, as
Java's consumer does.

When records arrive, or a block is lifted, the poll happens at once if the application is
waiting in ``poll()``: it is not busy (``app_busy``) and no blocking sync commit is
outstanding. A busy application polls by itself when done.

A sync commit made from the application's thread blocks delivery (:meth:`Poller.block_until`):
no poll, and so no fetch, until it completes. Blocks nest; delivery resumes when the last one
is lifted.

After every poll the fetch loop gets a chance to run (``fetch_more``).

Group membership acts inside ``poll()``, as in Kafka: :meth:`Poller.run_in_poll` runs an
action (a rebalance's revocation) at once if the application waits in ``poll()``, else at the
start of its next poll, before any record is handed over; :meth:`Poller.drop_held` discards
the held records of revoked partitions.
"""

from __future__ import annotations

from collections.abc import Callable

from replica.errors import Errors
from sim.clients.consumer_commits import CommitCallback
from sim.clients.consumer_config import ConsumerConfig
from sim.clients.consumer_fetcher import ConsumerRecords
from sim.clients.consumer_positions import Positions
from sim.clients.events import ClientRecorder, MessagesDelivered
from sim.clients.ledger import CommitLedger
from sim.core.engine import Scheduler

__all__ = ["Poller"]


class Poller:
    """Records fetched, not yet polled, and the poll that hands them over (see the module
    doc)."""

    __slots__ = (
        "_app_busy",
        "_at_poll",
        "_blocks",
        "_client_id",
        "_config",
        "_fetch_more",
        "_hand_over",
        "_held",
        "_ledger",
        "_positions",
        "_recorder",
        "_scheduler",
        "_stopped",
    )

    def __init__(
        self,
        scheduler: Scheduler,
        config: ConsumerConfig,
        positions: Positions,
        ledger: CommitLedger,
        recorder: ClientRecorder,
        client_id: str,
        *,
        stopped: Callable[[], bool],
        app_busy: Callable[[], bool],
        hand_over: Callable[[ConsumerRecords], None],
        fetch_more: Callable[[], None],
    ) -> None:
        self._scheduler = scheduler
        self._config = config
        self._positions = positions
        self._ledger = ledger
        self._recorder = recorder
        self._client_id = client_id
        self._stopped = stopped
        self._app_busy = app_busy
        self._hand_over = hand_over
        self._fetch_more = fetch_more
        self._held = ConsumerRecords()
        self._blocks = 0  # blocking sync commits outstanding
        self._at_poll: Callable[[], None] | None = None  # to run at the application's next poll

    @property
    def wants_records(self) -> bool:
        """True if a fetch may be sent: nothing is held and delivery is not blocked."""
        return not self._blocks and not self._held.offsets

    @property
    def app_in_poll(self) -> bool:
        """True while the application waits in ``poll()``: not busy, not blocked."""
        return not self._app_busy() and not self._blocks

    def deliver(self, records: ConsumerRecords) -> None:
        """A fetch returned ``records``: hold them, and poll if the application waits."""
        if self._held.offsets:
            self._held.extend(records)
        else:
            self._held = records
        if self.app_in_poll:
            self.poll()

    def poll(self) -> None:
        """The application's ``poll()``: hand over every held record, then fetch more. Records
        held when the consumer has stopped are dropped."""
        action, self._at_poll = self._at_poll, None
        if action is not None:
            action()
            if not self.app_in_poll:  # the action blocked delivery (a commit)
                return
        records, self._held = self._held, ConsumerRecords()
        if records.offsets and not self._stopped():
            tps, offsets, message_ids = records.tps, records.offsets, records.message_ids
            positions, ledger = self._positions, self._ledger
            in_group = self._config.group_id is not None
            for tp, lo, hi in records.spans:  # each in offset order: the last one counts
                positions.polled(tp, offsets[hi - 1])
                if in_group:
                    ledger.delivered(tp, offsets[lo:hi], message_ids[lo:hi])
            self._recorder.record(
                MessagesDelivered(self._scheduler.now, self._client_id, tps, offsets, message_ids)
            )
            self._hand_over(records)
        self._fetch_more()

    def run_in_poll(self, action: Callable[[], None]) -> None:
        """Run ``action`` now if the application waits in ``poll()``, else at the start of its
        next poll (one action at a time)."""
        if self.app_in_poll:
            action()
        else:
            self._at_poll = action

    def drop_held(self) -> None:
        """Discard the records held for the application (their partitions were revoked)."""
        self._held = ConsumerRecords()

    def block_until(self, on_done: CommitCallback | None) -> CommitCallback:
        """Block delivery until the returned callback (which calls ``on_done``) is called."""
        self._blocks += 1

        def unblock(error: Errors) -> None:
            self._blocks -= 1
            if on_done is not None:
                on_done(error)
            if self.app_in_poll and not self._stopped():
                self.poll()

        return unblock

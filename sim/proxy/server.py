"""One consume-proxy server in the simulated cluster: the real core, fed by the real adapter.

A :class:`ProxyServer` is a node of the simulated network (``proxy-<i>``) running
:class:`consume_proxy.ConsumeProxy` fed by :class:`consume_proxy.cluster_feed.ClusterFeed`,
unchanged: the feed talks to the brokers through a :class:`cluster.Client` on the world's
cluster, so its fetches, state-log produces (acks=all) and OffsetCommits cross the simulated
network and the brokers' request handler pools like any client's, and the proxy reads the
brokers' clock (the engine's time in whole milliseconds). What this module adds is what the
feed leaves to its driver, "whoever moves the cluster's clock or sends it requests calls
poll() afterwards":

* **polls**: the client's response hook schedules one :meth:`ClusterFeed.poll
  <consume_proxy.cluster_feed.ClusterFeed.poll>` at the current time after each response to
  the feed's requests (answered fetches are appended, waiting reads complete, log entries
  are produced, the next commit goes out), and so does every request a reader makes (its log
  entries and commits);
* **time**: one engine event at the proxy's next deadline (a lease or a read timing out,
  :meth:`ConsumeProxy.next_deadline <consume_proxy.ConsumeProxy.next_deadline>`), which polls
  the feed (moving the proxy to the cluster's time), re-armed after every poll and request;
* **the readers' requests**: Read, Acknowledge and Cancel arrive over the network
  (:mod:`sim.proxy.connection`) and call the core at once, its clock moved to the present
  first, as the HTTP front end does;
* **measurements**, reported to the run's recorders: each hand-out, accepted acknowledgement
  and cancel, archived record, and each data-topic commit the OffsetCommit's answer confirms
  (by message id: :mod:`sim.proxy.message_ids` reads them off the data fetches).

Partitions are assigned when the server is built, while the world is still setting up the
cluster (requests answered at once), because ``ClusterFeed.assign`` needs the group's
committed offsets at once; the server then catches up on its (empty) state-log partitions and
serves. The assignment is static for the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from apis.fetch import FetchResponse
from apis.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from apis.request_channel import ResponseBody
from cluster import Client, Cluster
from consume_proxy import ConsumeProxy, InvalidRecordStateError, Record
from consume_proxy.cluster_feed import ClusterFeed
from replica.errors import Errors
from replica.types import TopicPartition
from sim.core.engine import Event, Simulator
from sim.core.network import Network
from sim.output import MetricsRecorder
from sim.output.proxy_recorder import ProxyRecorder
from sim.proxy.connection import Answer, Delivery
from sim.proxy.message_ids import MessageIds
from sim.scenario import ProxySection

__all__ = ["ProxyServer"]

_US_PER_MS = 1000


class ProxyServer:
    """Consume-proxy server ``name`` serving ``partitions`` of the data topic (see the module
    docstring). Build it while the world's transport is in setup mode."""

    __slots__ = (
        "_ids",
        "_poll_event",
        "_proxy_events",
        "_recorder",
        "_sim",
        "_timer",
        "feed",
        "name",
        "proxy",
        "reads_waiting",
    )

    def __init__(
        self,
        sim: Simulator,
        network: Network,
        cluster: Cluster,
        name: str,
        section: ProxySection,
        partitions: Sequence[TopicPartition],
        recorder: MetricsRecorder,
        proxy_events: ProxyRecorder,
    ) -> None:
        network.add_node(name, "client")
        self._sim = sim
        self._recorder = recorder
        self._proxy_events = proxy_events
        self._ids = MessageIds()
        self._poll_event: Event | None = None
        self._timer: Event | None = None
        self.name = name
        self.reads_waiting = 0  # Reads received and not answered yet
        self.proxy = ConsumeProxy(
            lease_duration=section.lease_duration_ms,
            delivery_count_limit=section.delivery_count_limit,
            dead_letter=self._archived,
            start=cluster.clock.now,
        )
        client = Client(cluster, name, on_response=self._on_response)
        self.feed = ClusterFeed(
            self.proxy, client, section.group_id, max_wait_ms=section.fetch_max_wait_ms
        )
        for tp in partitions:
            self._ids.assign(tp, self.feed.assign(tp))
        self._poll()

    # -- the readers' requests ------------------------------------------------------------------

    def read(self, timeout_ms: int, reply: Callable[[Delivery | None], None]) -> None:
        """Read(timeout): ``reply`` gets the next record handed out, or None at the timeout."""
        self._present()
        self.reads_waiting += 1
        self.proxy.read(timeout_ms, lambda record: reply(self._handed_out(record)))
        self._after_request()

    def acknowledge(self, delivery: Delivery, reply: Callable[[Answer], None]) -> None:
        """Acknowledge ``delivery``; ``reply`` gets ACCEPTED, or ENDED if it had ended."""
        self._end_delivery(self.proxy.acknowledge, self._proxy_events.acknowledged, delivery, reply)

    def cancel(self, delivery: Delivery, reply: Callable[[Answer], None]) -> None:
        """Cancel ``delivery`` (the record is available again at once, or archived at the
        delivery-count limit); ``reply`` gets ACCEPTED, or ENDED if it had ended."""
        self._end_delivery(self.proxy.cancel, self._proxy_events.cancelled, delivery, reply)

    def _end_delivery(
        self,
        request: Callable[[TopicPartition, int, int], None],
        accepted: Callable[[int, int], None],
        delivery: Delivery,
        reply: Callable[[Answer], None],
    ) -> None:
        """``request`` (the core's acknowledge or cancel) for ``delivery``, pinned to its
        delivery count; ``accepted`` records it unless the core refused (the delivery had
        ended: its lease expired)."""
        self._present()
        try:
            request(delivery.tp, delivery.offset, delivery.delivery)
        except InvalidRecordStateError:
            reply(Answer.ENDED)
        else:
            accepted(delivery.message_id, self._sim.now)
            reply(Answer.ACCEPTED)
        self._after_request()

    # -- the end of the run ---------------------------------------------------------------------

    def report_final_states(self) -> None:
        """Report each served partition's commit position, fetched end and record states."""
        for tp in self.proxy.served:
            partition = self.proxy.partition(tp)
            start, end = partition.start_offset, partition.end_offset
            states = [partition.state(offset).value for offset in range(start, end)]
            self._proxy_events.final_states(tp.partition, start, end, states)

    # -- driving the feed -----------------------------------------------------------------------

    def _present(self) -> None:
        """Move the proxy to the cluster's time (expiring what is due) before a request."""
        self.proxy.advance(self.feed.client.cluster.clock.now)

    def _after_request(self) -> None:
        self._poll_soon()
        self._arm()

    def _on_response(self, body: ResponseBody) -> None:
        """A response to one of the feed's requests arrived (its Call holds it already)."""
        if isinstance(body, FetchResponse):
            for tp, data in body.responses.items():
                if data.error is Errors.NONE:
                    self._ids.fetched(tp, data)
        elif isinstance(body, OffsetCommitResponse):
            self._commit_answered(body)
        self._poll_soon()

    def _commit_answered(self, body: OffsetCommitResponse) -> None:
        """The feed's OffsetCommit was answered: the data positions committed without error
        pass their messages (one commit is in flight at a time: the feed's last)."""
        commits = self.feed.commits
        call = commits[-1]
        if call.response is not body:
            return
        request = call.request.body
        assert isinstance(request, OffsetCommitRequest)
        for tp, error in body.errors.items():
            if error is Errors.NONE:
                position = request.offsets[tp].committed_offset
                ids = self._ids.committed(tp, position)
                if ids:
                    self._recorder.messages_committed(ids, self._sim.now)
                    self._proxy_events.committed(ids, self._sim.now)
        # The feed keeps every call in this list for its tests to read; a long run keeps
        # only the last (the one in flight), so the list does not grow with the run.
        del commits[:-1]

    def _poll_soon(self) -> None:
        """Poll the feed at the current time (once, however many calls ask for it)."""
        event = self._poll_event
        if event is None or not event.pending:
            self._poll_event = self._sim.call_later(0, self._poll)

    def _poll(self) -> None:
        self._poll_event = None
        self.feed.poll()
        self._arm()

    def _arm(self) -> None:
        """Keep one engine event at the proxy's next deadline (a lease, a read's timeout)."""
        deadline = self.proxy.next_deadline()
        if deadline is None:
            return
        at = max(deadline * _US_PER_MS, self._sim.now)
        timer = self._timer
        if timer is not None and timer.pending:
            if timer.time <= at:
                return
            timer.cancel()
        self._timer = self._sim.call_at(at, self._poll)

    # -- measurements ---------------------------------------------------------------------------

    def _handed_out(self, record: Record | None) -> Delivery | None:
        self.reads_waiting -= 1
        if record is None:
            return None
        tp = TopicPartition(record.topic, record.partition)
        message_id = self._ids.message_id(tp, record.offset)
        self._proxy_events.handed_out(message_id, self._sim.now)
        return Delivery(tp, record.offset, record.delivery_count, message_id)

    def _archived(self, record: Record) -> None:
        tp = TopicPartition(record.topic, record.partition)
        self._proxy_events.archived(self._ids.message_id(tp, record.offset), self._sim.now)

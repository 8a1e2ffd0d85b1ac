"""The client in process, with the engine driven by a trio reaper on trio's MockClock:
virtual time, so the exact moment a waiter wakes can be asserted (no wall clock)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from msgqueue import MemoryBackend, MessageQueue
from msgqueue.client import Client, InvalidRequestError, MessageNotFoundError
from msgqueue.http import Frontend
from purgatory.trio_reaper import open_trio_reaper, trio_clock


async def test_a_hide_expiry_wakes_a_long_poll_within_a_tick(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    engine = MessageQueue(MemoryBackend(), clock=clock, start=clock())
    client = Client.in_process(Frontend(engine))
    async with open_trio_reaper(engine.purgatory, clock):
        await trio.sleep(0.3337)  # off the whole second, where a 1 s sweep would land
        await client.create_message("acct", "q", "m", "x", hide=3)
        hidden_at = trio.current_time()
        got = await client.update_messages("acct", "q", limit=1, hide=60, wait=10, detail="id")
        woke = trio.current_time() - hidden_at
    assert got == ["m"]
    # The hide deadline, within the 1 ms tick (times are read in whole milliseconds).
    assert woke == pytest.approx(3.0, abs=0.001)


async def test_ttl_expiry_and_a_wait_ending_empty_are_on_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = trio_clock()
    engine = MessageQueue(MemoryBackend(), clock=clock, start=clock())
    client = Client.in_process(Frontend(engine))
    async with open_trio_reaper(engine.purgatory, clock):
        await client.create_message("acct", "q", "m", "x", ttl=2)
        start = trio.current_time()
        await trio.sleep(1.999)
        assert await client.get_message("acct", "q", "m", detail="id") == "m"
        await trio.sleep(0.001)
        with pytest.raises(MessageNotFoundError):
            await client.get_message("acct", "q", "m")
        assert engine.purgatory.num_delayed == 0  # the ttl timer fired: nothing left behind
        assert await client.get_messages("acct", "q", wait=5) == []
        assert trio.current_time() - start == pytest.approx(7.0, abs=0.001)


async def test_the_client_raises_for_refused_requests() -> None:
    engine = MessageQueue(MemoryBackend())
    client = Client.in_process(Frontend(engine))
    with pytest.raises(InvalidRequestError) as refused:
        await client.create_message("acct", "q", "m", "x", ttl=-1)
    assert refused.value.status == 400 and "ttl" in refused.value.reason
    with pytest.raises(InvalidRequestError):
        await client.get_messages("acct", "q", detail="everything")
    assert await client.get_accounts() == []
    assert await client.create_message("acct", "q?1 %", "m#1", "x")  # names are quoted
    assert await client.get_queues("acct") == ["q?1 %"]
    assert await client.get_message("acct", "q?1 %", "m#1", detail="body") == "x"
    with pytest.raises(InvalidRequestError):
        await client.create_message("acct", "q/1", "m", "x")  # no '/' in names

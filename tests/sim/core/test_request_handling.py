"""The broker request-handling model: FIFO queue, handler pool, queueing-time measurement.

The statistical tests compare the pool, fed Poisson arrivals with exponential local times,
with the closed forms of M/M/1 and M/M/c queues (validation.md): the closed-form mean wait
must lie in a 99% confidence interval built from independent replications.
"""

from __future__ import annotations

import math
import statistics

import pytest

from sim.core.engine import Simulator
from sim.core.request_handling import RequestHandlerPool, local_time_sampler
from sim.scenario import Constant, Exponential


def _pool(
    sim: Simulator, threads: int, local_time: int, log: list[tuple[str, int, int]], bound: int = 500
) -> RequestHandlerPool[str]:
    return RequestHandlerPool(
        sim,
        num_io_threads=threads,
        queued_max_requests=bound,
        local_time=local_time_sampler(Constant(value=local_time), sim.rng("service")),
        handler=lambda request, queue_time: log.append((request, sim.now, queue_time)),
    )


def test_one_thread_serves_in_arrival_order_and_measures_queue_time() -> None:
    sim = Simulator(0)
    log: list[tuple[str, int, int]] = []
    pool = _pool(sim, 1, 10, log)
    for name in "abc":
        pool.submit(name)
    assert pool.busy_threads == 1 and pool.queue_size == 2
    sim.run()
    assert log == [("a", 10, 0), ("b", 20, 10), ("c", 30, 20)]
    assert pool.stats.mean_queue_time == 10
    assert pool.stats.queue_time_max == 20


def test_threads_serve_concurrently() -> None:
    sim = Simulator(0)
    log: list[tuple[str, int, int]] = []
    pool = _pool(sim, 3, 10, log)
    for name in "abcde":
        pool.submit(name)
    sim.run()
    assert [(name, done) for name, done, _ in log] == [
        ("a", 10), ("b", 10), ("c", 10), ("d", 20), ("e", 20)
    ]  # fmt: skip
    assert pool.stats.handled == 5 and pool.busy_threads == 0


def test_a_full_queue_counts_blocked_arrivals_but_loses_nothing() -> None:
    sim = Simulator(0)
    log: list[tuple[str, int, int]] = []
    pool = _pool(sim, 1, 10, log, bound=2)
    for name in "abcde":
        pool.submit(name)
    assert pool.stats.blocked_arrivals == 2  # d and e found two requests waiting
    sim.run()
    assert [name for name, _, _ in log] == list("abcde")


def test_drop_all_forgets_queued_and_in_service_requests() -> None:
    sim = Simulator(0)
    log: list[tuple[str, int, int]] = []
    pool = _pool(sim, 2, 10, log)
    for name in "abcd":
        pool.submit(name)
    sim.run_until(5)
    assert pool.drop_all() == ["a", "b", "c", "d"]
    sim.run()
    assert log == []
    pool.submit("e")
    sim.run()
    assert log == [("e", 15, 0)]


def test_bad_pool_arguments_are_refused() -> None:
    sim = Simulator(0)
    with pytest.raises(ValueError, match="num_io_threads must be >= 1"):
        _pool(sim, 0, 1, [])
    with pytest.raises(ValueError, match="queued_max_requests must be >= 1"):
        _pool(sim, 1, 1, [], bound=0)


# -- queueing theory ------------------------------------------------------------------------


def _erlang_c_wait(servers: int, arrival_rate: float, service_rate: float) -> float:
    """Mean wait in queue of an M/M/c queue (validation.md)."""
    a = arrival_rate / service_rate
    rho = a / servers
    top = a**servers / math.factorial(servers) / (1 - rho)
    waiting = top / (sum(a**k / math.factorial(k) for k in range(servers)) + top)
    return waiting / (servers * service_rate - arrival_rate)


def _replication(
    seed: int, servers: int, mean_gap: int, mean_service: int, customers: int, warmup: int
) -> tuple[float, RequestHandlerPool[int]]:
    """Mean queueing time of customers after ``warmup``, and the drained pool."""
    sim = Simulator(seed)
    waits: list[int] = []
    pool: RequestHandlerPool[int] = RequestHandlerPool(
        sim,
        num_io_threads=servers,
        queued_max_requests=10**9,
        local_time=local_time_sampler(Exponential(mean=mean_service), sim.rng("service")),
        handler=lambda number, queue_time: waits.append(queue_time) if number >= warmup else None,
    )
    arrivals = sim.rng("arrivals")
    gaps = Exponential(mean=mean_gap)
    count = 0

    def arrive() -> None:
        nonlocal count
        pool.submit(count)
        count += 1
        if count < customers:
            sim.call_later(gaps.sample(arrivals), arrive)

    sim.call_at(0, arrive)
    sim.run()
    pool.account()
    return statistics.fmean(waits), pool


T_99_29 = 2.756  # Student t, 0.995 quantile, 29 degrees of freedom


@pytest.mark.parametrize(
    ("servers", "mean_gap", "mean_service"),
    [(1, 100, 60), (3, 100, 240)],  # M/M/1 at rho 0.6; M/M/3 at rho 0.8
)
def test_mean_queueing_time_matches_the_closed_form(
    servers: int, mean_gap: int, mean_service: int
) -> None:
    means = [
        _replication(seed, servers, mean_gap, mean_service, customers=4000, warmup=400)[0]
        for seed in range(30)
    ]
    expected = _erlang_c_wait(servers, 1 / mean_gap, 1 / mean_service)
    centre = statistics.fmean(means)
    half_width = T_99_29 * statistics.stdev(means) / math.sqrt(len(means))
    assert half_width < 0.2 * expected  # the check has teeth
    assert centre - half_width <= expected <= centre + half_width


def test_littles_law_holds_exactly_on_a_drained_sample_path() -> None:
    # Integral of the number waiting == sum of the waits, once every request has left.
    _, pool = _replication(4, 2, 100, 180, customers=3000, warmup=0)
    assert pool.stats.started == 3000
    assert pool.stats.queue_length_area == pool.stats.queue_time_total
    assert pool.stats.queue_time_total > 0

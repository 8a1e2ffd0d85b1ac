"""Smoke tests of the benchmarks (``python -m purgatory.bench``) on tiny sizes.

They check that every benchmark runs, that its JSON lines carry the documented fields, and that
the numbers agree with each other and with the stream that produced them. They never assert on
timings.
"""

from __future__ import annotations

import json
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from purgatory import DelayedOperation, TimingWheel
from purgatory.bench.__main__ import main
from purgatory.bench.baselines import HeapqTimer, NaivePurgatory, SortedListTimer
from purgatory.bench.purgatory_workload import (
    MeteredPurgatory,
    WorkloadConfig,
    drive,
    generate_requests,
)
from purgatory.bench.timer import STRUCTURES, TimerHandle, TimerStructure
from purgatory.bench.timer_stream import FIRES, TimerStream, TimerStreamConfig
from tests.builds import compiled

TIMER_FIELDS = {
    "bench": str,
    "structure": str,
    "live": int,
    "ns_per_timer": float,
    "bytes_per_timer": float,
    "gc_ns_per_timer": float,
    "live_measured": int,
    "fired": int,
}
PURGATORY_FIELDS = {
    "bench": str,
    "impl": str,
    "requests": int,
    "cpu_s": float,
    "requests_per_cpu_s": float,
    "completed": int,
    "expired": int,
    "peak_watched": int,
    "peak_live": int,
}


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, object]]:
    assert main([*argv, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def check_fields(record: dict[str, object], fields: dict[str, type]) -> None:
    for name, kind in fields.items():
        assert isinstance(record[name], kind), (name, record[name])


# -- the timer benchmark ----------------------------------------------------------------------


def test_timer_bench_json(capsys: pytest.CaptureFixture[str]) -> None:
    sizes = [500, 1500]
    argv = ["timer", "--live", "500,1500", "--per-tick", "10", "--window-timers", "2000"]
    records = run_json(capsys, [*argv, "--repeat", "2"])
    *results, summary = records
    assert [(r["live"], r["structure"]) for r in results] == [
        (live, name) for live in sizes for name in STRUCTURES
    ]
    for record in results:
        check_fields(record, TIMER_FIELDS)
        assert record["bench"] == "timer"
        assert 0 < record["gc_ns_per_timer"] <= record["ns_per_timer"] or (  # type: ignore[operator]
            record["gc_ns_per_timer"] == 0
        )
        assert record["ns_min"] <= record["ns_per_timer"]  # type: ignore[operator]
        assert record["bytes_per_timer"] > 0  # type: ignore[operator]
        # The stream keeps about `live` timers outstanding; the memory point measures them.
        assert 0.6 * record["live"] < record["live_measured"] < 1.4 * record["live"]  # type: ignore[operator]
    for live in sizes:
        same_size = [r for r in results if r["live"] == live]
        # Every structure replays the same stream: the same timers fire, the same are live.
        assert len({r["fired"] for r in same_size}) == 1
        assert len({r["live_measured"] for r in same_size}) == 1
        heap = next(r for r in same_size if r["structure"] == "heapq")
        assert heap["ns_vs_heapq"] == 1.0
    assert summary["bench"] == "timer"
    targets = summary["targets"]
    assert isinstance(targets, list)
    # Only the bytes target applies to these sizes (the others need 1e4 and 1e6 live).
    assert [t["name"] for t in targets] == [
        "wheel bytes per live timer at 500",
        "wheel bytes per live timer at 1,500",
    ]


def test_timer_bench_table_and_no_memory(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["timer", "--live", "300", "--per-tick", "10", "--window-timers", "500"]
    assert main([*argv, "--repeat", "1", "--no-memory", "--structures", "wheel,heapq"]) == 0
    out = capsys.readouterr().out
    assert "ns/timer" in out and "vs heapq" in out
    assert out.count("wheel") >= 1 and "sortedlist" not in out
    records = run_json(capsys, [*argv, "--repeat", "1", "--no-memory"])
    assert all(r["bytes_per_timer"] is None for r in records[:-1])


def test_timer_stream_is_deterministic_and_a_prefix() -> None:
    config = TimerStreamConfig(live=400, per_tick=5, seed=7)
    longer = list(TimerStream(config, 300).chunks(100))
    again = list(TimerStream(config, 300).chunks(100))
    shorter = list(TimerStream(config, 200).chunks(100))
    assert longer == again
    for short, long in zip(shorter, longer, strict=False):
        assert short.times == long.times and short.delays == long.delays
    other = list(TimerStream(TimerStreamConfig(live=400, per_tick=5, seed=8), 300).chunks(100))
    assert other != longer


def test_timer_stream_cancels_before_the_deadline() -> None:
    config = TimerStreamConfig(live=2000, per_tick=20, jump_probability=0.05, max_jump=50)
    stream = TimerStream(config, 400)
    cancelled = total = 0
    for chunk in stream.chunks(64):
        position = 0
        for offset, count in enumerate(chunk.counts):
            step = chunk.first_step + offset
            now = stream.times[step]
            for _ in range(count):
                delay = chunk.delays[position]
                cancel_step = chunk.cancel_steps[position]
                position += 1
                total += 1
                assert 1 <= delay <= config.max_timeout
                if cancel_step != FIRES:
                    cancelled += 1
                    assert cancel_step > step
                    if cancel_step < stream.total_steps:
                        assert stream.times[cancel_step] < now + delay
    assert 0.8 < cancelled / total < 0.92  # 90% cancelled, minus those an idle jump expires


def test_timer_bench_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["timer", "--live", "0"]) == 2
    assert "live must be positive, got 0" in capsys.readouterr().err
    assert main(["timer", "--structures", "wheel,btree"]) == 2
    assert "unknown structures ['btree']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["timer", "--live", "ten"])


# -- the baseline timers behave like the wheel -------------------------------------------------

Operation = tuple[str, int]


def replay(structure: TimerStructure, operations: list[Operation]) -> list[object]:
    """Apply the operations; record what each cancel and advance returned and what fired."""
    fired: list[int] = []
    handles: list[TimerHandle] = []
    trace: list[object] = []
    now = 0
    for kind, value in operations:
        if kind == "schedule":
            number = len(handles)
            handles.append(structure.schedule(now + value, partial(fired.append, number)))
        elif kind == "cancel" and handles:
            trace.append(handles[value % len(handles)].cancel())
        elif kind == "advance":
            now += value
            trace.append(structure.advance(now))
            trace.append(list(fired))
            fired.clear()
    return trace


@settings(max_examples=60)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("schedule"), st.integers(0, 300)),
            st.tuples(st.just("cancel"), st.integers(0, 50)),
            st.tuples(st.just("advance"), st.integers(0, 80)),
        ),
        max_size=60,
    )
)
def test_baseline_timers_fire_like_the_wheel(operations: list[Operation]) -> None:
    expected = replay(TimingWheel(), operations)
    assert replay(HeapqTimer(), operations) == expected
    assert replay(SortedListTimer(), operations) == expected


# -- the purgatory benchmark ------------------------------------------------------------------


def test_purgatory_bench_json(capsys: pytest.CaptureFixture[str]) -> None:
    records = run_json(capsys, ["purgatory", "--num", "3000", "--repeat", "2", "--seed", "3"])
    # The compiled build adds one line: the pure-Python figure beside its own.
    assert len([record for record in records if "build" in record]) == compiled(TimingWheel)
    real, naive, summary = [record for record in records if "build" not in record]
    for record in (real, naive):
        check_fields(record, PURGATORY_FIELDS)
        assert record["bench"] == "purgatory" and record["requests"] == 3000
        assert record["completed"] + record["expired"] == 3000  # type: ignore[operator]
        assert len(record["cpu_s_runs"]) == 2  # type: ignore[arg-type]
        assert record["requests_per_cpu_s"] == pytest.approx(
            3000 / record["cpu_s"],  # type: ignore[operator]
            rel=1e-3,
        )
        assert record["peak_memory_bytes"] > 0  # type: ignore[operator]
    assert (real["impl"], naive["impl"]) == ("purgatory", "naive")
    # Both replay the same requests: the same ones complete, the same ones expire.
    for field in ("completed", "expired", "peak_live"):
        assert real[field] == naive[field]
    # With the default latencies (median 20 ms, 75th pct 60 ms) most beat the 200 ms timeout.
    assert real["completed"] > real["expired"] > 0  # type: ignore[operator]
    assert real["peak_watched"] <= real["watched_bound"]  # type: ignore[operator]
    # Nothing calls check_and_complete, so the naive purgatory never drops a watcher.
    assert naive["peak_watched"] == 3000 * 3 and naive["watched_bound"] is None
    names = [target["name"] for target in summary["targets"]]  # type: ignore[attr-defined]
    assert names == [
        "purgatory requests per CPU-second",
        "purgatory peak watched / bound",
        "purgatory / naive requests per CPU-second",
    ]


def test_purgatory_bench_table(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["purgatory", "--num", "1500", "--keys", "5", "--timeout", "50", "--no-memory"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "req/CPU-s" in out and "purgatory / naive requests per CPU-second" in out
    # The throughput target belongs to --keys 3 --timeout 200 only.
    assert "purgatory requests per CPU-second" not in out


def test_purgatory_bench_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["purgatory", "--pct50", "20", "--pct75", "10"]) == 2
    assert "pct75 must be >= pct50" in capsys.readouterr().err
    assert main(["purgatory", "--num", "0"]) == 2
    assert "num must be positive" in capsys.readouterr().err


def test_request_stream_matches_the_workload() -> None:
    config = WorkloadConfig(num=4000, keys=4, key_space_size=10, timeout=60, seed=5)
    stream = generate_requests(config)
    assert stream == generate_requests(config)
    assert len(stream.keys) == 4 and all(key.startswith("fakeKey") for key in stream.keys)
    arrivals = [slot for _, arrived, _ in stream.timeline for slot in arrived]
    completions = [slot for _, _, completing in stream.timeline for slot in completing]
    assert len(arrivals) == 4000
    assert sorted(completions) == list(range(stream.completing))  # each completes once
    times = [now for now, _, _ in stream.timeline]
    assert times == sorted(set(times)) and stream.end >= times[-1]
    # A completion never comes before its arrival, and always before the deadline.
    arrived_at = {slot: now for now, arrived, _ in stream.timeline for slot in arrived}
    for now, _, completing in stream.timeline:
        for slot in completing:
            assert arrived_at[slot] <= now < arrived_at[slot] + config.timeout


def test_drive_counts_and_metered_peak() -> None:
    config = WorkloadConfig(num=2500, keys=3, timeout=100, purge_interval=50, seed=2)
    stream = generate_requests(config)
    purgatory = MeteredPurgatory(config.purge_interval)
    counts = drive(purgatory, stream, config.timeout)
    assert counts.completed == stream.completing
    assert counts.expired == config.num - stream.completing
    assert purgatory.num_delayed == 0
    # A small purge interval: purges happened, and the peak is above what is left.
    assert purgatory.watched < purgatory.peak_watched
    bound = config.keys * (counts.peak_live + config.purge_interval + stream.max_completions_per_ms)
    assert purgatory.peak_watched <= bound


# -- the naive purgatory ----------------------------------------------------------------------


class Gate(DelayedOperation):
    """Completes once its gate is open."""

    __slots__ = ("completions", "open")

    def __init__(self, timeout: int) -> None:
        super().__init__(timeout)
        self.open = False
        self.completions = 0

    def try_complete(self) -> bool:
        return self.open and self.force_complete()

    def on_complete(self) -> None:
        self.completions += 1


def test_naive_purgatory_semantics() -> None:
    naive = NaivePurgatory[Gate]()
    ready = Gate(10)
    ready.open = True
    assert naive.try_complete_else_watch(ready, ["a"]) is True
    assert naive.watched == 0  # completed at once: never watched
    first, second = Gate(10), Gate(30)
    assert naive.try_complete_else_watch(first, ["a", "b"]) is False
    assert naive.try_complete_else_watch(second, ["b"]) is False
    assert naive.watched == 3
    first.open = True
    assert naive.check_and_complete("a") == 1 and first.is_completed
    # Removed from "a" only: "b" still lists it until "b" is checked.
    assert naive.watched == 2 and naive.peak_watched == 3
    assert naive.check_and_complete("b") == 0 and naive.watched == 1
    assert naive.check_and_complete("missing") == 0
    # The completed operation's heap entry is skipped at its deadline; the other one expires.
    assert naive.advance_clock(10) == 0
    assert naive.advance_clock(30) == 1 and second.is_expired and second.completions == 1
    assert first.completions == 1 and not first.is_expired


def test_check_exit_code_follows_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["purgatory", "--num", "1500", "--no-memory", "--json", "--check"])
    targets = json.loads(capsys.readouterr().out.splitlines()[-1])["targets"]
    assert targets and code == (0 if all(target["met"] for target in targets) else 1)


def test_the_compiled_build_reports_the_pure_python_figure_beside_its_own(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if compiled (the subprocess runs pure Python whichever build is installed).
    monkeypatch.setattr(
        "purgatory.bench.__main__.compiled_packages", lambda names: dict.fromkeys(names, True)
    )
    assert main(["purgatory", "--num", "1500", "--no-memory", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert "targets" in records[-1]
    (build,) = [record for record in records if record.get("build") == "compiled"]
    purgatory_row = next(record for record in records if record.get("impl") == "purgatory")
    assert build["requests_per_cpu_s"] == purgatory_row["requests_per_cpu_s"]
    assert build["pure_python_requests_per_cpu_s"] > 0
    assert build["compiled_speedup"] == round(
        build["requests_per_cpu_s"] / build["pure_python_requests_per_cpu_s"], 2
    )

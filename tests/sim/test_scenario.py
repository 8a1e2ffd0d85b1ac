"""Scenario files: loading, Kafka defaults, overrides, and one-line errors naming the field."""

from __future__ import annotations

import enum
import math
import random
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from replica.config_def import at_least, doc
from sim.core.units import format_duration, format_size, parse_duration, parse_size
from sim.scenario import (
    BrokerFailure,
    Constant,
    Distribution,
    Exponential,
    LatencySpike,
    Lognormal,
    Scenario,
    ScenarioError,
    Uniform,
    bundled_scenarios,
    load_scenario,
    with_overrides,
)
from sim.scenario.convert import build
from sim.scenario.formatting import format_value
from sim.scenario.knobs import knob_rows
from sim.scenario.overrides import apply_override

MINIMAL = """
[[topics]]
name = "t"
"""


def _write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(source: str | Path, overrides: list[str] | None = None) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(source, overrides or [])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("scenario error: ")
    return message


def test_every_bundled_scenario_loads_and_describes_itself() -> None:
    names = set(bundled_scenarios())
    assert {"default", "acks1", "broker-failure", "slow-follower", "burrow-per-partition"} <= names
    for name in names:
        scenario = load_scenario(name)
        assert scenario.description
        assert scenario.topics


def test_the_default_study_is_what_the_issue_asks_for() -> None:
    scenario = load_scenario()
    assert scenario.cluster.brokers == 3
    assert scenario.topics[0].replication_factor == 3
    assert [p.config.acks for p in scenario.producers] == [-1]  # acks=all
    assert scenario.producers[0].workload.rate == 10_000
    assert scenario.burrow is not None and scenario.burrow.config.num_workers == 10
    assert scenario.burrow.consumer.group_id == "burrow"
    # Flattened knobs read as the section's own, like their paths producers[0].acks...
    producer = scenario.producers[0]
    assert (producer.acks, producer.topic) == (producer.config.acks, producer.workload.topic)
    assert scenario.burrow.num_workers == 10
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = producer.nope
    assert load_scenario("acks1").producers[0].config.acks == 1
    per_partition = load_scenario("burrow-per-partition").burrow
    assert per_partition is not None and per_partition.config.tracking == "per_partition"
    assert load_scenario("broker-failure").faults == [
        BrokerFailure(broker=1, at=20_000_000, duration=10_000_000)
    ]
    spike = load_scenario("slow-follower").faults[0]
    assert isinstance(spike, LatencySpike) and spike.extra == 20_000


def test_knobs_default_to_kafkas_defaults(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, MINIMAL))
    broker = scenario.cluster.broker
    assert (broker.replica_fetch_wait_max_ms, broker.replica_fetch_min_bytes) == (500, 1)
    assert (broker.replica_lag_time_max_ms, broker.min_insync_replicas) == (30_000, 1)
    assert broker.replica_fetch_max_bytes == 1_048_576
    assert (scenario.cluster.num_io_threads, scenario.cluster.queued_max_requests) == (8, 500)
    offsets = scenario.offsets
    assert (offsets.offsets_topic_num_partitions, offsets.offsets_commit_timeout_ms) == (50, 5000)
    assert offsets.offsets_topic_replication_factor == 3
    assert (scenario.topics[0].partitions, scenario.topics[0].replication_factor) == (1, 1)
    assert scenario.simulation.duration == 60_000_000


def test_kafkas_dotted_names_are_accepted_in_files(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
[cluster]
replica.fetch.wait.max.ms = 100
"replica.lag.time.max.ms" = "10s"
min-insync-replicas = 2
"""
    )
    broker = load_scenario(_write(tmp_path, text)).cluster.broker
    assert (broker.replica_fetch_wait_max_ms, broker.replica_lag_time_max_ms) == (100, 10_000)
    assert broker.min_insync_replicas == 2


def test_units_convert_into_each_fields_unit(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
[simulation]
duration = "1.5s"
warmup = 250000
[cluster]
replica_fetch_max_bytes = "2MiB"
request_local_time = { distribution = "uniform", low = "10us", high = "0.1ms" }
"""
    )
    scenario = load_scenario(_write(tmp_path, text))
    assert scenario.simulation.duration == 1_500_000  # us
    assert scenario.simulation.warmup == 250_000  # plain ints are in the field's unit
    assert scenario.cluster.broker.replica_fetch_max_bytes == 2 * 1024 * 1024
    local = scenario.cluster.request_local_time
    assert (local.low, local.high) == (10, 100)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            MINIMAL + '[[producers]]\ntopic = "t"\nlinger_ms = "fast"\n',
            'scenario error: producers[0].linger_ms: expected a duration, got "fast" '
            '(e.g. "5s", "500ms", "250us", or an integer number of ms)',
        ),
        (
            MINIMAL + "[cluster]\nnum_io_thread = 4\n",
            "scenario error: cluster.num_io_thread: unknown field (did you mean num_io_threads?)",
        ),
        (
            MINIMAL + '[cluster]\nbrokers = "three"\n',
            'scenario error: cluster.brokers: expected an integer, got "three"',
        ),
        (
            MINIMAL + "[cluster]\nbrokers = 0\n",
            "scenario error: cluster.brokers: must be >= 1, got 0",
        ),
        (
            MINIMAL + "[cluster]\nreplica_fetch_wait_max_ms = -5\n",
            "scenario error: cluster.replica_fetch_wait_max_ms: "
            "replica.fetch.wait.max.ms must be >= 0, got -5",
        ),
        (
            MINIMAL + '[simulation]\nduration = "10 parsecs"\n',
            'scenario error: simulation.duration: unknown duration unit "parsecs" in '
            '"10 parsecs" (use one of ns, us, ms, s, m, min, h)',
        ),
        (
            MINIMAL + '[[producers]]\ntopic = "t"\nlinger_ms = "250us"\n',
            'scenario error: producers[0].linger_ms: "250us" is not a whole number of ms',
        ),
        (
            MINIMAL + '[[producers]]\ntopic = "t"\nbatch_size = "lots"\n',
            'scenario error: producers[0].batch_size: expected a size, got "lots" '
            '(e.g. "16KiB", "1MiB", "100B", or an integer number of bytes)',
        ),
        (
            MINIMAL + '[[producers]]\ntopic = "t"\nacks = 2\n',
            "scenario error: producers[0].acks: must be one of -1, 0, 1, got 2",
        ),
        (
            MINIMAL + "[[producers]]\nrate = 5.0\n",
            "scenario error: producers[0].topic: missing (this field is required)",
        ),
        (
            MINIMAL + '[[producers]]\ntopic = "nope"\n',
            "scenario error: producers[0].topic: unknown topic 'nope' (topics: t)",
        ),
        (
            MINIMAL + '[network]\nclient_broker = { distribution = "gauss" }\n',
            "scenario error: network.client_broker.distribution: expected one of "
            '"constant", "uniform", "exponential", "lognormal", got "gauss"',
        ),
        (
            MINIMAL
            + '[network]\nclient_broker = { distribution = "uniform", low = 9, high = 1 }\n',
            "scenario error: network.client_broker: high (1us) must be >= low (9us)",
        ),
        (
            MINIMAL + "[cluster]\nreplica_fetch_wait_max_ms = 40000\n",
            "scenario error: cluster: replica.fetch.wait.max.ms must be <= "
            "replica.lag.time.max.ms, got 40000 > 30000",
        ),
        (
            MINIMAL + "[cluster]\nbrokers = 2\n",
            "scenario error: offsets.offsets_topic_replication_factor: "
            "must be <= cluster.brokers (2), got 3",
        ),
        (
            MINIMAL + '[[faults]]\ntype = "broker_failure"\nbroker = 3\nat = "1s"\n',
            "scenario error: faults[0].broker: no such broker: ids are 0..2, got 3",
        ),
        (
            MINIMAL + '[[faults]]\ntype = "meteor"\n',
            "scenario error: faults[0].type: expected one of "
            '"latency_spike", "broker_failure", "follower_stall", "consumer_crash", got "meteor"',
        ),
        (
            MINIMAL + '[simulation]\nwarmup = "2m"\n',
            "scenario error: simulation.warmup: must be shorter than simulation.duration (1m), "
            "got 2m (set simulation.warmup as well)",
        ),
        (
            MINIMAL + "[cluster]\nlinger.ms = 4\n",
            "scenario error: cluster.linger: unknown field",
        ),
        (
            MINIMAL + '[[topics]]\nname = "t"\n',
            "scenario error: topics[1].name: topic 't' is defined twice",
        ),
        (
            MINIMAL + "[cluster]\nmin_insync_replicas = 2\nmin.insync.replicas = 3\n",
            "scenario error: cluster.min.insync.replicas: "
            "given twice (also as 'min_insync_replicas')",
        ),
        (
            "cluster = 3\n" + MINIMAL,
            "scenario error: cluster: expected a table, got 3",
        ),
        (
            "[simulation\nseed = 1\n",
            None,  # invalid TOML: checked below
        ),
    ],
)
def test_bad_files_raise_one_line_naming_the_field(
    tmp_path: Path, text: str, expected: str | None
) -> None:
    path = _write(tmp_path, text)
    message = _error(path)
    if expected is None:
        assert message.startswith(f"scenario error: {path}: invalid TOML: ")
    else:
        assert message == expected


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("producers[0].acks=2", "producers[0].acks: must be one of -1, 0, 1, got 2"),
        (
            "faults.at=1s",
            "faults: has no entries, so faults.at would set nothing (add an entry first)",
        ),
        ("producers[0].acks=leader", 'producers[0].acks: expected an integer, got "leader"'),
        ("producers[4].acks=1", "producers[4]: no such entry (there are 1)"),
        ("cluster.brokers", 'cluster.brokers: expected KEY=VALUE, got "cluster.brokers"'),
        ("clusters.brokers=1", "clusters: unknown field (did you mean cluster?)"),
        ("cluster.brokers.x=1", "cluster.brokers: is an integer, not a table"),
        ("burrow.num_workers=many", 'burrow.num_workers: expected an integer, got "many"'),
        ("simulation.seed=1.5", "simulation.seed: expected an integer, got 1.5"),
        (
            "burrow.tracking=per-partition",
            'burrow.tracking: expected one of "global", "per_partition", got "per-partition"',
        ),
    ],
)
def test_bad_overrides_raise_one_line_naming_the_field(override: str, expected: str) -> None:
    assert _error("default", [override]) == f"scenario error: {expected}"


def test_overrides_reach_every_kind_of_knob() -> None:
    scenario = load_scenario(
        "default",
        [
            "simulation.duration=10s",
            "producers[0].acks=1",
            "producers.0.linger_ms=0",
            "cluster.replica.fetch.wait.max.ms=100",  # Kafka's dotted spelling
            "network.client_broker.median=1ms",  # inside a distribution
            'network.broker_broker={distribution="constant", value="2ms"}',  # a whole table
            'faults=[{type="latency_spike", at="1s", duration="1s", extra="5ms"}]',
            "burrow.tracking=per_partition",  # a bare word is a string
        ],
    )
    assert scenario.simulation.duration == 10_000_000
    assert (scenario.producers[0].config.acks, scenario.producers[0].config.linger_ms) == (1, 0)
    assert scenario.cluster.broker.replica_fetch_wait_max_ms == 100
    assert scenario.network.client_broker == Lognormal(median=1000, sigma=0.3)
    assert scenario.network.broker_broker == Constant(value=2000)
    assert scenario.faults == [LatencySpike(at=1_000_000, duration=1_000_000, extra=5000)]
    assert scenario.burrow is not None and scenario.burrow.config.tracking == "per_partition"


def test_an_override_without_index_sets_every_list_entry(tmp_path: Path) -> None:
    text = MINIMAL + '[[producers]]\ntopic = "t"\n[[producers]]\ntopic = "t"\nacks = 0\n'
    scenario = load_scenario(_write(tmp_path, text), ["producers.acks=1"])
    assert [p.config.acks for p in scenario.producers] == [1, 1]


def test_overrides_from_code_take_typed_values_and_check_the_whole_scenario() -> None:
    scenario = load_scenario("default")
    changed = with_overrides(scenario, [("cluster.brokers", 5), ("producers.rate", 500.0)])
    assert changed.cluster.brokers == 5 and changed.producers[0].workload.rate == 500.0
    assert scenario.cluster.brokers == 3  # the original is untouched (frozen)
    # Each override alone may be inconsistent; the whole scenario is checked at the end.
    fine = with_overrides(
        scenario,
        ["cluster.brokers=1", "topics[0].replication_factor=1",
         "offsets.offsets_topic_replication_factor=1"],
    )  # fmt: skip
    assert fine.cluster.brokers == 1


def test_an_absent_optional_section_can_be_set_as_a_table(tmp_path: Path) -> None:
    path = _write(tmp_path, MINIMAL)
    assert load_scenario(path).burrow is None
    scenario = load_scenario(path, ['burrow={topic="t"}', "burrow.num_workers=4"])
    assert scenario.burrow is not None and scenario.burrow.config.num_workers == 4
    assert _error(path, ["burrow.num_workers=4"]) == (
        "scenario error: burrow.topic: missing (this field is required)"
    )


def test_the_burrow_consumer_must_commit_itself(tmp_path: Path) -> None:
    text = MINIMAL + '[burrow]\ntopic = "t"\n[burrow.consumer]\nfetch_max_wait_ms = 100\n'
    assert _error(_write(tmp_path, text)) == (
        "scenario error: burrow.consumer: the Burrow consumer commits itself: set group_id and "
        "enable_auto_commit = false (got group_id = None, enable_auto_commit = true)"
    )
    scenario = load_scenario("default", ["burrow.consumer.fetch_max_wait_ms=100"])
    assert scenario.burrow is not None
    assert (scenario.burrow.consumer.fetch_max_wait_ms, scenario.burrow.consumer.group_id) == (
        100,
        "burrow",
    )


def test_base_scenarios_merge_tables_and_replace_arrays(tmp_path: Path) -> None:
    _write(tmp_path, MINIMAL + "[cluster]\nbrokers = 5\nnum_io_threads = 2\n", "base.toml")
    child = _write(
        tmp_path,
        'base = "base.toml"\ndescription = "child"\n[cluster]\nnum_io_threads = 4\n'
        '[[topics]]\nname = "u"\n',
        "child.toml",
    )
    scenario = load_scenario(child)
    assert (scenario.cluster.brokers, scenario.cluster.num_io_threads) == (5, 4)
    assert [t.name for t in scenario.topics] == ["u"]
    assert load_scenario(_write(tmp_path, 'base = "default"\n', "b.toml")).cluster.brokers == 3
    # Spellings of one knob are one key; a distribution is replaced, not merged.
    over_default = _write(
        tmp_path,
        'base = "default"\n[cluster]\nreplica.fetch.wait.max.ms = 100\n'
        '[network]\nclient_broker = { distribution = "constant", value = "1ms" }\n',
        "c.toml",
    )
    scenario = load_scenario(over_default)
    assert scenario.cluster.broker.replica_fetch_wait_max_ms == 100
    assert scenario.cluster.broker.min_insync_replicas == 2  # the rest of [cluster] is kept
    assert scenario.network.client_broker == Constant(value=1000)


def test_base_problems_are_reported(tmp_path: Path) -> None:
    _write(tmp_path, 'base = "two.toml"\n', "one.toml")
    _write(tmp_path, 'base = "one.toml"\n', "two.toml")
    assert "inherit from each other in a cycle: one.toml -> two.toml -> one.toml" in _error(
        tmp_path / "one.toml"
    )
    assert _error(_write(tmp_path, "base = 3\n")) == (
        "scenario error: base: expected a scenario name or path, got 3"
    )
    assert "scenario error: missing.toml: no such scenario file or bundled scenario" in _error(
        _write(tmp_path, 'base = "missing.toml"\n')
    )


def test_knob_listing_shows_every_knob_with_its_value() -> None:
    rows = {row.path: row for row in knob_rows(load_scenario("default"))}
    assert rows["cluster.replica_fetch_wait_max_ms"].value == '"500ms"'
    assert rows["cluster.replica_fetch_wait_max_ms"].help.startswith("replica.fetch.wait.max.ms: ")
    assert rows["producers[0].batch_size"].value == '"16KiB"'
    assert rows["consumers[].topics"].value == "(required)"
    assert rows["consumers[].group_id"].value == "(not set)"
    assert rows["network.client_broker"].value == (
        '{ distribution = "lognormal", median = "250us", sigma = 0.3 }'
    )
    assert "faults" in rows


# -- the loader is generic over attrs classes ----------------------------------------------------


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen(kw_only=True)
class Inner:
    timeout: int = attrs.field(default=30, metadata=doc("seconds", unit="s"))


@attrs.frozen(kw_only=True)
class Section:
    size: Distribution = attrs.field(
        factory=lambda: Constant(value=1), metadata=doc("a size distribution", unit="bytes")
    )
    colour: Colour = Colour.RED
    pair: tuple[int, str] = (1, "a")
    sizes: dict[str, int] = attrs.field(factory=dict, metadata=doc("sizes", unit="bytes"))
    ratio: float = attrs.field(default=0.5, validator=attrs.validators.le(1.0))
    inner: Inner | None = None
    names: tuple[str, ...] = ()


def test_the_loader_builds_any_attrs_class() -> None:
    data = {
        "size": {"distribution": "uniform", "low": "1KiB", "high": 2048},
        "colour": "blue",
        "pair": [2, "b"],
        "sizes": {"x": "1KiB"},
        "ratio": 1,
        "inner": {"timeout": "2m"},
        "names": ["p", "q"],
    }
    section = build(Section, data)
    assert section == Section(
        size=Uniform(low=1024, high=2048),
        colour=Colour.BLUE, pair=(2, "b"), sizes={"x": 1024}, ratio=1.0,
        inner=Inner(timeout=120), names=("p", "q"),
    )  # fmt: skip
    assert apply_override(section, "sizes.y", "2KiB").sizes == {"x": 1024, "y": 2048}
    assert apply_override(Section(), "inner.timeout", "1h").inner == Inner(timeout=3600)
    # A distribution held by a size field takes sizes, also through an override.
    assert apply_override(section, "size.high", "4KiB").size == Uniform(low=1024, high=4096)
    assert format_value(section.size, "bytes") == (
        '{ distribution = "uniform", low = "1KiB", high = "2KiB" }'
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"colour": "green"}, 'colour: expected one of "red", "blue", got "green"'),
        ({"pair": [1]}, "pair: expected an array of 2, got 1 items"),
        ({"ratio": 2}, "ratio: must be <= 1.0: 2.0"),  # attrs' own validator message
        ({"ratio": True}, "ratio: expected a number, got true"),
        ({"inner": {"timeout": "1500ms"}}, 'inner.timeout: "1500ms" is not a whole number of s'),
        ({"names": "p"}, 'names: expected an array, got "p"'),
        (
            {"sizes": {"x": []}},
            'sizes.x: expected a size, got [] (e.g. "16KiB", "1MiB", '
            '"100B", or an integer number of bytes)',
        ),
    ],
)
def test_generic_loader_errors_name_the_field(data: dict[str, object], expected: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        build(Section, data)
    assert str(caught.value) == f"scenario error: {expected}"


@given(st.integers(0, 10**12), st.sampled_from(["us", "ms", "s"]))
def test_durations_round_trip_through_their_spelling(value: int, unit: str) -> None:
    assert parse_duration(format_duration(value, unit), unit) == value


@given(st.integers(0, 2**40))
def test_sizes_round_trip_through_their_spelling(value: int) -> None:
    assert parse_size(format_size(value)) == value


def test_unit_spellings() -> None:
    assert parse_duration("5s", "ms") == 5000
    assert parse_duration("1.5ms", "us") == 1500
    assert parse_duration("2 min", "s") == 120
    assert parse_duration("250µs", "us") == 250
    assert parse_size("16KiB") == 16384
    assert parse_size("1MB") == 1_000_000
    assert parse_size("1.5kib") == 1536
    assert Scenario().topics == []
    assert at_least(2)(None, None, 2) is None  # type: ignore[arg-type]


# -- input that used to escape as a traceback ------------------------------------------------


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("producers[0].rate=inf", "producers[0].rate: expected a finite number, got inf"),
        ("producers[0].rate=nan", "producers[0].rate: expected a finite number, got nan"),
        ("producers[0].rate=-inf", "producers[0].rate: expected a finite number, got -inf"),
        (
            "producers[0].rate=1e-300",
            "producers[0].rate: must be a finite number >= 1e-06 (messages per second), got 1e-300",
        ),
        (
            "network.client_broker.sigma=1e6",
            "network.client_broker.sigma: must be a number between 0 and 10, got 1000000.0",
        ),
        (
            'burrow.processing_time={distribution="lognormal", median="1ms", sigma=11}',
            "burrow.processing_time.sigma: must be a number between 0 and 10, got 11.0",
        ),
        (
            "burrow.failure_probability=nan",
            "burrow.failure_probability: expected a finite number, got nan",
        ),
    ],
)
def test_non_finite_and_overflowing_numbers_are_refused(override: str, expected: str) -> None:
    assert _error("default", [override]) == f"scenario error: {expected}"


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'description = "caf\xe9"\n' + MINIMAL.encode())
    assert _error(path) == (
        f"scenario error: {path}: not UTF-8 text (byte 0xe9 at offset 18; "
        "scenario files are UTF-8 TOML)"
    )


def test_a_file_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "description = " + "[" * 5000 + "]" * 5000 + "\n")
    assert _error(path) == f"scenario error: {path}: invalid TOML: nested too deeply"
    assert _error("default", ["description=" + "[" * 5000 + "]" * 5000]) == (
        "scenario error: description: invalid TOML value: nested too deeply"
    )


def test_a_base_chain_deeper_than_the_limit_is_refused(tmp_path: Path) -> None:
    for i in range(40):
        _write(tmp_path, f'base = "s{i + 1}.toml"\n', f"s{i}.toml")
    _write(tmp_path, MINIMAL, "s40.toml")
    assert _error(tmp_path / "s0.toml") == (
        "scenario error: base: the chain of base files is deeper than 32 "
        "(s0.toml -> s1.toml -> s2.toml -> ... -> s31.toml -> s32.toml; "
        "a loop or a mistake?)"
    )
    _write(tmp_path, 'base = "s20.toml"\n', "short.toml")  # 21 files: fine
    assert load_scenario(tmp_path / "short.toml").topics[0].name == "t"


# -- size limits -------------------------------------------------------------------------------

LARGE = [
    (
        "cluster.brokers=1000000",
        "cluster.brokers: 1,000,000 brokers is above the limit of 100 (each broker runs",
    ),
    ("topics[0].partitions=100000000", "topics[0].partitions: 100,000,000 partitions per topic"),
    (
        "offsets.offsets_topic_num_partitions=100000000",
        "offsets.offsets_topic_num_partitions: 100,000,000 partitions of __consumer_offsets",
    ),
    (
        "producers[0].rate=1e12",
        "producers[0].rate: 1,000,000,000,000 messages per second per producer",
    ),
    ("simulation.duration=2h", "simulation.duration: 2h of simulated time is above the limit"),
    (
        "simulation.sample_interval=1us",
        "simulation.sample_interval: 60,000,000 time-series samples per probe",
    ),
    ("cluster.num_io_threads=5000", "cluster.num_io_threads: 5,000 request handler threads"),
    ("burrow.num_workers=1000000", "burrow.num_workers: 1,000,000 Burrow workers"),
    ("burrow.members=1000", "burrow.members: 1,000 Burrow consumers is above the limit of 100"),
    ("producers[0].rate=100000", "producers: 6,000,000 messages expected over all producers"),
    (
        "topics=["
        + ", ".join(
            f'{{name="{n}", partitions=1000, replication_factor=3}}'
            for n in ("events", "a", "b", "c")
        )
        + "]",
        "topics: 12,150 partition replicas",  # each topic within its own limit
    ),
    (
        'producers[0].message_size={distribution="constant", value="2MiB"}',
        "producers[0].message_size: 2MiB per message (the size distribution's",
    ),
    (
        'producers[0].message_size={distribution="lognormal", median="1KiB", sigma=3}',
        "producers[0].message_size: 62.2GiB per message",
    ),
    (
        'producers[0].message_size={distribution="constant", value="512KiB"}',
        "producers: 293GiB of message values expected over all producers",
    ),
]


@pytest.mark.parametrize(("override", "expected"), LARGE)
def test_sizes_above_a_limit_are_refused_unless_allowed(override: str, expected: str) -> None:
    message = _error("default", [override])
    assert message.startswith(f"scenario error: {expected}")
    assert message.endswith("; set simulation.allow_large = true to run it anyway)")
    allowed = load_scenario("default", [override, "simulation.allow_large=true"])
    assert allowed.simulation.allow_large


def test_the_limits_fit_every_bundled_scenario_and_are_stated_in_the_knobs() -> None:
    for name in bundled_scenarios():
        assert not load_scenario(name).simulation.allow_large
    rows = {row.path: row.help for row in knob_rows(load_scenario("default"))}
    assert rows["cluster.brokers"].endswith(
        "; limit: at most 100 brokers (simulation.allow_large lifts it)"
    )
    bounded = (
        "topics[0].partitions", "offsets.offsets_topic_num_partitions", "producers[0].rate",
        "producers[0].message_size", "simulation.duration", "burrow.num_workers",
        "cluster.num_io_threads", "topics[0].replication_factor",
    )  # fmt: skip
    for knob in bounded:
        assert "; limit: at most " in rows[knob], knob
    assert "limit" not in rows["producers[0].acks"]
    assert rows["simulation.allow_large"].startswith("lift the size limits")


def test_quantiles_of_the_distributions_match_their_draws() -> None:
    rng = random.Random(7)
    for distribution in (
        Constant(value=5),
        Uniform(low=10, high=30),
        Exponential(mean=100),
        Lognormal(median=250, sigma=0.8),
    ):
        draws = sorted(distribution.sample(rng) for _ in range(20_000))
        for p in (0.1, 0.5, 0.9):
            assert draws[int(p * len(draws))] == pytest.approx(distribution.quantile(p), rel=0.1)
    assert Lognormal(median=250, sigma=0.8).quantile(0.5) == pytest.approx(250)
    assert Exponential(mean=100).quantile(1 - 1e-9) == pytest.approx(100 * math.log(1e9))


def test_acks_all_is_accepted_as_kafka_spells_it(tmp_path: Path) -> None:
    path = tmp_path / "all.toml"
    path.write_text(
        'base = "default"\n[[producers]]\ntopic = "events"\nacks = "all"\n', encoding="utf-8"
    )
    assert load_scenario(path).producers[0].config.acks == -1
    for spelling in ('producers[0].acks="all"', "producers[0].acks=all"):
        assert load_scenario("acks1", [spelling]).producers[0].config.acks == -1
    with pytest.raises(ScenarioError, match=r"producers\[0\]\.acks"):
        load_scenario("default", ['producers[0].acks="leader"'])

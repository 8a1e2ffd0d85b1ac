"""Study files: the bundled ones are valid; bad ones give one line naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.sweep.errors import StudyError
from sim.sweep.grid import expand_tasks
from sim.sweep.simulate import check_points
from sim.sweep.study import DEFAULT_REPORT_METRICS, bundled_studies, column_name, load_study

GOOD = """
[study]
scenario = "default"
seeds = 2
[grid]
"burrow.num_workers" = [1, 4]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_bundled_studies_load_and_build_every_point() -> None:
    assert {"default", "bench", "commit-latency"} <= set(bundled_studies())
    for name in bundled_studies():
        study = load_study(name)
        check_points(study)
        assert study.name == name


def test_bench_study_has_at_least_16_runs_of_5_simulated_seconds() -> None:
    study = load_study("bench")
    assert len(expand_tasks(study)) >= 16
    assert study.duration_s is not None and study.duration_s >= 5


def test_default_study_plots_workers_near_saturation_with_one_line_per_tracking_mode() -> None:
    study = load_study("default")
    assert study.report_x == "burrow.num_workers"
    assert study.report_series == "burrow.tracking"
    assert [(k.name, k.values) for k in study.grid] == [
        ("burrow.num_workers", (8, 9, 10, 12)),
        ("burrow.tracking", ("global", "per_partition")),
    ]
    assert "producers.rate" not in study.fixed  # the scenario's full 10,000 msg/s


def test_a_good_study(tmp_path: Path) -> None:
    study = load_study(write(tmp_path, GOOD))
    assert study.name == "study"
    assert study.seeds == (1, 2)
    assert study.duration_s is None
    assert [(k.name, k.column, k.values) for k in study.grid] == [
        ("burrow.num_workers", "burrow_num_workers", (1, 4))
    ]
    assert study.report_x == "burrow.num_workers" and study.report_series is None


def test_dotted_keys_and_sub_tables_name_the_same_knobs(tmp_path: Path) -> None:
    quoted = load_study(write(tmp_path, GOOD + '"burrow.commit_interval_ms" = [10, 20]\n'))
    dotted = load_study(
        write(
            tmp_path,
            '[study]\nscenario = "default"\nseeds = 2\n'
            "[grid.burrow]\nnum_workers = [1, 4]\ncommit_interval_ms = [10, 20]\n",
        )
    )
    assert quoted.grid == dotted.grid


def test_set_accepts_a_table_value_and_the_grid_varies_inside_it(tmp_path: Path) -> None:
    study = load_study(
        write(
            tmp_path,
            '[study]\nscenario = "default"\nseeds = 1\nfirst_seed = 7\nduration_s = 2\n'
            '[set]\n"simulation.warmup" = "1s"\n'
            '"burrow.processing_time" = { distribution = "lognormal", median = "1ms", '
            "sigma = 0.5 }\n"
            '[grid]\n"burrow.processing_time.sigma" = [0.25, 1]\n',
        )
    )
    assert study.seeds == (7,)
    assert study.duration_s == 2.0
    assert study.fixed["burrow.processing_time"]["distribution"] == "lognormal"
    assert study.grid[0].values == (0.25, 1.0)  # ints and floats mix as floats
    check_points(study)


def test_column_names_are_column_safe() -> None:
    assert column_name("producers[0].acks") == "producers_0_acks"
    assert column_name("replica.fetch.wait.max.ms") == "replica_fetch_wait_max_ms"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[grid]\n'a.b' = [1]\n", "missing section [study]"),
        (GOOD + "[extra]\n", "unknown section [extra]"),
        (GOOD.replace("seeds = 2", "seeds = 0"), "[study] seeds: expected an integer >= 1"),
        (GOOD.replace("seeds = 2", "seeds = true"), "[study] seeds"),
        (GOOD.replace("seeds = 2\n", ""), "[study] seeds: missing"),
        (GOOD.replace('scenario = "default"\n', ""), "[study] scenario: missing"),
        (GOOD.replace('"default"', '"no-such"'), "[study] scenario"),
        (GOOD.replace('"default"', '"missing.toml"'), "[study] scenario"),
        (GOOD.replace("[1, 4]", "[]"), "[grid] 'burrow.num_workers': expected a non-empty list"),
        (GOOD.replace("[1, 4]", "4"), "[grid] 'burrow.num_workers': expected a non-empty list"),
        (GOOD.replace("[1, 4]", '[1, "4"]'), "all values must have one type"),
        (GOOD.replace("[1, 4]", "[1, 1]"), "value 1 is listed twice"),
        (GOOD.replace("[1, 4]", "[[1], [4]]"), "expected a bool, integer, float or string"),
        (GOOD.replace("[1, 4]", "[nan]"), "values must be finite"),
        (GOOD.replace('"burrow.num_workers"', "workers"), "a knob is named 'section.key'"),
        (GOOD.replace('"burrow.num_workers"', '"burrow..x"'), "a knob is named 'section.key'"),
        (GOOD + '"burrow.num-workers" = [1]\n', "both map to the column"),
        (GOOD + '"point.id" = [1]\n', "reserved"),
        (GOOD.replace("[grid]", "[set]\n'burrow.num_workers' = 3\n[grid]"), "also in [grid]"),
        (GOOD.replace("[grid]\n", "[grid]\n").replace("seeds = 2", "seeds = 2\nbad = 1"),
         "[study] unknown key 'bad'"),
        (GOOD.replace("seeds = 2", "seeds = 2\nduration_s = -1"), "[study] duration_s"),
        (GOOD.replace("seeds = 2", "seeds = 2\ntime_limit_s = 0"),
         "[study] time_limit_s: expected a positive number of seconds, got 0"),
        (GOOD.replace("seeds = 2", "seeds = 2\nallow_large = 1"),
         "[study] allow_large: expected true or false, got 1"),
        (GOOD.replace("seeds = 2", "seeds = 2\nduration_s = 5")
         + '"simulation.duration" = ["5s"]\n', "both set the duration"),
        (GOOD + "[report]\nx = 'burrow.x'\n", "[report] x: 'burrow.x' is not a [grid] knob"),
        (GOOD + "[report]\ncolour = 1\n", "[report] unknown key 'colour'"),
        (GOOD + "[report]\nmetrics = ['send_to_commit_p99']\n",
         "[report] metrics: 'send_to_commit_p99' is not a sweep statistic; did you mean "
         "'send_to_commit_p99_ms'? allowed: produce_p50_ms, "),
        (GOOD + "[report]\nmetrics = ['nonsense']\n",
         "[report] metrics: 'nonsense' is not a sweep statistic; allowed: produce_p50_ms, "),
        (GOOD + "[report]\nmetrics = []\n", "[report] metrics must be a non-empty list"),
        (GOOD + "[report]\nmetrics = 'commit_p99_ms'\n", "[report] metrics must be a non-empty"),
        (GOOD + "[report]\nreferences = { interval = '1s' }\n",
         "[report] references: 'interval' must be a number of milliseconds >= 0, got '1s'"),
        (GOOD + "[report]\nx = 'burrow.num_workers'\nseries = 'burrow.num_workers'\n",
         "x and series are both"),
        ("[study\n", "not valid TOML"),
        (GOOD.replace("seeds = 2", "seeds = 2\nname = '../x'"), "[study] name: '../x'"),
        ("a = " + "[" * 5000 + "]" * 5000, "not valid TOML: nested too deeply"),
        (GOOD.replace("seeds = 2", "seeds = 1_000_000_000"),
         "[study] seeds: 1,000,000,000 seeds x 2 points = 2,000,000,000 runs is above the limit "
         "of 100,000 runs (each run is a Spark task and a row of every table; set allow_large "
         "= true in [study] to run it anyway)"),
        (GOOD + "".join(f'"burrow.k{i}" = [{", ".join(map(str, range(10)))}]\n' for i in range(10)),
         "[grid]: 20,000,000,000 points (the product of the lengths of its value lists) is above "
         "the limit of 10,000 points (every point's scenario is built and checked on the driver "
         "before Spark starts; set allow_large = true in [study] to run it anyway)"),
        (GOOD.replace("seeds = 2", f"seeds = 2\nfirst_seed = {2**63 - 1}"),
         f"[study] first_seed: the seeds {2**63 - 1}..{2**63} must fit in a 64-bit integer "
         f"(the last may be at most {2**63 - 1})"),
    ],
)  # fmt: skip
def test_bad_studies_give_one_line_naming_the_field(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(StudyError) as caught:
        load_study(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


def test_report_metrics_and_references(tmp_path: Path) -> None:
    study = load_study(
        write(
            tmp_path,
            GOOD + "[report]\nmetrics = ['never_committed', 'commit_p99_9_ms']\n"
            "references = { 'commit interval' = 50 }\n",
        )
    )
    assert study.report_metrics == ("never_committed", "commit_p99_9_ms")
    assert study.report_references == {"commit interval": 50.0}
    default = load_study(write(tmp_path, GOOD))
    assert default.report_metrics == DEFAULT_REPORT_METRICS and default.report_references == {}


def test_a_time_limit_per_run(tmp_path: Path) -> None:
    study = load_study(write(tmp_path, GOOD.replace("seeds = 2", "seeds = 2\ntime_limit_s = 90")))
    assert study.time_limit_s == 90.0
    assert load_study(write(tmp_path, GOOD)).time_limit_s is None


def test_allow_large_lifts_the_size_limits_of_a_study(tmp_path: Path) -> None:
    text = GOOD.replace("seeds = 2", "seeds = 100_000\nallow_large = true")
    study = load_study(write(tmp_path, text))
    assert len(study.seeds) == 100_000 and study.allow_large
    assert not load_study(write(tmp_path, GOOD)).allow_large


def test_unknown_study_names_the_bundled_ones() -> None:
    with pytest.raises(StudyError, match=r"unknown study 'nope'.*default"):
        load_study("nope")
    with pytest.raises(StudyError, match="no such study file"):
        load_study("missing/study.toml")


def test_a_knob_the_scenario_lacks_fails_before_spark_naming_point_and_field(
    tmp_path: Path,
) -> None:
    study = load_study(write(tmp_path, GOOD.replace("num_workers", "num_wrkers")))
    with pytest.raises(StudyError) as caught:
        check_points(study)
    message = str(caught.value)
    assert "\n" not in message
    assert "point 0 (num_wrkers=1)" in message and "burrow.num_wrkers" in message


def test_a_bad_value_names_the_point(tmp_path: Path) -> None:
    study = load_study(write(tmp_path, GOOD.replace("[1, 4]", "[1, 0]")))
    with pytest.raises(StudyError, match=r"point 1 \(num_workers=0\): scenario error: burrow"):
        check_points(study)


def test_a_scenario_file_that_is_not_utf8_fails_before_spark(tmp_path: Path) -> None:
    (tmp_path / "latin1.toml").write_bytes(b'description = "caf\xe9"\n')
    study = load_study(write(tmp_path, GOOD.replace('"default"', '"latin1.toml"')))
    with pytest.raises(StudyError) as caught:
        check_points(study)
    assert str(caught.value) == (
        f"{tmp_path / 'study.toml'}: [study] scenario: scenario error: "
        f"{tmp_path / 'latin1.toml'}: not UTF-8 text (byte 0xe9 at offset 18; "
        "scenario files are UTF-8 TOML)"
    )

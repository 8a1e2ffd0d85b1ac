"""Finding Java 17+ for PySpark: JAVA_HOME, PATH, install folders; one-line hint otherwise."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sim.sweep.errors import JavaNotFoundError
from sim.sweep.java import find_java, java_version, main


def fake_jdk(root: Path, name: str, *, release: str | None, banner: str | None = None) -> Path:
    """A folder that looks like a JDK: bin/java and, optionally, a release file."""
    home = root / name
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{banner or ''}' >&2\n", encoding="utf-8")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    if release is not None:
        (home / "release").write_text(f'JAVA_VERSION="{release}"\n', encoding="utf-8")
    return home


def test_version_from_the_release_file_or_from_java_version(tmp_path: Path) -> None:
    assert java_version(fake_jdk(tmp_path, "a", release="17.0.15")) == 17
    assert java_version(fake_jdk(tmp_path, "b", release="1.8.0_392")) == 8
    old = fake_jdk(tmp_path, "c", release=None, banner='java version "1.8.0_392"')
    assert java_version(old) == 8
    new = fake_jdk(tmp_path, "d", release=None, banner='openjdk version "21.0.2" 2024-01-16')
    assert java_version(new) == 21
    assert java_version(tmp_path / "nothing") is None


def test_java_home_wins_when_it_is_new_enough(tmp_path: Path) -> None:
    home = fake_jdk(tmp_path, "jdk21", release="21.0.1")
    fake_jdk(tmp_path / "scan", "jdk17", release="17")
    found = find_java({"JAVA_HOME": str(home), "PATH": ""}, [str(tmp_path / "scan" / "*")])
    assert (found.home, found.version) == (home, 21)


def test_java_on_path_is_used_when_java_home_is_too_old(tmp_path: Path) -> None:
    old = fake_jdk(tmp_path, "jdk8", release="1.8.0_392")
    new = fake_jdk(tmp_path, "jdk17", release="17.0.2")
    found = find_java({"JAVA_HOME": str(old), "PATH": str(new / "bin")}, [])
    assert (found.home, found.version) == (new, 17)


def test_the_scan_picks_the_lowest_version_at_least_17(tmp_path: Path) -> None:
    for name, release in (("jdk11", "11.0.2"), ("jdk25", "25"), ("jdk21", "21"), ("jdk17", "17")):
        fake_jdk(tmp_path, name, release=release)
    found = find_java({"PATH": ""}, [str(tmp_path / "*")])
    assert (found.home.name, found.version) == ("jdk17", 17)


def test_no_java_gives_one_line_saying_how_to_install_it(tmp_path: Path) -> None:
    fake_jdk(tmp_path, "jdk11", release="11")
    with pytest.raises(JavaNotFoundError) as caught:
        find_java({"PATH": ""}, [str(tmp_path / "*")])
    message = str(caught.value)
    assert "\n" not in message
    assert "Java 17" in message and "install" in message


def test_main_reports_the_java_it_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = fake_jdk(tmp_path, "jdk17", release="17.0.9")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert main() == 0
    assert capsys.readouterr().out == f"Java 17 at {home}\n"
    assert os.environ["JAVA_HOME"] == str(home)

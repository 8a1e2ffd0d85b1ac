"""``python -m consume_proxy serve``: bad options get one line and exit 2 before anything
starts (a running server, its start-up line and its exit 0 on Ctrl-C are in
test_server_e2e.py)."""

from __future__ import annotations

import pytest

from consume_proxy.cli import main

_REQUIRED = ["serve", "--bootstrap", "127.0.0.1:1", "--topic", "t", "--group", "g"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--topic", "t", "--group", "g"], "--bootstrap"),
        ([*_REQUIRED, "-X", "no-equals"], "-X must be NAME=VALUE"),
        ([*_REQUIRED, "--window", "1"], "--window must be >= 2"),
        ([*_REQUIRED, "--lease-ms", "0", "--port", "0"], "lease_duration must be an int >= 1"),
        ([*_REQUIRED, "--max-record-locks", "0"], "max_record_locks must be an int >= 1"),
    ],
)
def test_bad_options_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in error

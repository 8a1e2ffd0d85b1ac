"""``python -m kafka_server serve``: logs where it listens, serves, stops cleanly on Ctrl-C
or SIGTERM."""

from __future__ import annotations

import re
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_server.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])  # Ctrl-C, a process manager
def test_serve_logs_its_ports_answers_and_stops_cleanly(stop: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "kafka_server", "serve", "--brokers", "2", "--port", "0",
         "--topic", "orders:3:2"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        ports = []
        while len(ports) < 2:
            line = process.stderr.readline()
            assert line, "the server exited before listening"
            found = re.search(r"broker (\d) listening on 127\.0\.0\.1:(\d+)", line)
            if found:
                ports.append(int(found.group(2)))
        with socket.create_connection(("127.0.0.1", ports[1]), timeout=10) as sock:
            sock.sendall(struct.pack(">ihhi", 10, 18, 0, 5) + struct.pack(">h", -1))
            assert struct.unpack(">i", sock.recv(8)[4:8])[0] == 5
        process.send_signal(stop)
        assert process.wait(timeout=20) == 0
        assert "stopped" in process.stderr.read()
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("topic", ["", "x:0", "x:1:2:3", "x:y"])
def test_a_bad_topic_flag_is_one_line(topic: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--topic", topic])
    assert exit_info.value.code == 2
    assert "--topic" in capsys.readouterr().err or topic

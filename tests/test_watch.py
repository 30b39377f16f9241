"""`engram-md run --watch`: tails transcript files with cursors; a restart neither re-reads nor
skips; SIGTERM flushes."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from .conftest import Cli


def _line(i: int, text: str) -> str:
    return json.dumps(
        {
            "role": "user",
            "content": text,
            "id": f"w{i}",
            "session": "watched",
            "name": "Ilse",
            "timestamp": f"2026-05-0{1 + i // 10}T10:{i % 60:02d}:00Z",
        }
    )


def _wait_for(predicate, timeout: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def _bodies(cli: Cli) -> str:
    return "\n".join(d.decode() for d in cli.fact_files().values())


def test_watch_tails_files_and_resumes_after_restart(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    transcript = folder / "chat.jsonl"
    transcript.write_text(_line(1, "We decided to use Grafana for the dashboards.") + "\n")

    daemon = cli.popen("run", "--watch", str(folder), "--no-stdin")
    try:
        assert _wait_for(lambda: "Grafana" in _bodies(cli)), "first line not extracted"
        with transcript.open("a") as handle:
            handle.write(_line(2, "I always review pull requests before lunch.") + "\n")
        assert _wait_for(lambda: "pull requests" in _bodies(cli)), "appended line not seen"
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0, daemon.stderr.read().decode() if daemon.stderr else ""

    cursors = json.loads((cli.state / "cursors.json").read_text())
    assert any(c["lineno"] == 2 for c in cursors.values())

    # While it is down, more lines arrive; a new file appears too.
    with transcript.open("a") as handle:
        handle.write(_line(3, "Actually, my budget is 900 euros, not 700.") + "\n")
    (folder / "second.jsonl").write_text(_line(4, "I'll send the slides to Omar by Friday.") + "\n")
    before = cli.fact_files()

    daemon = cli.popen("run", "--watch", str(folder), "--no-stdin")
    try:
        assert _wait_for(lambda: "900 euros" in _bodies(cli) and "Omar" in _bodies(cli))
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
    after = cli.fact_files()
    # Nothing re-read: the files written in the first run are unchanged, none duplicated.
    for rel, data in before.items():
        assert after[rel] == data
    assert sum("Grafana" in d.decode() for d in after.values()) == 1


def test_a_second_daemon_on_the_same_folder_is_refused(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    first = cli.popen("run", "--watch", str(folder), "--no-stdin")
    try:
        assert _wait_for(lambda: (cli.state / "daemon.json").exists())
        second = cli("run", "--watch", str(folder), "--no-stdin", timeout=60)
        assert second.returncode != 0
        message = second.stderr.decode()
        assert "already writing" in message and "Traceback" not in message
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)

"""kill -9 mid-stream, restart with the same input: every memory exactly once, no temp file
left behind, and nothing for doctor to report."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from engram_md.core.atomic import TMP_MARKER, is_temp_file

from .conftest import Cli
from .synthetic import conversation


def _feed_and_kill(cli: Cli, lines: list[str], kill_after_files: int) -> None:
    proc = cli.popen("run")
    assert proc.stdin is not None
    deadline = time.monotonic() + 120
    try:
        for line in lines:
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
            if len(cli.fact_files()) >= kill_after_files:
                break
            time.sleep(0.01)
            if time.monotonic() > deadline:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _temp_files(cli: Cli) -> list[Path]:
    """Orphans of atomic writes (``.<name>.tmp-<pid>``); LanceDB's own files are not ours."""
    index = cli.state / "index"
    return [
        p
        for root in (cli.memory, cli.state)
        for p in root.rglob(f".*{TMP_MARKER}*")
        if is_temp_file(p) and index not in p.parents
    ]


def test_kill_9_then_restart_gives_every_memory_exactly_once(make_cli) -> None:  # type: ignore[no-untyped-def]
    lines = conversation(160, seed=11)
    data = ("\n".join(lines) + "\n").encode()

    baseline = make_cli("baseline")
    assert baseline("run", input=data).returncode == 0
    expected = baseline.fact_files()
    assert len(expected) > 20

    for trial, kill_at in enumerate((3, len(expected) // 2, len(expected) - 5)):
        crashed = make_cli(f"crashed-{trial}")
        _feed_and_kill(crashed, lines, kill_at)
        assert len(crashed.fact_files()) < len(expected) or kill_at >= len(expected)
        result = crashed("run", input=data)
        assert result.returncode == 0, result.stderr.decode()
        got = crashed.fact_files()
        assert sorted(got) == sorted(expected), f"trial {trial}: file sets differ"
        assert got == expected, f"trial {trial}: file contents differ"
        leftovers = _temp_files(crashed)
        assert not leftovers, f"trial {trial}: {leftovers}"
        doctor = crashed("doctor", "--json")
        assert doctor.returncode == 0, f"trial {trial}: {doctor.stdout.decode()}"
        assert json.loads(doctor.stdout)["problems"] == []

"""kill -9 mid-stream, restart with the same input: every memory exactly once."""

from __future__ import annotations

import os
import signal
import time

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
        leftovers = [p for p in crashed.memory.rglob("*") if ".tmp-" in p.name]
        assert not leftovers

"""Crash points: SIGKILL at the n-th occurrence of a named point, and only when asked."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from .conftest import clean_env

# Reaches point "a" three times and "b" once, then says it survived.
_SCRIPT = (
    "from engram_md.core.crashpoints import crashpoint\n"
    "for _ in range(3):\n"
    "    crashpoint('a')\n"
    "crashpoint('b')\n"
    "print('survived', flush=True)\n"
)


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        env=clean_env(**env),
        cwd=tmp_path,
        timeout=60,
    )


def test_unset_is_a_no_op(tmp_path: Path) -> None:
    result = _run(tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == "survived"


def test_kills_at_the_nth_occurrence_of_the_named_point(tmp_path: Path) -> None:
    result = _run(tmp_path, ENGRAM_CRASH_AT="a:2")
    assert result.returncode == -signal.SIGKILL
    assert "survived" not in result.stdout


def test_a_count_past_the_last_occurrence_never_fires(tmp_path: Path) -> None:
    assert _run(tmp_path, ENGRAM_CRASH_AT="a:4").returncode == 0
    assert _run(tmp_path, ENGRAM_CRASH_AT="other:1").returncode == 0
    assert _run(tmp_path, ENGRAM_CRASH_AT="b:1").returncode == -signal.SIGKILL


def test_a_malformed_value_is_reported_and_ignored(tmp_path: Path) -> None:
    for value in ("a", "a:0", "a:x", ":3"):
        result = _run(tmp_path, ENGRAM_CRASH_AT=value)
        assert result.returncode == 0, value
        assert "ENGRAM_CRASH_AT" in result.stderr


def test_counting_mode_writes_how_often_each_point_was_reached(tmp_path: Path) -> None:
    counts = tmp_path / "counts.json"
    result = _run(tmp_path, ENGRAM_CRASH_COUNTS=str(counts))
    assert result.returncode == 0
    assert json.loads(counts.read_text()) == {"a": 3, "b": 1}

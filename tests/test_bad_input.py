"""Bad input gets a clear report with its line number, and loses nothing good."""

from __future__ import annotations

import json

import pytest

from .conftest import Cli


def _good(i: int, text: str) -> bytes:
    return json.dumps(
        {
            "role": "user",
            "content": text,
            "timestamp": f"2026-04-0{1 + i % 5}T10:00:0{i % 10}Z",
            "id": f"g{i}",
            "session": "mixed",
            "name": "Rosa",
        }
    ).encode()


@pytest.fixture
def mixed_file(tmp_path):  # type: ignore[no-untyped-def]
    huge = json.dumps(
        {
            "role": "user",
            "content": "I prefer dark roast coffee. " + "x" * (5 * 1024 * 1024),
            "timestamp": "2026-04-01T11:00:00Z",
            "id": "huge",
            "session": "mixed",
            "name": "Rosa",
        }
    ).encode()
    lines = [
        _good(1, "We decided to adopt Terraform for the staging stack."),  # 1
        b'{"role": "user", "content": "unterminated',  # 2 malformed JSON
        _good(2, "I always write tests before refactoring."),  # 3
        huge,  # 4 a 5 MB line (valid)
        b"\xff\xfe\xfa invalid utf-8 \xc3\x28",  # 5
        _good(3, "Actually, my budget is 40 euros, not 30."),  # 6
        bytes(range(256)),  # 7 binary noise (contains a newline: splits in two lines)
        _good(4, "I'll send the invoice to Bram by Friday."),  # 9
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


EXPECTED = ["Terraform", "tests before refactoring", "dark roast coffee", "40 euros", "Bram"]


def _check(cli: Cli, stderr: str, source: str) -> None:
    bodies = "\n".join(data.decode() for data in cli.fact_files().values())
    for needle in EXPECTED:
        assert needle in bodies, f"{needle!r} lost; stderr:\n{stderr}"
    assert f"{source}:2:" in stderr  # malformed JSON, by line number
    assert f"{source}:5:" in stderr and "UTF-8" in stderr
    assert f"{source}:7:" in stderr or f"{source}:8:" in stderr  # binary noise
    assert "Traceback" not in stderr
    # The 5 MB turn was capped before it reached the disk.
    assert max(len(data) for data in cli.fact_files().values()) < 20_000


def test_ingest_reports_bad_lines_and_keeps_good_ones(cli: Cli, mixed_file) -> None:  # type: ignore[no-untyped-def]
    result = cli("ingest", str(mixed_file))
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    _check(cli, stderr, str(mixed_file))


def test_run_from_stdin_reports_bad_lines_and_keeps_good_ones(cli: Cli, mixed_file) -> None:  # type: ignore[no-untyped-def]
    result = cli("run", input=mixed_file.read_bytes())
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr
    _check(cli, stderr, "stdin")


def test_broken_config_is_a_clear_error(cli: Cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.yaml"
    bad.write_text("buffer:\n  max_turns: -3\n  nonsense: 1\n")
    result = cli("--config", str(bad), "status")
    stderr = result.stderr.decode()
    assert result.returncode == 2
    assert "max_turns" in stderr and "Traceback" not in stderr

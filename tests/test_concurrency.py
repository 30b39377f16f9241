"""One writer per folder, readers beside it: what runs while the daemon runs, and what is refused.

The daemon holds the writer lock for its whole life. Recall (through the daemon, or in-process
reading the index the daemon writes) must keep answering with valid JSON while memories are
written. Every other writer — a second daemon, `consolidate`, `forget`, `doctor --repair` —
is refused with a message that says why; `doctor` without --repair only reads and works.
"""

from __future__ import annotations

import json
import select
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from engram_md.cli import app

from .conftest import Cli, sample
from .synthetic import conversation


def _wait_for(predicate: object, timeout: float = 120.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _send(proc: subprocess.Popen[bytes], lines: list[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("".join(line + "\n" for line in lines).encode())
    proc.stdin.flush()


def _close(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _readline(proc: subprocess.Popen[bytes], timeout: float = 120.0) -> bytes:
    """One line of a child's stdout, or a failure instead of a hang."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "no answer in time"
    return proc.stdout.readline()


@pytest.fixture(scope="module")
def daemon(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Cli, subprocess.Popen[bytes]]]:
    """`engram-md run` reading turns from stdin, kept running for the whole module."""
    cli = Cli(tmp_path_factory.mktemp("concurrency"))
    proc = cli.popen("run")
    try:
        _send(proc, sample("generic.jsonl").read_text().splitlines())
        assert _wait_for(lambda: (cli.state / "daemon.json").exists() and cli.fact_files())
        yield cli, proc
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        code = proc.wait(timeout=180)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        _close(proc)
        assert code == 0 and "Traceback" not in stderr, stderr


def _args(cli: Cli) -> list[str]:
    return ["--memory-dir", str(cli.memory), "--state-dir", str(cli.state)]


def test_a_second_daemon_is_refused(daemon: tuple[Cli, subprocess.Popen[bytes]]) -> None:
    cli, _ = daemon
    second = cli("run", input=b"", timeout=120)
    message = second.stderr.decode()
    assert second.returncode == 3, message
    assert "already writing" in message and "Traceback" not in message


def test_writers_are_refused_and_doctor_reads_while_the_daemon_runs(
    daemon: tuple[Cli, subprocess.Popen[bytes]],
) -> None:
    cli, proc = daemon
    runner = CliRunner()
    args = _args(cli)
    before = cli.fact_files()

    consolidate = runner.invoke(app, [*args, "consolidate"])
    assert consolidate.exit_code == 3
    assert "already writing" in consolidate.output
    assert "consolidates by itself" in consolidate.output

    fact_id = next(
        line.removeprefix("id: ").strip()
        for data in before.values()
        for line in data.decode().splitlines()
        if line.startswith("id: ")
    )
    forget = runner.invoke(app, [*args, "forget", fact_id])
    assert forget.exit_code == 3
    assert "cannot forget while another process writes" in forget.output

    repair = runner.invoke(app, [*args, "doctor", "--repair"])
    assert repair.exit_code == 3
    assert "doctor --repair needs the memory folder to itself" in repair.output

    check = runner.invoke(app, [*args, "doctor", "--json"])
    assert check.exit_code in (0, 1), check.output
    assert json.loads(check.stdout)["writerActive"] is True

    assert proc.poll() is None, "the daemon must keep running"
    assert cli.fact_files() == before  # nothing was written by the refused commands


def test_recall_answers_with_valid_json_while_the_daemon_writes(
    daemon: tuple[Cli, subprocess.Popen[bytes]],
) -> None:
    cli, proc = daemon
    start = len(cli.fact_files())
    turns = conversation(60, seed=11, session="busy-1")
    done = threading.Event()

    def feed() -> None:
        try:
            for i in range(0, len(turns), 4):
                _send(proc, turns[i : i + 4])
                time.sleep(0.4)
        finally:
            done.set()

    # One reader through the daemon's endpoint, one reading the index in-process.
    readers = [
        cli.popen("recall", "-", "--json"),
        cli.popen("recall", "-", "--json", "--no-daemon"),
    ]
    queries = ["what tools does the team use", "where did they travel", "what was decided"]

    def ask(reader: subprocess.Popen[bytes], query: str) -> None:
        _send(reader, [query])
        answer = json.loads(_readline(reader))
        assert isinstance(answer["memories"], list) and "tokens" in answer
        for memory in answer["memories"]:
            assert memory["id"] and isinstance(memory["content"], str)

    answers = 0
    seen_counts: list[int] = []
    writer = threading.Thread(target=feed, daemon=True)
    try:
        for reader in readers:  # started (model loaded) before the writes begin
            ask(reader, queries[0])
        writer.start()
        n = 0
        while not done.is_set() or n < 6:
            for reader in readers:
                ask(reader, queries[n % len(queries)])
                answers += 1
            seen_counts.append(len(cli.fact_files()))
            n += 1
    finally:
        if writer.is_alive():
            writer.join(timeout=60)
        for reader in readers:
            if reader.stdin is not None:
                reader.stdin.close()
    for reader in readers:
        code = reader.wait(timeout=120)
        stderr = reader.stderr.read().decode() if reader.stderr else ""
        _close(reader)
        assert code == 0 and "Traceback" not in stderr, stderr
    assert answers >= 12
    # The daemon really was writing while the answers came.
    assert seen_counts[-1] > start or max(seen_counts) > min(seen_counts), seen_counts


def test_a_recall_started_while_writing_sees_the_folder_state(
    daemon: tuple[Cli, subprocess.Popen[bytes]],
) -> None:
    cli, _ = daemon
    answer = cli("recall", "uv instead of pip", "--json", "--no-daemon", "--dry", timeout=120)
    assert answer.returncode == 0, answer.stderr.decode()
    memories = json.loads(answer.stdout)["memories"]
    assert any("uv" in m["content"] for m in memories)
    paths = {m["path"] for m in memories if m["memoryKind"] != "box"}
    assert all((cli.memory / p).is_file() for p in paths)

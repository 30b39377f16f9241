"""One writer per folder, readers beside it: what runs while the daemon runs, and what is refused.

The daemon holds the writer lock for its whole life. Recall (through the daemon, or in-process
reading the index the daemon writes) must keep answering with valid JSON while memories are
written and consolidated, and never rebuilds the daemon's index. Every other writer — a second
daemon (even one with its own state directory), `consolidate`, `forget`, `doctor --repair` —
is refused with a message that says why; `doctor` without --repair only reads and works.
"""

from __future__ import annotations

import json
import select
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import engram_md.app
from engram_md.app import RecallSession
from engram_md.cli import app
from engram_md.core.config import Config
from engram_md.core.errors import IndexError_
from engram_md.core.lock import START_WAIT_SECONDS, WriterLock
from engram_md.index.lance import TABLE_NAME, connect
from engram_md.index.table import MemoryIndex

from .conftest import Cli, HashEmbedder, sample
from .rows import index_row
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


def _flat(text: str) -> str:
    """Without whitespace: the CLI wraps its messages at the terminal width."""
    return "".join(text.split())


def test_a_second_daemon_is_refused(daemon: tuple[Cli, subprocess.Popen[bytes]]) -> None:
    cli, proc = daemon
    started = time.monotonic()
    second = cli("run", input=b"", timeout=120)
    message = second.stderr.decode()
    assert second.returncode == 3, message
    assert "already writing" in message and "Traceback" not in message
    assert f"pid {proc.pid}" in message
    # It waited (a recall may hold the lock for a moment), but a daemon does not let go.
    assert time.monotonic() - started >= START_WAIT_SECONDS


def test_a_second_daemon_with_its_own_state_dir_is_refused(
    daemon: tuple[Cli, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    cli, proc = daemon
    second = Cli(tmp_path)  # run from another directory, with another state directory
    second.memory = cli.memory
    done = second("run", input=b"", timeout=120)
    message = done.stderr.decode()
    assert done.returncode == 3, message
    assert "already writing" in message and "Traceback" not in message
    assert f"pid {proc.pid}" in message and _flat(str(cli.memory)) in _flat(message)
    assert not (second.state / "index").exists()  # refused before it opened anything
    assert proc.poll() is None


def test_recall_with_its_own_state_dir_beside_the_daemon_keeps_its_own_index(
    daemon: tuple[Cli, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    cli, _ = daemon
    reader = Cli(tmp_path)
    reader.memory = cli.memory
    answer = reader("recall", "uv instead of pip", "--json", "--no-daemon", "--dry", timeout=120)
    assert answer.returncode == 0, answer.stderr.decode()
    memories = json.loads(answer.stdout)["memories"]
    assert any("uv" in m["content"] for m in memories)  # reconciled from the folder


def test_a_daemon_waits_out_a_recall_holding_the_lock_for_a_moment(cli: Cli) -> None:
    brief = WriterLock(cli.state / "lock", memory_dir=cli.memory)
    brief.acquire()  # what RecallSession does while it reconciles the index
    timer = threading.Timer(1.0, brief.release)
    timer.start()
    try:
        done = cli("run", input=b"", timeout=120)
    finally:
        timer.join()
    assert done.returncode == 0, done.stderr.decode()


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


def test_a_reader_with_another_model_leaves_the_index_alone(tmp_path: Path) -> None:
    path = tmp_path / "index"
    writer = MemoryIndex.open(path, HashEmbedder("model-a", 16))
    writer.upsert([index_row("a", "Dana uses uv instead of pip")])
    for other in (HashEmbedder("model-b", 16), HashEmbedder("model-a", 32)):
        with pytest.raises(IndexError_, match="another embedding model.*engram-md reindex"):
            MemoryIndex.open(path, other, may_rebuild=False)
    same = MemoryIndex.open(path, HashEmbedder("model-a", 16), may_rebuild=False)
    assert not same.needs_rebuild and same.count() == 1
    again = MemoryIndex.open(path, HashEmbedder("model-a", 16))
    assert not again.needs_rebuild and again.count() == 1

    # Nor does a reader create a missing table: the writer may be creating it right now.
    empty = tmp_path / "empty"
    with pytest.raises(IndexError_, match="no search index"):
        MemoryIndex.open(empty, HashEmbedder("model-a", 16), may_rebuild=False)
    assert TABLE_NAME not in connect(empty).list_tables().tables


def test_recall_beside_a_writer_refuses_an_index_built_for_another_model(
    cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = cfg.layout
    built = MemoryIndex.open(layout.index_dir, HashEmbedder("model-a", 16))
    built.upsert([index_row("a", "Dana uses uv instead of pip")])
    # This shell's configuration names another model than the daemon's.
    monkeypatch.setattr(
        engram_md.app, "open_embedder", lambda *_, **__: HashEmbedder("model-b", 16)
    )
    with WriterLock(layout.lock_path, memory_dir=layout.memory_dir):  # the daemon
        with pytest.raises(IndexError_, match="another embedding model"):
            RecallSession(cfg)
    kept = MemoryIndex.open(layout.index_dir, HashEmbedder("model-a", 16), may_rebuild=False)
    assert kept.count() == 1


def test_recall_answers_while_the_daemon_consolidates(cli: Cli) -> None:
    config = cli.root / "engram.yaml"
    config.write_text(
        "buffer:\n  max_turns: 5\nconsolidate:\n  every_extractions: 2\n  min_interval_minutes: 0\n"
    )
    epoch_path = cli.state / "consolidation.json"

    def epoch() -> int:
        try:
            return int(json.loads(epoch_path.read_text()).get("epoch", 0))
        except (OSError, ValueError):
            return 0

    def present() -> set[str]:
        return {p.relative_to(cli.memory).as_posix() for p in cli.memory.rglob("*.md")}

    proc = cli.popen("--config", str(config), "run")
    readers: list[subprocess.Popen[bytes]] = []
    try:
        assert _wait_for(lambda: (cli.state / "daemon.json").exists(), timeout=60)
        readers = [
            cli.popen("recall", "-", "--json"),
            cli.popen("recall", "-", "--json", "--no-daemon"),
        ]
        turns = conversation(60, seed=5, session="consolidating-1")
        done = threading.Event()

        def feed() -> None:
            try:
                for i in range(0, len(turns), 5):  # one extraction per 5 turns (buffer.max_turns)
                    _send(proc, turns[i : i + 5])
                    time.sleep(0.25)
            finally:
                done.set()

        seen = present()
        queries = ["what tools does the team use", "where did they travel", "who moved"]
        answers = 0
        writer = threading.Thread(target=feed, daemon=True)
        deadline = time.monotonic() + 60
        n = 0
        while not (done.is_set() and epoch() >= 2) and time.monotonic() < deadline:
            if n == len(readers):
                writer.start()  # both readers have their model loaded by now
            reader = readers[n % len(readers)]
            n += 1
            _send(reader, [queries[n % len(queries)]])
            answer = json.loads(_readline(reader, timeout=60))
            seen |= present()
            assert isinstance(answer["memories"], list) and "tokens" in answer
            for memory in answer["memories"]:
                path = memory["path"]
                assert memory["id"] and isinstance(memory["content"], str)
                # Gone only if consolidation archived it after we last looked.
                assert path in seen or (cli.memory / "archive" / path).exists(), path
            answers += 1
        writer.join(timeout=60)
        for reader in readers:
            assert reader.stdin is not None
            reader.stdin.close()
            code = reader.wait(timeout=60)
            stderr = reader.stderr.read().decode() if reader.stderr else ""
            assert code == 0 and "Traceback" not in stderr, stderr
    finally:
        for reader in readers:
            if reader.poll() is None:
                reader.kill()
                reader.wait()
            _close(reader)
        if proc.stdin is not None:
            proc.stdin.close()
        code = proc.wait(timeout=120)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        _close(proc)
    assert code == 0 and "Traceback" not in stderr and "consolidation" not in stderr, stderr
    assert answers >= 6
    assert epoch() >= 2, "the daemon consolidated while recall was answering"

"""`engram-md hook claude-code`: the hook JSON Claude Code reads, through the running daemon,
and failing open (exit 0, nothing added, one line on stderr) whenever it cannot help."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Cli, clean_env
from .test_http_api import filled, running_daemon

ENGRAM_MD = str(Path(sys.executable).parent / "engram-md")
HEAVY = ("lancedb", "numpy", "onnxruntime", "typer", "rich", "pydantic", "pyarrow", "yaml")


def event(name: str, **fields: Any) -> dict[str, Any]:
    """A hook input as Claude Code sends it: the common fields, then the event's own."""
    return {
        "session_id": "6f1c2a40-5b7e-4c1d-9a3e-0d2f8b9c7e11",
        "transcript_path": "/home/dana/.claude/projects/-home-dana-app/6f1c2a40.jsonl",
        "cwd": "/home/dana/app",
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


def run_hook(
    cli: Cli, payload: Any, *extra: str, argv: list[str] | None = None
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    command = argv or [ENGRAM_MD, "hook", "claude-code"]
    stdin = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    folders = ["--memory-dir", str(cli.memory), "--state-dir", str(cli.state)]
    # A generous --timeout: a loaded test machine must not turn an answer into a fail-open
    # (the test of the timeout gives its own, which comes later and wins).
    start = time.perf_counter()
    result = subprocess.run(
        [*command, *folders, "--timeout", "30", *extra],
        input=stdin,
        capture_output=True,
        env=clean_env(),
        cwd=cli.root,
        timeout=60,
    )
    return result, time.perf_counter() - start


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    cli = filled(tmp_path_factory.mktemp("hook"))
    with running_daemon(cli):
        yield cli


def test_a_prompt_gets_the_memory_block_as_additional_context(daemon: Cli) -> None:
    result, _ = run_hook(daemon, event("UserPromptSubmit", prompt="Is Priya allergic to anything?"))
    assert result.returncode == 0, result.stderr.decode()
    answer = json.loads(result.stdout)
    assert set(answer) == {"hookSpecificOutput"}
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    context = out["additionalContext"]
    assert context.startswith("<memory>\n") and context.endswith("\n</memory>")
    assert "peanuts" in context
    assert result.stderr == b""


def test_the_budget_bounds_the_context(daemon: Cli) -> None:
    small, _ = run_hook(daemon, event("UserPromptSubmit", prompt="Dana"), "--budget", "15")
    large, _ = run_hook(daemon, event("UserPromptSubmit", prompt="Dana"), "--budget", "1000")
    text = [json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"] for r in (small, large)]
    assert len(text[0]) < len(text[1])


def test_a_prompt_about_nothing_known_adds_nothing(daemon: Cli) -> None:
    result, _ = run_hook(
        daemon, event("UserPromptSubmit", prompt="Explain Kubernetes operator reconciliation")
    )
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""


def test_the_cli_path_answers_the_same(daemon: Cli) -> None:
    """`python -m engram_md hook ...` goes through the full command line, same answer."""
    payload = event("UserPromptSubmit", prompt="Where did Dana move?")
    fast, _ = run_hook(daemon, payload)
    slow, _ = run_hook(
        daemon, payload, argv=[sys.executable, "-m", "engram_md", "hook", "claude-code"]
    )
    assert slow.returncode == 0 and slow.stdout == fast.stdout
    assert "Lisbon" in json.loads(fast.stdout)["hookSpecificOutput"]["additionalContext"]


def test_session_start_adds_the_profile(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    (cli.memory).mkdir()
    payload = event("SessionStart", source="startup", model="claude-sonnet-4-5")
    result, _ = run_hook(cli, payload)
    assert result.returncode == 0 and result.stdout == b""  # no profile yet: nothing
    (cli.memory / "profile.md").write_text("# Dana\n\n- prefers uv over pip\n", encoding="utf-8")
    result, _ = run_hook(cli, payload)
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out == {
        "hookEventName": "SessionStart",
        "additionalContext": "<memory>\n# Dana\n\n- prefers uv over pip\n</memory>",
    }


def test_no_daemon_fails_open_fast(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    result, seconds = run_hook(cli, event("UserPromptSubmit", prompt="anything"))
    assert result.returncode == 0 and result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and "no daemon running" in lines[0] and "no memory added" in lines[0]
    assert seconds < 1.5  # bench/hook_bench.py measures it properly: tens of milliseconds


def test_a_dead_daemon_or_a_foreign_host_fails_open(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.state.mkdir()
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    advert = cli.state / "daemon.json"
    advert.write_text(
        json.dumps({"host": "127.0.0.1", "port": 9, "pid": int(gone.stdout), "token": "t"})
    )
    result, _ = run_hook(cli, event("UserPromptSubmit", prompt="anything"))
    assert result.returncode == 0 and result.stdout == b""
    assert "is gone" in result.stderr.decode()
    advert.write_text(
        json.dumps({"host": "10.1.2.3", "port": 80, "pid": os.getpid(), "token": "t"})
    )
    result, _ = run_hook(cli, event("UserPromptSubmit", prompt="anything"))
    assert result.returncode == 0 and result.stdout == b""
    assert "loopback" in result.stderr.decode()


def test_a_daemon_that_does_not_answer_times_out(tmp_path: Path) -> None:
    """A daemon that accepts the connection and never answers: the hook gives up after
    --timeout and the prompt goes on without memory."""
    cli = Cli(tmp_path)
    cli.state.mkdir()
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])  # and never answer
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    (cli.state / "daemon.json").write_text(
        json.dumps({"host": "127.0.0.1", "port": port, "pid": os.getpid(), "token": "t"})
    )
    try:
        result, seconds = run_hook(
            cli, event("UserPromptSubmit", prompt="anything"), "--timeout", "0.2"
        )
    finally:
        stop.set()
        thread.join()
        listener.close()
        for conn in held:
            conn.close()
    assert result.returncode == 0 and result.stdout == b""
    assert "timed out" in result.stderr.decode()
    assert 0.2 <= seconds < 2.0


@pytest.mark.parametrize(
    "stdin", [b"", b"{not json", b"[1, 2]", json.dumps({"prompt": "x"}).encode()]
)
def test_bad_or_other_input_fails_open(tmp_path: Path, stdin: bytes) -> None:
    result, _ = run_hook(Cli(tmp_path), stdin)
    assert result.returncode == 0 and result.stdout == b""


def test_the_hook_loads_none_of_the_heavy_libraries(tmp_path: Path) -> None:
    """What makes it start fast: no LanceDB, numpy, onnxruntime, typer, rich, pydantic."""
    probe = (
        "import json, sys\n"
        "from engram_md import hook\n"
        "sys.argv = ['engram-md', 'hook', 'claude-code', '--state-dir', sys.argv[1]]\n"
        "try:\n"
        "    hook.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "sys.stderr.write('LOADED ' + json.dumps(heavy) + '\\n')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "state")],
        input=json.dumps(event("UserPromptSubmit", prompt="anything")).encode(),
        capture_output=True,
        env=clean_env(),
        timeout=60,
    )
    loaded = result.stderr.decode().split("LOADED ", 1)[1]
    assert json.loads(loaded) == []

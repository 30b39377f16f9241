"""`engram-md integrate claude-code`: the hooks in a Claude Code settings file, shown as a diff
first, added once however often it runs, and taken out again without touching the rest."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import Cli, clean_env

ENGRAM_MD = str(Path(sys.executable).parent / "engram-md")

# A settings file as people have it: other keys, and a hook of their own on the same event.
THEIRS = {
    "model": "claude-sonnet-4-5",
    "permissions": {"allow": ["Bash(npm run test:*)"]},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "~/bin/add-branch-name.sh"}]}
        ],
        "PostToolUse": [
            {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "ruff format"}]}
        ],
    },
}


def integrate(cli: Cli, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = clean_env(HOME=str(home or cli.root / "home"))
    return subprocess.run(
        [
            ENGRAM_MD,
            "--memory-dir",
            str(cli.memory),
            "--state-dir",
            str(cli.state),
            "integrate",
            "claude-code",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=cli.root,
        timeout=60,
    )


def ours(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        hook
        for group in settings.get("hooks", {}).get(event, [])
        for hook in group["hooks"]
        if " hook claude-code " in hook["command"]
    ]


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(THEIRS, indent=2) + "\n", encoding="utf-8")
    return path


def test_dry_run_shows_the_diff_and_writes_nothing(cli: Cli, settings: Path) -> None:
    before = settings.read_bytes()
    result = integrate(cli, "--settings", str(settings), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert f"--- {settings}" in result.stdout and f"+++ {settings}" in result.stdout
    added = [line for line in result.stdout.splitlines() if line.startswith("+ ")]
    assert any("SessionStart" in line for line in added)
    assert any("hook claude-code" in line for line in added)
    assert "nothing written" in result.stdout
    assert settings.read_bytes() == before


def test_adds_both_hooks_once_and_keeps_everything_else(cli: Cli, settings: Path) -> None:
    result = integrate(cli, "--settings", str(settings))
    assert result.returncode == 0, result.stderr
    written = json.loads(settings.read_text(encoding="utf-8"))
    for event in ("UserPromptSubmit", "SessionStart"):
        (hook,) = ours(written, event)
        assert hook["type"] == "command" and hook["timeout"] == 10
        words = shlex.split(hook["command"])
        assert words[:3] == [ENGRAM_MD, "hook", "claude-code"]
        assert words[3:] == ["--memory-dir", str(cli.memory), "--state-dir", str(cli.state)]
    assert written["model"] == THEIRS["model"]
    assert written["permissions"] == THEIRS["permissions"]
    assert written["hooks"]["PostToolUse"] == THEIRS["hooks"]["PostToolUse"]
    assert written["hooks"]["UserPromptSubmit"][0] == THEIRS["hooks"]["UserPromptSubmit"][0]
    once = settings.read_bytes()
    again = integrate(cli, "--settings", str(settings))
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert settings.read_bytes() == once


def test_remove_takes_out_only_its_own_hooks(cli: Cli, settings: Path) -> None:
    assert integrate(cli, "--settings", str(settings)).returncode == 0
    result = integrate(cli, "--settings", str(settings), "--remove")
    assert result.returncode == 0, result.stderr
    assert "-" in result.stdout and "hook claude-code" in result.stdout
    assert json.loads(settings.read_text(encoding="utf-8")) == THEIRS
    again = integrate(cli, "--settings", str(settings), "--remove")
    assert again.returncode == 0 and "unchanged" in again.stdout


def test_other_folders_replace_the_old_entry(cli: Cli, settings: Path, tmp_path: Path) -> None:
    assert integrate(cli, "--settings", str(settings)).returncode == 0
    (tmp_path / "elsewhere").mkdir()
    moved = Cli(tmp_path / "elsewhere")
    assert integrate(moved, "--settings", str(settings)).returncode == 0
    written = json.loads(settings.read_text(encoding="utf-8"))
    (hook,) = ours(written, "UserPromptSubmit")
    assert str(moved.state) in hook["command"] and str(cli.state) not in hook["command"]


def test_default_and_project_settings_files(cli: Cli) -> None:
    home = cli.root / "home"
    assert integrate(cli, home=home).returncode == 0
    assert ours(json.loads((home / ".claude" / "settings.json").read_text()), "SessionStart")
    assert integrate(cli, "--project", home=home).returncode == 0
    project = json.loads((cli.root / ".claude" / "settings.json").read_text())
    assert ours(project, "UserPromptSubmit")


def test_a_broken_settings_file_is_left_alone(cli: Cli, tmp_path: Path) -> None:
    broken = tmp_path / "settings.json"
    broken.write_text('{"hooks": {', encoding="utf-8")
    result = integrate(cli, "--settings", str(broken))
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert broken.read_text(encoding="utf-8") == '{"hooks": {'


def test_the_installed_command_runs(cli: Cli, settings: Path) -> None:
    """The command written into the settings is one a shell runs: no daemon, so it adds
    nothing and exits 0, as Claude Code needs."""
    assert integrate(cli, "--settings", str(settings)).returncode == 0
    (hook,) = ours(json.loads(settings.read_text(encoding="utf-8")), "UserPromptSubmit")
    event = {"hook_event_name": "UserPromptSubmit", "prompt": "hello", "session_id": "s"}
    result = subprocess.run(
        ["sh", "-c", hook["command"]],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=clean_env(PATH="/usr/bin:/bin"),
        timeout=60,
    )
    assert result.returncode == 0 and result.stdout == ""
    assert "no daemon running" in result.stderr


# ---------------------------------------------------------------- the README's set-up

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_blocks(title: str, lang: str) -> list[str]:
    """The fenced ``lang`` blocks of the README section ``## title``, in order."""
    section = README.read_text(encoding="utf-8").split(f"\n## {title}\n", 1)[1]
    return re.findall(rf"```{lang}\n(.*?)```", section.split("\n## ", 1)[0], flags=re.S)


def claude_code_line(session: str, n: int, text: str) -> str:
    """A person's line of a Claude Code transcript, in the shape Claude Code writes."""
    return json.dumps(
        {
            "parentUuid": None,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dana/app",
            "sessionId": session,
            "version": "2.1.63",
            "gitBranch": "main",
            "type": "user",
            "message": {"role": "user", "content": text},
            "uuid": f"a1000{n:03d}-0000-4000-8000-000000000001",
            "timestamp": f"2026-03-02T09:{n:02d}:00.001Z",
        }
    )


def test_the_readme_claude_code_setup_works(tmp_path: Path) -> None:
    """The README's commands, run as written in a fresh home: the hooks land in
    ~/.claude/settings.json, the daemon reads Claude Code's transcripts, and the installed
    hook then gives a prompt its memory."""
    home = tmp_path / "home"
    session = "6f1c2a40-5b7e-4c1d-9a3e-0d2f8b9c7e11"
    project = home / ".claude" / "projects" / "-home-dana-app"
    project.mkdir(parents=True)
    # The last turn's strong signal ("I always …") has the buffer extract the batch at once;
    # without one the turns would wait for the idle flush.
    said = [
        "My sister Priya is allergic to peanuts.",
        "Hi, I'm Dana. I always use uv instead of pip.",
    ]
    lines = [claude_code_line(session, n, text) for n, text in enumerate(said)]
    (project / f"{session}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (block,) = readme_blocks("Use with Claude Code", "sh")
    env = clean_env(HOME=str(home), PATH=f"{Path(ENGRAM_MD).parent}:/usr/bin:/bin")
    log = tmp_path / "setup.log"
    with log.open("wb") as out:  # the daemon keeps the output open: a file, not a pipe
        setup = subprocess.run(
            ["bash", "-eu", "-c", block],
            env=env,
            cwd=home,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=120,
        )
    assert setup.returncode == 0, log.read_text()
    assert "+++ " in log.read_text() and "hook claude-code" in log.read_text()
    state = home / ".local" / "state" / "engram-md"
    settings = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    (hook,) = ours(settings, "UserPromptSubmit")
    event = {
        "session_id": session,
        "transcript_path": str(project / f"{session}.jsonl"),
        "cwd": "/home/dana/app",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "is Priya allergic to anything?",
    }
    try:
        deadline = time.monotonic() + 90
        while True:
            answer = subprocess.run(
                ["sh", "-c", hook["command"]],
                input=json.dumps(event),
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            assert answer.returncode == 0
            if "peanuts" in answer.stdout:
                break
            assert time.monotonic() < deadline, f"no memory: {answer.stderr}\n{log.read_text()}"
            time.sleep(0.5)
        context = json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
        assert context.startswith("<memory>") and "Priya" in context
        assert (home / "memory" / "facts").is_dir()
    finally:
        daemon = json.loads((state / "daemon.json").read_text(encoding="utf-8"))["pid"]
        os.kill(daemon, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while (state / "daemon.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
    assert not (state / "daemon.json").exists()


def test_shell_completion_is_on(tmp_path: Path) -> None:
    """bash asks the console script for completions through an environment variable."""
    env = clean_env(
        _ENGRAM_MD_COMPLETE="complete_bash", COMP_WORDS="engram-md integ", COMP_CWORD="1"
    )
    result = subprocess.run([ENGRAM_MD], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.split() == ["integrate"]

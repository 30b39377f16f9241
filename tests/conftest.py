"""Shared fixtures: sealed folders per test, the CLI as a real subprocess, the fake LLM."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TRANSCRIPTS = SHARED / "transcripts"
LOCOMO = SHARED / "bench" / "locomo-dev.json"

SAMPLES = ("generic.jsonl", "openclaw-session.jsonl", "claude-code-session.jsonl", "plain.txt")
JSON_SAMPLES = SAMPLES[:3]


def sample(name: str) -> Path:
    path = TRANSCRIPTS / name
    if not path.exists():
        pytest.skip(f"sample transcripts not available ({path})")
    return path


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: no LLM unless a test asks for one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENGRAM_"))}
    env["PYTHONWARNINGS"] = "ignore"
    env.update(extra)
    return env


class Cli:
    """Runs `python -m engram_md` against one memory/state pair."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.memory = root / "memory"
        self.state = root / "state"

    def argv(self, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "engram_md",
            "--memory-dir",
            str(self.memory),
            "--state-dir",
            str(self.state),
            *args,
        ]

    def __call__(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 180,
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            self.argv(*args),
            input=input,
            capture_output=True,
            env=env or clean_env(),
            timeout=timeout,
            cwd=self.root,
        )

    def popen(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.argv(*args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env or clean_env(),
            cwd=self.root,
        )

    def fact_files(self) -> dict[str, bytes]:
        facts = self.memory / "facts"
        if not facts.exists():
            return {}
        return {
            p.relative_to(self.memory).as_posix(): p.read_bytes()
            for p in sorted(facts.rglob("*.md"))
        }


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture
def make_cli(tmp_path: Path) -> Callable[[str], Cli]:
    def make(name: str) -> Cli:
        root = tmp_path / name
        root.mkdir()
        return Cli(root)

    return make


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server

"""Shared fixtures: sealed folders per test, the CLI as a real subprocess, the fake LLM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from engram_md.core.config import Config, load_config
from engram_md.text.embeddings import LocalMiniLM, l2_normalize

from .fake_openai import FakeOpenAI, fake_embedding

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


@pytest.fixture(autouse=True)
def short_lock_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process a refused writer gives up after 0.2 s instead of the real 5 s, so the
    many refusal tests stay quick; CLI subprocesses keep the real wait."""
    monkeypatch.setattr("engram_md.core.lock.START_WAIT_SECONDS", 0.2)


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


@pytest.fixture(scope="session")
def minilm() -> LocalMiniLM:
    """The real local model, loaded once for the whole run (loading is the slow part)."""
    return LocalMiniLM()


@pytest.fixture
def cfg(tmp_path: Path) -> Config:
    """Defaults, with this test's own memory and state folders and no environment."""
    return load_config(
        None,
        env={},
        overrides={"memory_dir": tmp_path / "memory", "state_dir": tmp_path / "state"},
    )


class HashEmbedder:
    """Deterministic vectors without meaning (hashed text), for tests about storage rather
    than ranking; records every text it was asked for."""

    def __init__(self, model_id: str = "fake", dim: int = 16) -> None:
        self.model_id = model_id
        self._dim = dim
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return l2_normalize(np.array([fake_embedding(t, self._dim) for t in texts]))

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


@contextmanager
def following_daemon(cli: Cli, workdir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`engram-md run` following ``cli``'s folder (watching an empty folder, no stdin), once
    it has started; stopped with SIGTERM afterwards, which it must survive cleanly."""
    empty = workdir / "nothing-to-watch"
    empty.mkdir()
    proc = cli.popen("run", "--watch", str(empty), "--no-stdin")
    try:
        deadline = time.monotonic() + 60
        while not (cli.state / "daemon.json").exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the daemon did not start"
            time.sleep(0.2)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def git(where: Path, *args: str) -> str:
    """Run git in ``where`` as a throwaway author; its output, or a failed assertion."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout

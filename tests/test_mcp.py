"""`engram-md mcp` through the SDK's own client, over stdio and streamable HTTP, with and
without a daemon."""

from __future__ import annotations

import json
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from engram_md.core.lock import WriterLock

from .conftest import Cli, clean_env
from .test_e2e_recall import MEMORY_KEYS as RECALL_KEYS
from .test_http_api import MEMORY_KEYS, filled, running_daemon
from .test_integrate import readme_blocks

ENGRAM_MD = str(Path(sys.executable).parent / "engram-md")

Session = Callable[[ClientSession], Awaitable[Any]]


@pytest.fixture
def folder(tmp_path: Path) -> Cli:
    return filled(tmp_path)


def over_stdio(cli: Cli, work: Session) -> Any:
    params = StdioServerParameters(
        command=ENGRAM_MD,
        args=["--memory-dir", str(cli.memory), "--state-dir", str(cli.state), "mcp"],
        env=clean_env(),
        cwd=str(cli.root),
    )

    async def run() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return anyio.run(run)


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


def test_stdio_tools_without_a_daemon(folder: Cli) -> None:
    async def work(session: ClientSession) -> dict[str, Any]:
        tools = {t.name for t in (await session.list_tools()).tools}
        found = data(await session.call_tool("search", {"query": "where does Dana live?"}))
        kept = data(
            await session.call_tool(
                "remember", {"text": "I keep my bike in the garage.", "speaker": "Dana"}
            )
        )
        (memory,) = kept["memories"]
        got = data(await session.call_tool("get_memory", {"id": memory["id"]}))
        recent = data(await session.call_tool("recent_memories", {"limit": 2}))
        again = data(await session.call_tool("search", {"query": "where is the bike?"}))
        gone = data(await session.call_tool("forget", {"id": memory["id"]}))
        missing = await session.call_tool("get_memory", {"id": memory["id"]})
        after = data(await session.call_tool("search", {"query": "where is the bike?"}))
        return {
            "tools": tools,
            "found": found,
            "memory": memory,
            "got": got,
            "recent": recent,
            "gone": gone,
            "missing": missing,
            "again": again,
            "after": after,
        }

    out = over_stdio(folder, work)
    assert out["tools"] == {"search", "get_memory", "recent_memories", "remember", "forget"}
    found = out["found"]
    assert found["memories"] and all(set(m) == RECALL_KEYS for m in found["memories"])
    assert any("Lisbon" in m["content"] for m in found["memories"])
    assert found["block"].startswith("<memory>") and "Lisbon" in found["block"]
    assert set(out["memory"]) == MEMORY_KEYS and "garage" in out["memory"]["text"]
    assert out["got"] == out["memory"]
    assert out["recent"]["memories"][0]["id"] == out["memory"]["id"]
    assert out["gone"]["forgotten"][0]["id"] == out["memory"]["id"]
    assert out["missing"].is_error and "no memory with id" in out["missing"].content[0].text
    assert not (folder.memory / out["memory"]["path"]).exists()
    # The server's own open index follows its writes: found after remember, gone after forget.
    assert any("garage" in m["content"] for m in out["again"]["memories"])
    assert not any("garage" in m["content"] for m in out["after"]["memories"])


def test_stdio_resources(folder: Cli) -> None:
    (folder.memory / "profile.md").write_text("# Dana\n\n- lives in Lisbon\n", encoding="utf-8")
    (folder.memory / "entities").mkdir(exist_ok=True)
    (folder.memory / "entities" / "person-priya.md").write_text("# Priya\n", encoding="utf-8")

    async def work(session: ClientSession) -> dict[str, Any]:
        listed = [str(r.uri) for r in (await session.list_resources()).resources]
        shapes = (await session.list_resource_templates()).resource_templates
        templates = [t.uri_template for t in shapes]
        profile = await session.read_resource("engram://profile")
        entities = await session.read_resource("engram://entities")
        page = await session.read_resource("engram://entities/person-priya")
        try:
            await session.read_resource("engram://entities/nobody")
            absent = None
        except MCPError as exc:
            absent = str(exc)
        return {
            "listed": listed,
            "templates": templates,
            "profile": profile,
            "entities": entities,
            "page": page,
            "absent": absent,
        }

    out = over_stdio(folder, work)
    assert set(out["listed"]) == {"engram://profile", "engram://entities"}
    assert out["templates"] == ["engram://entities/{name}"]
    assert "lives in Lisbon" in out["profile"].contents[0].text
    names = {e["name"] for e in json.loads(out["entities"].contents[0].text)}
    assert "person-priya" in names
    assert out["page"].contents[0].text == "# Priya\n"
    assert out["absent"] is not None and "no page" in out["absent"]


def test_a_write_is_refused_clearly_while_another_writer_holds_the_folder(folder: Cli) -> None:
    lock = WriterLock(folder.state / "lock", memory_dir=folder.memory)
    lock.acquire(wait_seconds=0)
    try:

        async def work(session: ClientSession) -> Any:
            return await session.call_tool("remember", {"text": "I like oat milk."})

        result = over_stdio(folder, work)
    finally:
        lock.release()
    assert result.is_error
    assert "pid" in result.content[0].text  # who holds it, as `run` says


@pytest.fixture
def daemon(folder: Cli) -> Iterator[Cli]:
    with running_daemon(folder):
        yield folder


def test_stdio_goes_through_the_running_daemon(daemon: Cli) -> None:
    """The daemon holds the writer lock: a remember that succeeds went through it."""

    async def work(session: ClientSession) -> tuple[Any, Any]:
        kept = data(await session.call_tool("remember", {"text": "I run on Tuesdays."}))
        found = data(await session.call_tool("search", {"query": "when does Dana run?"}))
        return kept, found

    kept, found = over_stdio(daemon, work)
    (memory,) = kept["memories"]
    assert (daemon.memory / memory["path"]).exists()
    assert any("Tuesdays" in m["content"] for m in found["memories"])


def test_streamable_http_with_a_token(folder: Cli) -> None:
    process = subprocess.Popen(
        [
            ENGRAM_MD,
            "--memory-dir",
            str(folder.memory),
            "--state-dir",
            str(folder.state),
            "mcp",
            "--http",
        ],
        env=clean_env(),
        cwd=folder.root,
        stderr=subprocess.PIPE,
    )
    advert = folder.state / "mcp.json"
    try:
        deadline = time.monotonic() + 60
        while not advert.exists():
            assert process.poll() is None, process.stderr.read().decode()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.1)
        assert stat.S_IMODE(advert.stat().st_mode) == 0o600
        info = json.loads(advert.read_text(encoding="utf-8"))
        assert info["url"].startswith("http://127.0.0.1:") and info["url"].endswith("/mcp")

        async def run() -> tuple[Any, int]:
            headers = {"Authorization": f"Bearer {info['token']}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                streamable_http_client(info["url"], http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                found = data(await session.call_tool("search", {"query": "peanuts allergy"}))
            async with httpx2.AsyncClient() as bare:
                refused = await bare.post(info["url"], json={"jsonrpc": "2.0", "id": 1})
            return found, refused.status_code

        found, refused = anyio.run(run)
        assert any("peanuts" in m["content"] for m in found["memories"])
        assert refused == 401
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    assert not advert.exists()


# ---------------------------------------------------------------- the README's set-up


def test_the_readme_mcp_client_config_works(tmp_path: Path) -> None:
    """The README's client configuration, as a client reads it: the command, its arguments
    and its environment (with /home/you as this test's home)."""
    (config,) = readme_blocks("Use over MCP", "json")
    home = tmp_path / "home"
    server = json.loads(config.replace("/home/you", str(home)))["mcpServers"]["engram-md"]
    path = f"{Path(ENGRAM_MD).parent}:/usr/bin:/bin"
    command = shutil.which(server["command"], path=path)
    assert command is not None
    params = StdioServerParameters(
        command=command,
        args=server["args"],
        env={**clean_env(HOME=str(home), PATH=path), **server["env"]},
        cwd=str(tmp_path),
    )

    async def run() -> tuple[Any, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            kept = data(await session.call_tool("remember", {"text": "I swim on Mondays."}))
            found = data(await session.call_tool("search", {"query": "which day do I swim?"}))
            return kept, found

    kept, found = anyio.run(run)
    assert (home / "memory" / kept["memories"][0]["path"]).exists()
    assert any("Mondays" in m["content"] for m in found["memories"])


@pytest.mark.skipif(not shutil.which("jq"), reason="needs jq (.ci/run installs it)")
def test_the_readme_mcp_http_commands_work(folder: Cli) -> None:
    """The README's HTTP commands, line by line: the server started in the background, then
    the token read from state/mcp.json; an SDK client with that token gets in."""
    (block,) = readme_blocks("Use over MCP", "sh")
    start, read_token = (line.split("#")[0].strip() for line in block.strip().splitlines())
    assert start.endswith("&")
    env = clean_env(
        PATH=f"{Path(ENGRAM_MD).parent}:/usr/bin:/bin",
        ENGRAM_MEMORY_DIR=str(folder.memory),
        ENGRAM_STATE_DIR=str(folder.state),
    )
    server = subprocess.Popen(
        ["bash", "-c", start.removesuffix("&").strip()],
        env=env,
        cwd=folder.root,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not (folder.state / "mcp.json").exists():
            assert server.poll() is None, server.stderr.read().decode()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.1)
        token = subprocess.run(
            ["bash", "-c", read_token], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        url = re.search(r"http://\S+/mcp", start.split("#")[0] + block).group(0)  # type: ignore[union-attr]

        async def run() -> set[str]:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return {t.name for t in (await session.list_tools()).tools}

        assert "search" in anyio.run(run)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

"""`engram-md mcp`: the memory as a Model Context Protocol server, over stdio or HTTP.

Tools: ``search`` (a recall within a token budget; each memory carries the fields of
``recall --json``), ``get_memory`` (by id), ``recent_memories``, ``remember`` (a statement
through the pipeline: deduplicated, redacted, journaled) and ``forget`` (by id, everywhere).
Resources: ``engram://profile`` (profile.md), ``engram://entities`` (the entity pages there
are) and ``engram://entities/{name}`` (one page).

While the daemon runs, every tool goes through it (:class:`Reach`): it holds the writer lock
and the warm index. Without one, the server opens the folder itself: reads without a lock,
each remember or forget under the writer lock, refused with the holder's pid while another
writer has it. Pages are read from the folder in both cases: the files are the truth.

Over HTTP (streamable HTTP, at ``/mcp``) the server listens on loopback only and every
request carries ``Authorization: Bearer <token>``; the URL and token are advertised in
``state/mcp.json`` (mode 0600), like the daemon's own endpoint.
"""

from __future__ import annotations

import hmac
import importlib.metadata
import json
import logging
import os
import re
import secrets
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.errors import EngramError, RecallServerError
from ..core.paths import MemoryLayout
from ..recall.server import MemoryOps, RecallClient, find_daemon, loopback_host, write_private
from ..recall.wire import RecallAnswer, RecallOptions

log = logging.getLogger(__name__)

T = TypeVar("T")
NAME = "engram-md"
HTTP_PATH = "/mcp"
_PAGE_NAME = re.compile(r"^[\w.-]+$")
INSTRUCTIONS = (
    "Long-term memory of the person you work with, kept as markdown facts. Call `search` "
    "with what the conversation is about before answering from what you know of them; "
    "`remember` a statement they want kept; `forget` a memory by id when they ask."
)


class Memory(MemoryOps, Protocol):
    """What the server asks of the memory: recall and the daemon's memory operations."""

    def search(self, query: str, options: RecallOptions) -> RecallAnswer: ...


class Reach:
    """The daemon when one runs, the folder itself otherwise; decided at every call, so a
    daemon started or stopped while the server runs is followed."""

    def __init__(self, layout: MemoryLayout, folder: Memory) -> None:
        self.layout = layout
        self.folder = folder

    def _client(self) -> RecallClient | None:
        # A client per call: tools run on several threads, a client holds one connection.
        endpoint = find_daemon(self.layout.daemon_endpoint_path)
        return None if endpoint is None else RecallClient(endpoint, timeout=60.0)

    def search(self, query: str, options: RecallOptions) -> RecallAnswer:
        client = self._client()
        if client is not None:
            with client:
                try:
                    return client.recall(query, options)
                except RecallServerError as exc:
                    log.warning("daemon recall failed (%s); answering in-process", exc)
        return self.folder.search(query, options)

    @contextmanager
    def _ops(self) -> Iterator[MemoryOps]:
        """The daemon's client (closed afterwards) or the folder's own operations."""
        client = self._client()
        if client is None:
            yield self.folder
            return
        with client:
            yield client

    def memory(self, memory_id: str) -> dict[str, Any] | None:
        with self._ops() as ops:
            return ops.memory(memory_id)

    def recent(self, limit: int) -> list[dict[str, Any]]:
        with self._ops() as ops:
            return ops.recent(limit)

    def remember(self, text: str, speaker: str | None) -> dict[str, Any]:
        with self._ops() as ops:
            return ops.remember(text, speaker)

    def forget(self, memory_id: str) -> dict[str, Any] | None:
        with self._ops() as ops:
            return ops.forget(memory_id)


def _expected(fn: Callable[[], T]) -> T:
    """Expected failures (a refused lock, an unreachable daemon, a read-only folder) reach
    the model as the tool's error message, not as a server fault."""
    try:
        return fn()
    except (EngramError, ValueError, OSError) as exc:
        raise ToolError(str(exc)) from exc


def build_server(memory: Memory, layout: MemoryLayout) -> MCPServer:
    """The MCP server's tools and resources over ``memory`` and the folder's pages."""
    # WARNING: the SDK logs every failed tool call at INFO, on the stderr a client shows.
    server: MCPServer = MCPServer(
        NAME,
        version=importlib.metadata.version(NAME),
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    @server.tool()
    def search(
        query: str,
        budget: int | None = None,
        top_k: int | None = None,
        include_inactive: bool = False,
    ) -> dict[str, Any]:
        """The memories that matter for `query`, best first, within `budget` tokens (4
        characters a token; the configured budget when omitted). Each memory: id, path,
        category, memoryKind, content, score, sourceTurnIds, created (when it was said),
        eventDate (the day the event happened, when known). `block` is the same as the
        <memory> block engram-md puts in front of a prompt."""
        options = RecallOptions(
            budget_tokens=budget, top_k=top_k, include_inactive=include_inactive or None
        )
        answer = _expected(lambda: memory.search(query, options))
        return {**answer.to_json(), "block": answer.render()}

    @server.tool()
    def get_memory(id: str) -> dict[str, Any]:
        """One memory by id: its category, kind, status, dates, text, entities, and what it
        supersedes or is superseded by."""
        found = _expected(lambda: memory.memory(id))
        if found is None:
            raise ToolError(f"no memory with id {id!r}")
        return found

    @server.tool()
    def recent_memories(limit: int = 20) -> dict[str, Any]:
        """The newest active memories, newest first (at most `limit`)."""
        if limit < 1:
            raise ToolError("limit must be at least 1")
        return {"memories": _expected(lambda: memory.recent(limit))}

    @server.tool()
    def remember(text: str, speaker: str | None = None) -> dict[str, Any]:
        """Remember a statement, as the person said it (`speaker`: who said it). It goes
        through the same pipeline as the conversation: secrets are redacted, a statement
        already known is confirmed rather than written twice."""
        return _expected(lambda: memory.remember(text, speaker))

    @server.tool()
    def forget(id: str) -> dict[str, Any]:
        """Forget the memory with this id everywhere (its file, the index, the graph, its
        box), leaving a tombstone without its content."""
        report = _expected(lambda: memory.forget(id))
        if report is None:
            raise ToolError(f"no memory with id {id!r}")
        return report

    @server.resource("engram://profile", name="profile", mime_type="text/markdown")
    def profile() -> str:
        """profile.md: who the person is and what they prefer, as consolidation writes it."""
        return _read_page(layout.profile_path)

    @server.resource("engram://entities", name="entities", mime_type="application/json")
    def entities() -> str:
        """The entity pages there are, each with its resource URI."""
        names = sorted(p.stem for p in layout.entities_dir.glob("*.md") if p.is_file())
        return json.dumps([{"name": n, "uri": f"engram://entities/{n}"} for n in names])

    @server.resource("engram://entities/{name}", name="entity", mime_type="text/markdown")
    def entity(name: str) -> str:
        """One entity page: what the memory knows about a person, project or thing."""
        if not _PAGE_NAME.match(name):
            raise ResourceError(f"not an entity page name: {name!r}")
        return _read_page(layout.inside(layout.entities_dir / f"{name}.md"))

    return server


def _read_page(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResourceError(f"no page at {path.name} (consolidation writes it)") from None
    except (OSError, ValueError) as exc:
        raise ResourceError(f"cannot read {path.name}: {exc}") from None


# ---------------------------------------------------------------- HTTP


class BearerAuth:
    """Refuses every HTTP request without ``Authorization: Bearer <token>`` (401)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"error": "missing or wrong token"}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve_http(
    server: MCPServer,
    layout: MemoryLayout,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
) -> None:
    """Serve streamable HTTP on loopback until interrupted; advertise it in state/mcp.json."""
    bind = loopback_host(host)
    token = token or secrets.token_urlsafe(32)
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bind, port))
    except OSError as exc:
        sock.close()
        raise RecallServerError(f"cannot listen for MCP on {bind} port {port}: {exc}") from exc
    sock.listen(64)
    bound = sock.getsockname()[1]
    where = f"[{bind}]" if family == socket.AF_INET6 else bind
    url = f"http://{where}:{bound}{HTTP_PATH}"
    app = BearerAuth(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=bind), token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    advert = layout.state_dir / "mcp.json"
    record = {"url": url, "pid": os.getpid(), "token": token}
    write_private(advert, json.dumps(record, indent=2) + "\n")
    log.warning("MCP server at %s (token in %s)", url, advert)
    # uvicorn stops on SIGTERM, then sends the signal again to the process; as an interrupt
    # it unwinds through here, so the advertisement is withdrawn.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
        _withdraw(advert, token)


def _withdraw(advert: Path, token: str) -> None:
    """Remove the advertisement, unless another server has replaced it since."""
    try:
        ours = json.loads(advert.read_text(encoding="utf-8")).get("token") == token
    except (OSError, ValueError, AttributeError):
        return
    if ours:
        advert.unlink(missing_ok=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def serve_stdio(server: MCPServer) -> None:
    server.run("stdio")

"""Recall over loopback HTTP: the daemon answers, so `engram-md recall` skips start-up.

Loading the embedding model and the index takes seconds; a recall on a warm process takes
milliseconds. While `engram-md run` is up it serves recall from what it already holds, and
advertises where in ``state/daemon.json`` (host, port, pid and a bearer token, mode 0600). A
client that finds no live daemon, or gets any error from it, recalls in-process instead.

Protocol (HTTP/1.1, keep-alive, JSON both ways, every request carries
``Authorization: Bearer <token>``)::

    POST /recall  {"query", "budget", "top_k", "include_inactive", "explain", "record_access"}
        200  a RecallAnswer's JSON (wire.py) + {"block": the rendered <memory> block, for
             clients that only print it; RecallClient renders the same block itself}
        400  bad JSON or fields       401  wrong or missing token
        413  body over 1 MiB          500  recall itself failed (the server keeps running)
    GET /health
        200  {"ok": true, "pid", "memories"}
    GET /memory/<id>
        200  the memory's JSON (see MemoryOps)   404  no memory has that id
    GET /recent?limit=N
        200  {"memories": [the newest memories' JSON]}   400  a limit that is no positive int
    POST /remember  {"text", "speaker"?}
        200  what the statement became: {"status", "id"?, "path"?, ...}
    POST /forget  {"id"}
        200  the forget report: {"forgotten": [...], ...}   404  no memory has that id
    memory operations answer 503 while the daemon cannot run them (it is stopping, or its
    writer is busy longer than WRITE_WAIT_SECONDS)
    anything else: 404 (unknown path), 411 (chunked body), 501 (other methods)

Every error answer is ``{"error": message}``. The HTTP layer is meant to cost well under a
millisecond next to embedding and search: no per-request logging, TCP_NODELAY on both ends,
and each answer leaves in one write.
"""

from __future__ import annotations

import hmac
import http.client
import ipaddress
import json
import logging
import os
import secrets
import socket
import socketserver
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, overload
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ..core.atomic import TMP_MARKER
from ..core.errors import ConfigError, RecallServerError
from ..core.lock import pid_alive
from .wire import DEFAULT_OPTIONS, RecallAnswer, RecallOptions, read_request, request_json

if TYPE_CHECKING:  # the recall stack (LanceDB, the model) loads only where it runs
    from .recaller import Recaller

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20
# An idle keep-alive connection holds a thread; a client that comes back later reconnects.
IDLE_TIMEOUT_SECONDS = 60.0
# How long stop() may wait for the serving loop to notice it should end.
_POLL_SECONDS = 0.25
_JSON = "application/json"
MAX_RECENT = 1000  # GET /recent answers at most this many memories
_MEMORY_PREFIX = "/memory/"
_NO_MEMORY = "no memory with id"


class MemoryOps(Protocol):
    """The memory operations the daemon serves beside recall, over its own opened folder.

    A memory's JSON: ``{"id", "path", "category", "kind", "status", "created", "validAt",
    "eventDate", "text", "entities", "supersedes", "supersededBy"}``. A ValueError is a bad
    request (400); a RecallServerError means the daemon cannot run it now (503).
    """

    def memory(self, memory_id: str) -> dict[str, Any] | None:
        """The memory with this id, or None."""

    def recent(self, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` newest active memories, newest first."""

    def remember(self, text: str, speaker: str | None) -> dict[str, Any]:
        """Remember a statement through the pipeline (deduplicated, redacted, journaled)."""

    def forget(self, memory_id: str) -> dict[str, Any] | None:
        """Forget the memory with this id everywhere; None when no memory has it."""


def loopback_host(host: str) -> str:
    """``host`` as a loopback IP literal, or ConfigError: the token travels in clear text and
    recall answers carry memory content, so the endpoint must never leave the machine."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(
            f"recall.host must be a loopback address (127.0.0.1, ::1 or localhost), got {host!r}"
        ) from None
    if not address.is_loopback:
        raise ConfigError(f"recall.host must be a loopback address, got {host!r}")
    return str(address)


@dataclass(frozen=True)
class Endpoint:
    """Where a running daemon answers recall, as advertised in state/daemon.json."""

    host: str
    port: int
    pid: int
    token: str


# ---------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "engram-md"
    sys_version = ""
    # Buffer writes: status line, headers and body go out in one segment when the handler
    # flushes after each request (an unbuffered header write followed by a body write is
    # what Nagle + delayed ACK turn into a 40 ms stall).
    wbufsize = -1
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a log line per request would cost more than the request."""

    # do_GET / do_POST: the names http.server dispatches to.
    def do_GET(self) -> None:
        if not self._authorized() or self._read_body() is None:
            return
        url = urlsplit(self.path)
        if url.path.startswith(_MEMORY_PREFIX) and len(url.path) > len(_MEMORY_PREFIX):
            memory_id = unquote(url.path[len(_MEMORY_PREFIX) :])
            self._memory_op(lambda ops: ops.memory(memory_id), missing=memory_id)
            return
        if url.path == "/recent":
            try:
                limit = _limit(parse_qs(url.query).get("limit", ["20"])[-1])
            except ValueError as exc:
                self._send(400, {"error": f"bad request: {exc}"})
                return
            self._memory_op(lambda ops: {"memories": ops.recent(limit)})
            return
        if url.path != "/health":
            self._send(404, {"error": f"no such endpoint: GET {self.path}"})
            return
        try:
            memories = self.server.recaller.index.count()
        except Exception as exc:  # a broken index is reported, not fatal to the server
            log.warning("health check failed", exc_info=True)
            self._send(500, {"error": f"index unreadable: {exc}"})
            return
        self._send(200, {"ok": True, "pid": os.getpid(), "memories": memories})

    def do_POST(self) -> None:
        if not self._authorized():
            return
        body = self._read_body()
        if body is None:
            return
        if self.path in ("/remember", "/forget"):
            self._write_op(body)
            return
        if self.path != "/recall":
            self._send(404, {"error": f"no such endpoint: POST {self.path}"})
            return
        # ValueError: bad JSON, UTF-8 or fields; RecursionError: JSON nested too deep.
        try:
            query, options = read_request(json.loads(body))
        except (ValueError, RecursionError) as exc:
            self._send(400, {"error": f"bad request: {exc}"})
            return
        try:
            result = self.server.recaller.recall(query, options)
            answer = result.answer(explain=options.explain)
            payload = {**answer.to_json(), "block": answer.render()}
        except Exception as exc:  # one failed query must not end the daemon
            log.warning("recall request failed", exc_info=True)
            self._send(500, {"error": f"recall failed: {exc}"})
            return
        self._send(200, payload)

    def _write_op(self, body: bytes) -> None:
        """POST /remember or /forget: read the body, then run the operation."""
        try:
            data = json.loads(body)
            if self.path == "/remember":
                text, speaker = _remember_request(data)
                self._memory_op(lambda ops: ops.remember(text, speaker))
            else:
                memory_id = _forget_request(data)
                self._memory_op(lambda ops: ops.forget(memory_id), missing=memory_id)
        except (ValueError, RecursionError) as exc:
            self._send(400, {"error": f"bad request: {exc}"})

    def _memory_op(self, run: Any, *, missing: str | None = None) -> None:
        """Answer with what ``run(ops)`` returns; None is a 404 for the id ``missing``."""
        ops = self.server.memory
        if ops is None:
            self._send(404, {"error": f"no such endpoint: {self.command} {self.path}"})
            return
        try:
            payload = run(ops)
        except ValueError as exc:
            self._send(400, {"error": f"bad request: {exc}"})
            return
        except RecallServerError as exc:
            self._send(503, {"error": str(exc)})
            return
        except Exception as exc:  # one failed operation must not end the daemon
            log.warning("%s %s failed", self.command, self.path, exc_info=True)
            self._send(500, {"error": f"{self.path.split('?')[0].lstrip('/')} failed: {exc}"})
            return
        if payload is None:
            self._send(404, {"error": f"{_NO_MEMORY} {missing!r}"})
            return
        self._send(200, payload)

    # ------------------------------------------------------------ helpers

    def _authorized(self) -> bool:
        given = self.headers.get("Authorization", "")
        expected = "Bearer " + self.server.token
        if hmac.compare_digest(given.encode(), expected.encode()):
            return True
        # Closing spares reading a body from someone who does not hold the token.
        self._send(401, {"error": "missing or wrong token"}, close=True)
        return False

    def _content_length(self) -> int | None:
        """The declared body length, or None after answering a request we will not read."""
        if self.headers.get("Transfer-Encoding"):
            self._send(411, {"error": "send a Content-Length, not a chunked body"}, close=True)
            return None
        raw = self.headers.get("Content-Length", "0")
        try:
            length = int(raw)
        except ValueError:
            length = -1
        if length < 0:
            self._send(400, {"error": f"bad Content-Length: {raw!r}"}, close=True)
            return None
        if length > MAX_BODY_BYTES:
            self._send(
                413, {"error": f"request body over {MAX_BODY_BYTES} bytes ({length})"}, close=True
            )
            return None
        return length

    def _read_body(self) -> bytes | None:
        length = self._content_length()
        if length is None:
            return None
        body = self.rfile.read(length)
        if len(body) != length:
            self.close_connection = True
            return None
        return body

    def _send(self, status: int, payload: dict[str, Any], *, close: bool = False) -> None:
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", _JSON)
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Port 0 is the default, so reuse only matters for a configured port after a restart.
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        recaller: Recaller,
        token: str,
        idle_timeout: float,
        memory: MemoryOps | None = None,
    ) -> None:
        self.recaller = recaller
        self.memory = memory
        self.token = token
        self.idle_timeout = idle_timeout
        self.accepted = 0
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup of the host for a name nobody
        # here reads; on a machine with broken DNS that alone takes seconds.
        socketserver.TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        with self._open_lock:
            self._open.add(conn)
            self.accepted += 1
        return conn, addr

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The default prints a traceback to stderr; what lands here is a client that went
        # away mid-answer (or stop() closing its connection), which is routine.
        log.debug("recall connection from %s ended abruptly", client_address, exc_info=True)

    def close_connections(self) -> None:
        """End kept-alive connections, so no handler thread answers after stop()."""
        with self._open_lock:
            conns = list(self._open)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone


class RecallServer:
    """Serves one :class:`Recaller` on a loopback port and advertises it in a file."""

    def __init__(
        self,
        recaller: Recaller,
        endpoint_path: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        idle_timeout: float = IDLE_TIMEOUT_SECONDS,
        memory: MemoryOps | None = None,
    ) -> None:
        bind_host = loopback_host(host)
        self.endpoint_path = endpoint_path
        self._token = secrets.token_urlsafe(32)
        try:
            self._http = _HTTPServer((bind_host, port), recaller, self._token, idle_timeout, memory)
        except OSError as exc:
            raise RecallServerError(
                f"cannot listen for recall on {bind_host} port {port}: {exc}"
            ) from exc
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    @property
    def host(self) -> str:
        return str(self._http.server_address[0])

    @property
    def connections_accepted(self) -> int:
        """Connections opened so far: with keep-alive, a batch of queries is one."""
        return self._http.accepted

    def start(self) -> None:
        """Serve in a background thread, then advertise the endpoint."""
        if self._thread is not None or self._stopped:
            raise RecallServerError("a recall server can be started once")
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": _POLL_SECONDS},
            name="engram-recall-server",
            daemon=True,
        )
        self._thread.start()
        endpoint = {"host": self.host, "port": self.port, "pid": os.getpid(), "token": self._token}
        try:
            write_private(self.endpoint_path, json.dumps(endpoint, indent=2) + "\n")
        except OSError as exc:
            self.stop()
            raise RecallServerError(
                f"cannot write the recall endpoint file {self.endpoint_path}: {exc}"
            ) from exc

    def stop(self) -> None:
        """Stop serving and withdraw the endpoint file (unless another server replaced it)."""
        if self._stopped:
            return
        self._stopped = True
        if self._thread is not None:
            # shutdown() returns once the serving loop next wakes up, up to a poll interval
            # away; an empty connection wakes it at once.
            stopper = threading.Thread(target=self._http.shutdown, daemon=True)
            stopper.start()
            while stopper.is_alive():
                self._wake()
                stopper.join(0.02)
            self._thread.join()
        self._http.server_close()
        self._http.close_connections()
        self._remove_endpoint()

    def _wake(self) -> None:
        try:
            socket.create_connection((self.host, self.port), timeout=0.5).close()
        except OSError:
            pass  # the loop wakes on its own within the poll interval anyway

    def __enter__(self) -> RecallServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _remove_endpoint(self) -> None:
        try:
            current = json.loads(self.endpoint_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if (
            isinstance(current, dict)
            and current.get("pid") == os.getpid()
            and current.get("token") == self._token
        ):
            self.endpoint_path.unlink(missing_ok=True)


def _limit(raw: str) -> int:
    """The ``limit`` of GET /recent: 1 to MAX_RECENT."""
    try:
        limit = int(raw)
    except ValueError:
        raise ValueError(f"limit is not an integer: {raw!r}") from None
    if not 1 <= limit <= MAX_RECENT:
        raise ValueError(f"limit must be 1 to {MAX_RECENT}, got {limit}")
    return limit


def _text_field(data: Any, key: str, *, required: bool) -> str | None:
    if not isinstance(data, dict):
        raise ValueError("the body is not a JSON object")
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key!r} must be a non-empty string")
    return value


def _remember_request(data: Any) -> tuple[str, str | None]:
    """The text and speaker of a POST /remember body."""
    unknown = sorted(set(data) - {"text", "speaker"}) if isinstance(data, dict) else []
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(map(repr, unknown))}")
    text = _text_field(data, "text", required=True)
    assert text is not None
    return text, _text_field(data, "speaker", required=False)


def _forget_request(data: Any) -> str:
    """The id of a POST /forget body."""
    memory_id = _text_field(data, "id", required=True)
    assert memory_id is not None
    return memory_id.strip()


def write_private(path: Path, text: str) -> None:
    """Atomic write of a file only its owner may read (it holds the token).

    The temp file is created 0600, so the token is never readable by others, not even for
    the moment between writing and a later chmod.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_MARKER}{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)  # O_CREAT's mode does not apply to a leftover temp file
            os.write(fd, text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------- client


def find_daemon(endpoint_path: Path) -> Endpoint | None:
    """The advertised endpoint if its daemon is alive; None when there is nothing to ask."""
    try:
        data = json.loads(endpoint_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    host, port, pid, token = (data.get(k) for k in ("host", "port", "pid", "token"))
    if not (
        isinstance(host, str)
        and isinstance(token, str)
        and token
        and _is_int(port)
        and 0 < port < 65536
        and _is_int(pid)
        and pid > 0  # os.kill(0, ...) would address our own process group
    ):
        return None
    try:
        host = loopback_host(host)
    except ConfigError:
        return None  # never send the token off the machine, whatever the file says
    if not pid_alive(pid):  # it may exist yet not be ours: the connection attempt tells
        return None
    return Endpoint(host, port, pid, token)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class _Connection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        assert self.sock is not None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class RecallClient:
    """Asks a running daemon for recall over one kept-alive connection.

    Every failure — refused, timed out, an error status, an unreadable answer — is a
    RecallServerError, which tells the caller to recall in-process instead.
    """

    def __init__(self, endpoint: Endpoint, *, timeout: float = 5.0) -> None:
        self.endpoint = endpoint
        self._conn = _Connection(endpoint.host, endpoint.port, timeout=timeout)
        self._headers = {
            "Authorization": f"Bearer {endpoint.token}",
            "Content-Type": _JSON,
            "Accept": _JSON,
        }
        self._used = False

    def recall(self, query: str, options: RecallOptions = DEFAULT_OPTIONS) -> RecallAnswer:
        body = json.dumps(request_json(query, options)).encode()
        answer = self._request("POST", "/recall", body)
        try:
            return RecallAnswer.from_json(answer)
        except ValueError as exc:
            where = f"{self.endpoint.host}:{self.endpoint.port}"
            raise RecallServerError(
                f"recall daemon at {where} answered an unreadable recall: {exc}"
            ) from exc

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health", None)

    def memory(self, memory_id: str) -> dict[str, Any] | None:
        """The memory's JSON (see MemoryOps), or None when no memory has the id."""
        return self._request("GET", _MEMORY_PREFIX + quote(memory_id, safe=""), None, missing=True)

    def recent(self, limit: int) -> list[dict[str, Any]]:
        answer = self._request("GET", f"/recent?limit={limit}", None)
        memories = answer.get("memories")
        if not isinstance(memories, list):
            raise RecallServerError("the daemon's recent memories are not a list")
        return memories

    def remember(self, text: str, speaker: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"text": text}
        if speaker is not None:
            body["speaker"] = speaker
        return self._request("POST", "/remember", json.dumps(body).encode())

    def forget(self, memory_id: str) -> dict[str, Any] | None:
        """The forget report, or None when no memory has the id."""
        body = json.dumps({"id": memory_id}).encode()
        return self._request("POST", "/forget", body, missing=True)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RecallClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @overload
    def _request(
        self, method: str, path: str, body: bytes | None, *, missing: Literal[False] = False
    ) -> dict[str, Any]: ...

    @overload
    def _request(
        self, method: str, path: str, body: bytes | None, *, missing: Literal[True]
    ) -> dict[str, Any] | None: ...

    def _request(
        self, method: str, path: str, body: bytes | None, *, missing: bool = False
    ) -> dict[str, Any] | None:
        """The answer's JSON object; with ``missing``, None for a 404 (no such memory)."""
        where = f"{self.endpoint.host}:{self.endpoint.port}"
        # A kept-alive connection the server has since closed (idle timeout) fails on first
        # use without the request having been seen: reconnect and send it once more.
        attempts = 2 if self._used else 1
        for attempt in range(attempts):
            try:
                self._conn.request(method, path, body=body, headers=self._headers)
                response = self._conn.getresponse()
                data = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self._conn.close()
                if attempt + 1 < attempts:
                    continue
                raise RecallServerError(
                    f"recall daemon at {where} dropped the connection: {exc}"
                ) from exc
            except (OSError, http.client.HTTPException) as exc:
                self._conn.close()
                reason = (
                    "timed out" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
                )
                raise RecallServerError(
                    f"recall daemon at {where} is unreachable: {reason}"
                ) from exc
        self._used = True
        if response.will_close:
            self._conn.close()
        try:
            answer = json.loads(data)
        except ValueError as exc:
            raise RecallServerError(
                f"recall daemon at {where} answered {response.status} with non-JSON"
            ) from exc
        if missing and response.status == 404 and isinstance(answer, dict):
            if str(answer.get("error")).startswith(_NO_MEMORY):
                return None  # an older daemon's "no such endpoint" 404 stays an error
        if response.status != 200:
            message = answer.get("error") if isinstance(answer, dict) else None
            raise RecallServerError(
                f"recall daemon at {where} answered {response.status}: {message or response.reason}"
            )
        if not isinstance(answer, dict):
            raise RecallServerError(f"recall daemon at {where} answered with a non-object")
        return answer

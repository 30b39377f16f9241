"""A fake OpenAI-compatible HTTP server for the test suite.

It speaks just enough of the real wire format that the real ``openai`` client works against it:
``POST /v1/chat/completions``, ``POST /v1/responses``, ``POST /v1/embeddings`` and
``GET /v1/models``. Every request is recorded. Faults can be scripted (one per request, in
order) or drawn at random with a seeded rate, so retry and error paths are exercised through the
real client and the real network stack instead of through mocks.

The default extraction answer (:func:`fake_extract`) is a generic, deterministic rule set: it
reads the rendered turn lines back out of the prompt and turns first-person or decision-like
sentences of user turns into third-person facts. It knows nothing about any sample transcript.
Consolidation judge calls (recognised by the judge's system prompt) get :func:`fake_judge`
instead, so the daemon's judge sees answers it can use.

Usage::

    with FakeOpenAI() as server:
        server.script("429", "malformed")
        cfg = server.llm_config(api="chat")
        ...

    @pytest.fixture
    def fake_openai():
        yield from fake_openai_server()
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import re
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engram_md.consolidate.judge import SYSTEM_PROMPT as JUDGE_SYSTEM_PROMPT
from engram_md.core.config import LLMConfig
from engram_md.text.hashing import normalize_text

FAULTS = ("timeout", "429", "500", "malformed", "empty", "junk_schema")

ENDPOINTS = ("chat/completions", "responses", "embeddings")


@dataclass(frozen=True)
class Reply:
    """A scripted, literal message content for the next chat or responses request."""

    content: str


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # e.g. "/v1/chat/completions"
    body: Any  # parsed JSON body (None for GET or an unparsable body)
    fault: str | None  # the fault injected into the answer, if any
    headers: dict[str, str] = field(default_factory=dict)

    def prompt_text(self) -> str:
        """All message text of a chat or responses request, joined (system first)."""
        return _prompt_text(self.path, self.body)


# ---- the default extraction behaviour ------------------------------------------------------

# `[<turn id>] <ISO timestamp> <speaker name> (<role>): <content>`; continuation lines indented.
_TURN_LINE = re.compile(
    r"^\[(?P<id>[^\]\s]+)\] (?P<ts>\S+) (?P<name>.+?) \((?P<role>user|assistant|system)\): "
    r"?(?P<content>.*)$"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")

_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'll|I'd|me|my|mine|myself|we|we're|our|us)\b", re.I)
_CATEGORY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("correction", re.compile(r"\b(actually|no longer|correction)\b", re.I)),
    ("preference", re.compile(r"\b(prefer\w*|always|never|like|love|hate|favou?rite)\b", re.I)),
    ("decision", re.compile(r"\b(decided|decide|agreed|chose|going with)\b", re.I)),
    ("correction", re.compile(r"\bnot\b", re.I)),
    ("commitment", re.compile(r"\b(will|going to|promise[ds]?)\b|'ll\b", re.I)),
    ("moment", re.compile(r"\b(yesterday|failed|happened|broke|crashed)\b", re.I)),
)
_CUE = re.compile(
    "|".join(f"(?:{p.pattern})" for _, p in _CATEGORY_RULES) + r"|\b(decided|agreed)\b", re.I
)

# Words between "I" and its verb that do not take the verb's agreement.
_ADVERBS = frozenset(
    "always never usually really also just still often actually now mostly sometimes "
    "generally rarely already even only".split()
)
# Forms that stay the same after a third-person subject.
_INVARIANT = frozenset(
    "will would can could should must might may shall did was used had "
    "won't wouldn't can't couldn't shouldn't didn't wasn't "
    # common irregular past tenses (regular ones end in -ed)
    "said went made got took told thought knew saw came left found sent wrote ran began "
    "bought brought felt kept met paid put set spent lost built heard meant gave".split()
)
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "go": "goes"}


def _third_person(verb: str) -> str:
    lower = verb.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _INVARIANT or lower.endswith("ed") or not lower.isalpha():
        return verb
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    return verb + "s"


def third_person(sentence: str, name: str) -> str:
    """Rewrite first-person references as statements about ``name``.

    "I always use uv" -> "Dana always uses uv"; "my team" -> "Dana's team";
    "we decided" -> "Dana and colleagues decided". Good enough for a fake, and generic.
    """
    # Leading fillers carry nothing: "And please ...", "Yes, I ...".
    out = re.sub(r"^(?:(?:and|but|so|also|yes|ok|okay|well)\b[,]?\s+)+", "", sentence, flags=re.I)
    # A request to the assistant becomes a statement of what the speaker wants.
    out = re.sub(r"^please\s+", f"{name} asks the assistant to ", out, flags=re.I)
    out = re.sub(r"\bI'm\b", f"{name} is", out)
    out = re.sub(r"\bI've\b", f"{name} has", out)
    out = re.sub(r"\bI'll\b", f"{name} will", out)
    out = re.sub(r"\bI'd\b", f"{name} would", out)

    def subject(match: re.Match[str]) -> str:
        words = match.group(2).split(" ")
        for i, word in enumerate(words):
            if word.lower() not in _ADVERBS:
                words[i] = _third_person(word)
                break
        return f"{name} " + " ".join(words)

    out = re.sub(r"\bI( )((?:[\w']+ ){0,2}[\w']+)", subject, out)
    out = re.sub(r"\b(my|our)\b", f"{name}'s", out, flags=re.I)
    out = re.sub(r"\b(me|myself)\b", name, out)
    out = re.sub(r"\b(we're)\b", f"{name} and colleagues are", out, flags=re.I)
    out = re.sub(r"\b(we|us)\b", f"{name} and colleagues", out, flags=re.I)
    # A self-introduction ("I'm Dana, I work ...") says nothing once the name is the subject.
    out = re.sub(rf"^{re.escape(name)} is {re.escape(name)}\b[,.]?\s*", "", out)
    return out[:1].upper() + out[1:]


def _category(sentence: str) -> str:
    for category, pattern in _CATEGORY_RULES:
        if pattern.search(sentence):
            return category
    return "fact"


def parse_turn_lines(prompt_text: str) -> list[dict[str, str]]:
    """The rendered turns in a prompt: id, ts, name, role, content (continuations joined)."""
    turns: list[dict[str, str]] = []
    for line in prompt_text.splitlines():
        match = _TURN_LINE.match(line)
        if match:
            turns.append(match.groupdict())
        elif turns and line.startswith("    "):
            turns[-1]["content"] += "\n" + line.strip()
    return turns


def fake_extract(prompt_text: str) -> dict[str, Any]:
    """A plausible extraction answer for a prompt, by simple generic rules."""
    facts: list[dict[str, Any]] = []
    for turn in parse_turn_lines(prompt_text):
        if turn["role"] != "user":
            continue
        for raw in _SENTENCE_SPLIT.split(turn["content"]):
            sentence = raw.strip()
            if len(sentence.split()) < 3 or sentence.endswith("?"):
                continue
            if not (_FIRST_PERSON.search(sentence) or _CUE.search(sentence)):
                continue
            content = third_person(sentence, turn["name"])
            if content[-1] not in ".!":
                content += "."
            facts.append(
                {
                    "category": _category(sentence),
                    "content": content,
                    "confidence": 0.9,
                    "tags": [],
                    "entities": [],
                    "source_turn_ids": [turn["id"]],
                }
            )
    return {"facts": facts}


# ---- the default consolidation-judge behaviour ---------------------------------------------

# `[<ref>] (<category>, <memory kind>, <YYYY-MM-DD>) <statement>`: the NEW fact is ref N, the
# EXISTING ones E1, E2, ... (engram_md.consolidate.judge.build_prompt; statements are on one line).
_JUDGE_LINE = re.compile(r"^\[(?P<ref>N|E\d+)\] \([^)]*\) (?P<text>.*)$")


def is_judge_prompt(prompt_text: str) -> bool:
    """Whether a request is a consolidation judge call: the judge always sends its own system
    prompt, verbatim, and the imported constant keeps this in step with any rewording."""
    return JUDGE_SYSTEM_PROMPT in prompt_text


def fake_judge(prompt_text: str) -> dict[str, Any]:
    """A judge answer for a rendered cluster: one decision per EXISTING ref, in prompt order.

    MERGE when the statement equals the NEW one after :func:`normalize_text` (case, punctuation
    and whitespace: the normalisation content hashes use), ADD otherwise. Telling UPDATE or
    INVALIDATE from ADD takes reading the meaning, and any rule for that here would be tuned to
    particular data; tests that need those actions script a Reply.
    """
    statements = {
        match["ref"]: normalize_text(match["text"])
        for match in map(_JUDGE_LINE.match, prompt_text.splitlines())
        if match
    }
    new = statements.pop("N", None)
    return {"decisions": [_decision(ref, text == new) for ref, text in statements.items()]}


def _decision(ref: str, same: bool) -> dict[str, str]:
    if same:
        return {"existing": ref, "action": "MERGE", "reason": "same statement"}
    return {"existing": ref, "action": "ADD", "reason": "different statement"}


def fake_answer(prompt_text: str) -> str:
    """The default message content: a judge answer to a judge call, else an extraction."""
    if is_judge_prompt(prompt_text):
        return json.dumps(fake_judge(prompt_text))
    return json.dumps(fake_extract(prompt_text))


# ---- wire helpers --------------------------------------------------------------------------


def _message_text(content: Any) -> str:
    """Text of a message's content: a string, or a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _prompt_text(path: str, body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if path.endswith("/chat/completions"):
        messages = body.get("messages") or []
    elif path.endswith("/responses"):
        raw = body.get("input")
        messages = [{"content": raw}] if isinstance(raw, str) else list(raw or [])
        if body.get("instructions"):
            messages.insert(0, {"content": body["instructions"]})
    else:
        return ""
    return "\n".join(_message_text(m.get("content")) for m in messages if isinstance(m, dict))


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def fake_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic unit vector for ``text``: same text, same vector; no meaning."""
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}\x1f{text}".encode()).digest()
        for i in range(0, len(digest), 4):
            (n,) = struct.unpack("<I", digest[i : i + 4])
            values.append(n / 0xFFFFFFFF * 2.0 - 1.0)
        counter += 1
    values = values[:dim]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


_MALFORMED_CONTENT = '{"facts": [{"category": "fact", "content": "unterminated'
_JUNK_CONTENT = '{"memories": [{"text": "something", "score": "high"}], "ok": true}'


class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1 (a free port), run in a background thread."""

    def __init__(
        self,
        *,
        dim: int = 64,
        timeout_sleep: float = 1.0,
        model: str = "fake-model",
        responder: Callable[[str], str] | None = None,
    ) -> None:
        self.dim = dim
        # How long a "timeout" fault stalls; longer than the client timeout under test.
        self.timeout_sleep = timeout_sleep
        self.model = model
        # Prompt text -> message content; the default is fake_answer (judge or extraction).
        self.responder: Callable[[str], str] = responder or fake_answer
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._queues: dict[str | None, deque[str | Reply]] = {None: deque()}
        self._rate = 0.0
        self._rate_kinds: tuple[str, ...] = FAULTS
        self._rng = random.Random(0)
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    def start(self) -> FakeOpenAI:
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        server = _QuietServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wake any handler stalled in a "timeout" fault
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            # Kept-alive client connections would otherwise still be served after close().
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def llm_config(self, **overrides: Any) -> LLMConfig:
        """An LLMConfig pointing at this server, tuned for fast tests."""
        values: dict[str, Any] = {
            "base_url": self.base_url,
            "api_key": "test-key",
            "model": self.model,
            "timeout_seconds": 0.3,
            "max_retries": 2,
            "backoff_seconds": 0.0,
        }
        values.update(overrides)
        return LLMConfig(**values)

    # ---- fault injection

    def script(self, *items: str | Reply, endpoint: str | None = None) -> None:
        """Queue faults (names from FAULTS) or literal Replies, one per request, in order.

        With ``endpoint`` ("chat/completions", "responses", "embeddings") they are consumed
        only by requests to that endpoint; otherwise by any POST request. An endpoint's own
        queue is served before the shared one.
        """
        if endpoint is not None and endpoint not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {endpoint!r}; expected one of {ENDPOINTS}")
        for item in items:
            if isinstance(item, str) and item not in FAULTS:
                raise ValueError(f"unknown fault {item!r}; expected one of {FAULTS}")
        with self._lock:
            self._queues.setdefault(endpoint, deque()).extend(items)

    def fault_rate(self, p: float, seed: int = 0, kinds: tuple[str, ...] = FAULTS) -> None:
        """Inject a random fault (from ``kinds``) into a fraction ``p`` of unscripted requests."""
        unknown = set(kinds) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}")
        with self._lock:
            self._rate = p
            self._rate_kinds = kinds
            self._rng = random.Random(seed)

    def pending(self) -> int:
        """Scripted items not consumed yet."""
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def requests_to(self, endpoint: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == f"/v1/{endpoint}"]

    def _next_item(self, endpoint: str) -> str | Reply | None:
        with self._lock:
            for key in (endpoint, None):
                queue = self._queues.get(key)
                if queue:
                    return queue.popleft()
            if self._rate > 0 and self._rng.random() < self._rate:
                return self._rng.choice(self._rate_kinds)
        return None

    def _track(self, conn: socket.socket, alive: bool) -> None:
        with self._lock:
            if alive:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _stall(self) -> None:
        self._closing.wait(self.timeout_sleep)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-request (its timeout fired) is part of the tests.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI  # set on the per-server subclass
    protocol_version = "HTTP/1.1"

    # Quiet: the test output is not the place for an access log.
    def log_message(self, format: str, *args: Any) -> None:
        pass

    # ---- plumbing

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fake._track(self.connection, True)

    def finish(self) -> None:
        self.fake._track(self.connection, False)
        try:
            super().finish()
        except OSError:
            pass

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            # The client gave up (its timeout fired) while we were stalling: expected.
            self.close_connection = True

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = "rate_limit_exceeded" if status == 429 else "server_error"
        self._send_json(
            status, {"error": {"message": message, "type": kind, "code": None}}, headers
        )

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    # ---- routes

    def do_GET(self) -> None:
        self.fake._record(RecordedRequest("GET", self.path, None, None, dict(self.headers)))
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": self.fake.model, "object": "model", "created": 0, "owned_by": "fake"}
                    ],
                },
            )
        else:
            self._error(404, f"no route for GET {self.path}")

    def do_POST(self) -> None:
        body = self._read_body()
        path = self.path.split("?", 1)[0].rstrip("/")
        endpoint = path.removeprefix("/v1/")
        if endpoint not in ENDPOINTS:
            self.fake._record(RecordedRequest("POST", path, body, None, dict(self.headers)))
            self._error(404, f"no route for POST {self.path}")
            return
        item = self.fake._next_item(endpoint)
        fault = item if isinstance(item, str) else None
        self.fake._record(RecordedRequest("POST", path, body, fault, dict(self.headers)))

        if fault == "timeout":
            self.fake._stall()
            self._error(504, "stalled past the client timeout")
            return
        if fault == "429":
            self._error(429, "rate limited", {"Retry-After": "0"})
            return
        if fault == "500":
            self._error(500, "internal error")
            return

        if endpoint == "embeddings":
            self._embeddings(body, fault)
            return

        prompt = _prompt_text(path, body)
        if isinstance(item, Reply):
            content = item.content
        elif fault == "malformed":
            content = _MALFORMED_CONTENT
        elif fault == "empty":
            content = ""
        elif fault == "junk_schema":
            content = _JUNK_CONTENT
        else:
            content = self.fake.responder(prompt)
        usage = (_tokens(prompt), _tokens(content))
        model = body.get("model", self.fake.model) if isinstance(body, dict) else self.fake.model
        if endpoint == "responses":
            self._send_json(200, _responses_payload(model, content, usage))
        else:
            self._send_json(200, _chat_payload(model, content, usage))

    def _embeddings(self, body: Any, fault: str | None) -> None:
        if not isinstance(body, dict):
            self._error(400, "body must be a JSON object")
            return
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else [str(t) for t in (raw or [])]
        dim = int(body.get("dimensions") or self.fake.dim)
        if fault == "malformed":
            self._send_raw(200, b'{"object": "list", "data": [')
            return
        if fault == "junk_schema":
            self._send_json(200, {"object": "list", "vectors": [[0.0] * dim for _ in texts]})
            return
        vectors = [] if fault == "empty" else [fake_embedding(t, dim) for t in texts]
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": (
                    base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if as_base64 else v
                ),
            }
            for i, v in enumerate(vectors)
        ]
        prompt_tokens = sum(_tokens(t) for t in texts)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", self.fake.model),
                "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
            },
        )


def _chat_payload(model: str, content: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        },
    }


def _responses_payload(model: str, content: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "resp-fake",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": "msg-fake",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": content, "annotations": []}],
            }
        ],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage[0] + usage[1],
        },
    }


def fake_openai_server(**kwargs: Any) -> Generator[FakeOpenAI, None, None]:
    """Generator for a pytest fixture: ``yield from fake_openai_server()``; closes afterwards."""
    with FakeOpenAI(**kwargs) as server:
        yield server

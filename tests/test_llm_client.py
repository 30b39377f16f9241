"""The LLM client: both APIs, retries, error mapping and accounting, through the real openai
client against the fake server."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram_md.core.config import LLMConfig
from engram_md.core.errors import LLMOutputError, LLMUnavailable
from engram_md.extract.llm_client import (
    MAX_DELAY_SECONDS,
    AnswerSchema,
    LLMClient,
    Usage,
    parse_answer,
)

from .conftest import clean_env
from .fake_openai import FakeOpenAI, Reply, fake_openai_server
from .test_llm_extractor import Sleeps

SCHEMA = AnswerSchema(
    "probe",
    {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    },
)
ANSWER = {"ok": True}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    yield from fake_openai_server(timeout_sleep=2.0)


def _client(server: FakeOpenAI, sleeps: Sleeps | None = None, **cfg: Any) -> LLMClient:
    cfg.setdefault("api", "chat")
    return LLMClient(server.llm_config(**cfg), sleep=sleeps if sleeps is not None else Sleeps())


def _same(value: Any) -> Any:
    return value


def _ask(client: LLMClient, read: Any = _same) -> Any:
    return client.ask("You answer in JSON.", "Say ok.", SCHEMA, read)


def test_chat_asks_in_json_mode_and_counts_tokens(server: FakeOpenAI) -> None:
    server.script(Reply(json.dumps(ANSWER)))
    with _client(server, api="chat") as client:
        assert client.api == "chat"
        assert _ask(client) == ANSWER
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["messages"] == [
        {"role": "system", "content": "You answer in JSON."},
        {"role": "user", "content": "Say ok."},
    ]
    assert "temperature" not in request.body
    assert client.usage == Usage(
        calls=1,
        prompt_tokens=math.ceil(len(request.prompt_text()) / 4),
        completion_tokens=math.ceil(len(json.dumps(ANSWER)) / 4),
    )


def test_responses_sends_the_named_strict_schema(server: FakeOpenAI) -> None:
    server.script(Reply(json.dumps(ANSWER)))
    with _client(server, api="responses", temperature=0.2) as client:
        assert client.api == "responses"
        assert _ask(client) == ANSWER
    [request] = server.requests
    assert request.path == "/v1/responses"
    assert request.body["text"]["format"] == {
        "type": "json_schema",
        "name": "probe",
        "schema": SCHEMA.schema,
        "strict": True,
    }
    assert request.body["temperature"] == 0.2
    assert client.usage.prompt_tokens > 0 and client.usage.completion_tokens > 0


def test_auto_asks_openai_through_responses_and_other_servers_through_chat(
    server: FakeOpenAI,
) -> None:
    with LLMClient(LLMConfig(api_key="sk-test")) as openai_client:
        assert openai_client.api == "responses"
    with LLMClient(server.llm_config(api="auto")) as local_client:
        assert local_client.api == "chat"


def test_read_gets_the_value_and_its_rejection_is_a_failed_call(server: FakeOpenAI) -> None:
    def reject(value: Any) -> Any:
        raise LLMOutputError(f"not what was asked: {value}")

    server.script(Reply("Sure! ```json\n" + json.dumps(ANSWER) + "\n``` Anything else?"))
    with _client(server) as client:
        with pytest.raises(LLMOutputError, match="not what was asked"):
            _ask(client, reject)
    assert len(server.requests) == 1  # the same question would get the same answer
    assert (client.usage.calls, client.usage.failed_calls, client.usage.retries) == (1, 1, 0)


@pytest.mark.parametrize("fault", ["malformed", "empty"])
def test_an_answer_without_json_is_an_output_error(server: FakeOpenAI, fault: str) -> None:
    server.script(fault)
    with _client(server) as client:
        with pytest.raises(LLMOutputError):
            _ask(client)
    assert len(server.requests) == 1 and client.usage.failed_calls == 1


def test_timeouts_and_5xx_are_retried_with_backoff(server: FakeOpenAI) -> None:
    sleeps = Sleeps()
    server.script("timeout", "500")
    with _client(server, sleeps, max_retries=2, backoff_seconds=0.5) as client:
        assert _ask(client) == {"facts": []}  # the fake's answer to a prompt without turns
    assert sleeps == [0.5, 1.0]
    assert (client.usage.calls, client.usage.retries, client.usage.failed_calls) == (3, 2, 2)


def test_a_rate_limit_waits_as_long_as_retry_after_says(server: FakeOpenAI) -> None:
    sleeps = Sleeps()
    server.script("429")
    with _client(server, sleeps, backoff_seconds=5.0) as client:
        _ask(client)
    assert sleeps == [0.0]


def test_the_delay_is_capped(server: FakeOpenAI) -> None:
    sleeps = Sleeps()
    server.script("500", "500")
    with _client(server, sleeps, max_retries=2, backoff_seconds=MAX_DELAY_SECONDS) as client:
        _ask(client)
    assert sleeps == [MAX_DELAY_SECONDS, MAX_DELAY_SECONDS]


def test_past_the_retries_the_endpoint_is_unavailable(server: FakeOpenAI) -> None:
    server.script("500", "500")
    with _client(server, max_retries=1) as client:
        with pytest.raises(LLMUnavailable, match=r"HTTP 500 after 2 attempt\(s\)"):
            _ask(client)
    assert (client.usage.calls, client.usage.failed_calls) == (2, 2)


def test_a_rejected_request_is_not_asked_again(server: FakeOpenAI) -> None:
    sleeps = Sleeps()
    wrong_url = server.base_url.replace("/v1", "/nowhere")
    with _client(server, sleeps, base_url=wrong_url) as client:
        with pytest.raises(LLMUnavailable, match="HTTP 404"):
            _ask(client)
    assert sleeps == [] and client.usage.calls == 1


def test_a_timeout_and_a_closed_port_are_named(server: FakeOpenAI) -> None:
    server.script("timeout")
    with _client(server, max_retries=0) as client:
        with pytest.raises(LLMUnavailable, match="timed out"):
            _ask(client)
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with _client(server, base_url=f"http://127.0.0.1:{port}/v1", max_retries=0) as client:
        with pytest.raises(LLMUnavailable, match="unreachable"):
            _ask(client)


@pytest.mark.parametrize(
    "text",
    [
        '{"ok": true}',
        '<think>{"ok": false} is wrong</think>{"ok": true}',
        'Here you go:\n```json\n{"ok": true}\n```',
        'The answer is {"ok": true} as requested.',
    ],
)
def test_parse_answer_finds_the_json_value(text: str) -> None:
    assert parse_answer(text) == ANSWER


@pytest.mark.parametrize("text", ["", "  <think>hmm</think> ", "no JSON here"])
def test_parse_answer_without_a_value_raises(text: str) -> None:
    with pytest.raises(LLMOutputError):
        parse_answer(text)


def test_offline_work_does_not_load_openai(tmp_path: Path) -> None:
    """openai costs ~30 MB of RSS: a process that never asks an LLM (the offline daemon, an
    import, a recall) opens the whole composition root and runs a batch without it."""
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from engram_md.app import open_engine\n"
        "from engram_md.core.config import load_config\n"
        "from datetime import UTC, datetime\n"
        "from engram_md.core.models import Role, Turn\n"
        "root = Path(sys.argv[1])\n"
        "cfg = load_config(None, overrides={'memory_dir': str(root / 'memory'),\n"
        "                                   'state_dir': str(root / 'state')})\n"
        "engine = open_engine(cfg)\n"
        "turn = Turn('t1', 's1', Role.USER, 'I prefer tea over coffee.', datetime.now(UTC))\n"
        "engine.pipeline.receive(turn)\n"
        "engine.pipeline.flush()\n"
        "engine.close()\n"
        "sys.stderr.write('OPENAI %s\\n' % ('openai' in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)],
        capture_output=True,
        env=clean_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "OPENAI False" in result.stderr.decode()

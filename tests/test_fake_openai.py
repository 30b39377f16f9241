"""The fake OpenAI-compatible server, driven through the real openai client."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from datetime import timedelta

import openai
import pytest

from engram_md.consolidate.contradictions import Relation
from engram_md.consolidate.judge import SYSTEM_PROMPT, LLMJudge, build_prompt
from engram_md.core.models import Fact
from engram_md.extract.llm_client import LLMClient, Usage

from .consolidate_folder import NOW, make_fact
from .fake_openai import (
    FAULTS,
    FakeOpenAI,
    Reply,
    fake_answer,
    fake_embedding,
    fake_extract,
    fake_judge,
    fake_openai_server,
    is_judge_prompt,
    parse_turn_lines,
    third_person,
)

PROMPT = """\
Extract memories.

[t1] 2026-03-02T09:00:00Z Dana (user): Hi! I always use uv instead of pip. Can you help?
[t2] 2026-03-02T09:01:00Z the assistant (assistant): I will use uv from now on.
[t3] 2026-03-02T09:02:00Z Dana (user): We decided to move the service to PostgreSQL.
    I'll send the plan to Priya tomorrow.
"""


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    yield from fake_openai_server(timeout_sleep=2.0)


@pytest.fixture
def client(server: FakeOpenAI) -> Iterator[openai.OpenAI]:
    c = openai.OpenAI(api_key="k", base_url=server.base_url, timeout=0.3, max_retries=0)
    yield c
    c.close()


def _chat(client: openai.OpenAI, text: str = PROMPT) -> str | None:
    completion = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": text}]
    )
    return completion.choices[0].message.content


# ---- the default extraction answer


def test_fake_extract_reads_user_turns_only_and_names_the_speaker() -> None:
    facts = fake_extract(PROMPT)["facts"]
    by_content = {f["content"]: f for f in facts}
    assert set(by_content) == {
        "Dana always uses uv instead of pip.",
        "Dana and colleagues decided to move the service to PostgreSQL.",
        "Dana will send the plan to Priya tomorrow.",
    }
    assert by_content["Dana always uses uv instead of pip."]["category"] == "preference"
    assert by_content["Dana will send the plan to Priya tomorrow."]["category"] == "commitment"
    assert {f["source_turn_ids"][0] for f in facts} == {"t1", "t3"}  # never the assistant
    assert all(f["confidence"] == 0.9 for f in facts)


def test_fake_extract_is_deterministic_and_empty_without_turns() -> None:
    assert fake_extract(PROMPT) == fake_extract(PROMPT)
    assert fake_extract("no turns in here at all") == {"facts": []}


def test_parse_turn_lines_joins_indented_continuations() -> None:
    turns = parse_turn_lines(PROMPT)
    assert [t["id"] for t in turns] == ["t1", "t2", "t3"]
    assert turns[1]["name"] == "the assistant" and turns[1]["role"] == "assistant"
    assert turns[2]["content"].endswith("\nI'll send the plan to Priya tomorrow.")


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I work at a bakery", "Dana works at a bakery"),
        ("I'm the on-call engineer", "Dana is the on-call engineer"),
        ("my laptop runs Linux", "Dana's laptop runs Linux"),
        ("I never deploy on Fridays", "Dana never deploys on Fridays"),
        ("I don't like YAML", "Dana doesn't like YAML"),
    ],
)
def test_third_person(sentence: str, expected: str) -> None:
    assert third_person(sentence, "Dana") == expected


# ---- the default judge answer


def _cluster() -> tuple[Fact, list[Fact]]:
    """A new fact, one stored fact equal to it but for case and punctuation, two that differ."""
    day = timedelta(days=1)
    new = make_fact("Dana's team has 6 engineers.", created=NOW)
    old = [
        make_fact("Dana's team is remote.", created=NOW - 9 * day),
        make_fact("dana's  TEAM has 6 engineers!", created=NOW - 8 * day),
        make_fact("Dana's team has six engineers.", created=NOW - 7 * day),
    ]
    return new, old


def test_fake_judge_decides_every_existing_ref_of_the_real_prompt() -> None:
    new, old = _cluster()
    answer = fake_judge(build_prompt(new, old))
    assert answer == {
        "decisions": [
            {"existing": "E1", "action": "ADD", "reason": "different statement"},
            {"existing": "E2", "action": "MERGE", "reason": "same statement"},
            {"existing": "E3", "action": "ADD", "reason": "different statement"},
        ]
    }
    assert fake_judge(build_prompt(new, old[:1]))["decisions"] == [
        {"existing": "E1", "action": "ADD", "reason": "different statement"}
    ]


def test_only_judge_calls_get_a_judge_answer() -> None:
    new, old = _cluster()
    judge_call = SYSTEM_PROMPT + "\n" + build_prompt(new, old)
    assert is_judge_prompt(judge_call)
    assert json.loads(fake_answer(judge_call)) == fake_judge(judge_call)
    # The user prompt alone is not a judge call: its system prompt is what marks one.
    assert not is_judge_prompt(build_prompt(new, old))
    assert not is_judge_prompt(PROMPT)
    assert json.loads(fake_answer(PROMPT)) == fake_extract(PROMPT)


@pytest.mark.parametrize(
    ("api", "endpoint"), [("chat", "chat/completions"), ("responses", "responses")]
)
def test_real_judge_gets_a_usable_answer(server: FakeOpenAI, api: str, endpoint: str) -> None:
    new, old = _cluster()
    usage = Usage()
    judge = LLMJudge(LLMClient(server.llm_config(api=api), usage, sleep=lambda s: None))
    try:
        relations = judge.decide(new, old)
    finally:
        judge.close()
    assert relations == [Relation("duplicate", old[1].id, new.id, "judge: same statement")]
    assert judge.failures == 0 and usage.failed_calls == 0 and usage.calls == 1
    [request] = server.requests
    assert request.path == f"/v1/{endpoint}" and request.fault is None


def test_faults_replace_the_judge_answer_too(server: FakeOpenAI) -> None:
    new, old = _cluster()
    server.script("junk_schema", Reply('{"facts": []}'))
    judge = LLMJudge(LLMClient(server.llm_config(api="chat", max_retries=0), sleep=lambda s: None))
    try:
        assert judge.decide(new, old) is None  # the fault's junk, not the judge answer
        assert judge.decide(new, old) is None  # the scripted reply, verbatim
        assert judge.decide(new, old)  # unscripted again: the judge answer
    finally:
        judge.close()
    assert [r.fault for r in server.requests] == ["junk_schema", None, None]
    assert judge.failures == 2


# ---- endpoints through the real client


def test_chat_completion_answers_with_extraction_json(
    server: FakeOpenAI, client: openai.OpenAI
) -> None:
    completion = client.chat.completions.create(
        model="m",
        messages=[
            {"role": "system", "content": "You extract memories."},
            {"role": "user", "content": PROMPT},
        ],
        response_format={"type": "json_object"},
    )
    content = completion.choices[0].message.content
    assert content is not None
    assert json.loads(content) == fake_extract("You extract memories.\n" + PROMPT)
    assert completion.usage is not None
    prompt_chars = len("You extract memories.\n" + PROMPT)
    assert completion.usage.prompt_tokens == math.ceil(prompt_chars / 4)
    assert completion.usage.completion_tokens == math.ceil(len(content) / 4)
    [recorded] = server.requests
    assert recorded.path == "/v1/chat/completions"
    assert recorded.body["response_format"] == {"type": "json_object"}
    assert recorded.fault is None


def test_responses_api_answers_with_output_text(server: FakeOpenAI, client: openai.OpenAI) -> None:
    response = client.responses.create(
        model="m",
        input=[{"role": "user", "content": PROMPT}],
        text={"format": {"type": "json_schema", "name": "x", "schema": {}, "strict": True}},
    )
    assert json.loads(response.output_text) == fake_extract(PROMPT)
    assert response.usage is not None
    assert response.usage.input_tokens == math.ceil(len(PROMPT) / 4)
    assert server.requests_to("responses")[0].body["text"]["format"]["type"] == "json_schema"


def test_embeddings_are_deterministic_unit_vectors(
    server: FakeOpenAI, client: openai.OpenAI
) -> None:
    # The client asks for base64 by default; both encodings must decode to the same floats.
    first = client.embeddings.create(model="e", input=["alpha", "beta"])
    again = client.embeddings.create(model="e", input="alpha", encoding_format="float")
    a, b = first.data[0].embedding, first.data[1].embedding
    assert len(a) == 64 and len(b) == 64
    assert math.isclose(sum(v * v for v in a), 1.0, rel_tol=1e-5)
    assert a != b
    assert again.data[0].embedding == pytest.approx(a, abs=1e-6)
    assert again.data[0].embedding == pytest.approx(fake_embedding("alpha"), abs=1e-9)
    short = client.embeddings.create(model="e", input="alpha", dimensions=8)
    assert len(short.data[0].embedding) == 8


def test_embedding_dim_is_configurable() -> None:
    with FakeOpenAI(dim=16) as srv:
        c = openai.OpenAI(api_key="k", base_url=srv.base_url, max_retries=0)
        try:
            out = c.embeddings.create(model="e", input="x")
        finally:
            c.close()
    assert len(out.data[0].embedding) == 16


def test_models_lists_the_model(server: FakeOpenAI, client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["fake-model"]
    assert server.requests[0].method == "GET"


# ---- faults


def test_timeout_fault_stalls_past_the_client_timeout(
    server: FakeOpenAI, client: openai.OpenAI
) -> None:
    server.script("timeout")
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        _chat(client)
    assert time.monotonic() - started < 1.5  # the client gave up; it did not wait the 2 s out
    assert _chat(client)  # the next request is served normally


def test_429_carries_retry_after(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.script("429")
    with pytest.raises(openai.RateLimitError) as info:
        _chat(client)
    assert info.value.response.headers["retry-after"] == "0"


def test_500_is_a_server_error(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.script("500")
    with pytest.raises(openai.InternalServerError):
        _chat(client)


def test_content_faults(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.script("malformed", "empty", "junk_schema")
    malformed = _chat(client)
    assert malformed
    with pytest.raises(ValueError):
        json.loads(malformed)
    assert _chat(client) == ""
    junk = json.loads(_chat(client) or "")
    assert "facts" not in junk
    assert [r.fault for r in server.requests] == ["malformed", "empty", "junk_schema"]
    assert server.pending() == 0
    assert json.loads(_chat(client) or "") == fake_extract(PROMPT)


def test_content_faults_on_the_responses_api(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.script("empty", "malformed")
    assert client.responses.create(model="m", input="hello").output_text == ""
    with pytest.raises(ValueError):
        json.loads(client.responses.create(model="m", input="hello").output_text)


def test_embedding_faults(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.script("empty", endpoint="embeddings")
    assert client.embeddings.create(model="e", input="x", encoding_format="float").data == []
    server.script("500", endpoint="embeddings")
    with pytest.raises(openai.InternalServerError):
        client.embeddings.create(model="e", input="x")


def test_endpoint_queue_is_not_consumed_by_other_endpoints(
    server: FakeOpenAI, client: openai.OpenAI
) -> None:
    server.script("500", endpoint="chat/completions")
    assert client.embeddings.create(model="e", input="x").data  # untouched by the chat fault
    with pytest.raises(openai.InternalServerError):
        _chat(client)


def test_scripted_reply_is_sent_verbatim(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.script(Reply("```json\n{}\n```"))
    assert _chat(client) == "```json\n{}\n```"


def test_unknown_fault_names_are_refused(server: FakeOpenAI) -> None:
    with pytest.raises(ValueError):
        server.script("teapot")
    with pytest.raises(ValueError):
        server.fault_rate(0.5, kinds=("teapot",))


def test_fault_rate_is_seeded_and_proportional(server: FakeOpenAI, client: openai.OpenAI) -> None:
    kinds = ("500", "malformed", "empty", "junk_schema")  # no timeouts: keep the test fast

    def run(seed: int) -> list[str | None]:
        server.requests.clear()
        server.fault_rate(0.3, seed=seed, kinds=kinds)
        for _ in range(40):
            try:
                _chat(client, "[t1] 2026-01-01T00:00:00Z Ann (user): I like tea.")
            except openai.InternalServerError:
                pass
        return [r.fault for r in server.requests]

    first, second = run(7), run(7)
    assert first == second
    assert 4 <= sum(f is not None for f in first) <= 20
    assert set(f for f in first if f) <= set(kinds)
    server.fault_rate(0.0)
    assert _chat(client)


def test_every_fault_kind_is_known() -> None:
    assert set(FAULTS) == {"timeout", "429", "500", "malformed", "empty", "junk_schema"}


def test_generator_helper_stops_the_server() -> None:
    gen = fake_openai_server()
    srv = next(gen)
    c = openai.OpenAI(api_key="k", base_url=srv.base_url, timeout=0.5, max_retries=0)
    assert _chat(c)
    gen.close()
    with pytest.raises(openai.APIConnectionError):
        _chat(c)
    c.close()

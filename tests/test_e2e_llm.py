"""End to end with an LLM: the real openai client in `engram-md run` against the fake server."""

from __future__ import annotations

import json

import frontmatter
import pytest

from .conftest import SAMPLES, Cli, clean_env, sample
from .fake_openai import FakeOpenAI


def _llm_env(cli: Cli, server: FakeOpenAI) -> dict[str, str]:
    config = cli.root / "config.yaml"
    config.write_text(
        "llm:\n  timeout_seconds: 0.5\n  backoff_seconds: 0.01\n  max_retries: 2\n  api: chat\n"
    )
    return clean_env(
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="test-key",
        ENGRAM_CONFIG=str(config),
    )


def _bodies(cli: Cli) -> list[str]:
    return [frontmatter.loads(d.decode()).content for d in cli.fact_files().values()]


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_through_the_llm(cli: Cli, fake_llm: FakeOpenAI, name: str) -> None:
    result = cli("run", input=sample(name).read_bytes(), env=_llm_env(cli, fake_llm))
    assert result.returncode == 0, result.stderr.decode()
    bodies = _bodies(cli)
    assert any("Acme Robotics" in b for b in bodies)
    assert any("PostgreSQL 16" in b for b in bodies)
    everything = "\n".join(bodies)
    assert "hunter2" not in everything
    # The prompt never carried the tool result or thinking.
    prompts = "\n".join(r.prompt_text() for r in fake_llm.requests)
    assert "hunter2" not in prompts and "private reasoning" not in prompts
    for data in cli.fact_files().values():
        assert frontmatter.loads(data.decode())["source"] == "extraction"
    usage = json.loads((cli.state / "llm-usage.json").read_text())
    assert usage["calls"] == len(fake_llm.requests) >= 1
    assert usage["prompt_tokens"] > 0


@pytest.mark.parametrize("fault", ["timeout", "429", "500", "malformed", "empty"])
def test_faults_lose_no_turn_and_write_no_duplicate(make_cli, fault: str) -> None:  # type: ignore[no-untyped-def]
    data = sample("generic.jsonl").read_bytes()
    with FakeOpenAI() as clean_server:
        baseline = make_cli("baseline")
        assert baseline("run", input=data, env=_llm_env(baseline, clean_server)).returncode == 0
    expected = {
        rel: frontmatter.loads(d.decode()).content for rel, d in baseline.fact_files().items()
    }
    assert expected

    with FakeOpenAI(timeout_sleep=1.5) as server:
        server.script(fault, fault)  # the first two calls fail
        faulty = make_cli("faulty")
        result = faulty("run", input=data, env=_llm_env(faulty, server))
        assert result.returncode == 0, result.stderr.decode()
        got = {rel: frontmatter.loads(d.decode()).content for rel, d in faulty.fact_files().items()}
        assert got == expected
        assert server.pending() == 0  # both faults were actually served
    # Every turn was accounted for: nothing left in the journal.
    status = json.loads(faulty("status", "--json").stdout)
    assert status["bufferDepth"] == 0


def test_llm_down_keeps_turns_for_the_next_run(make_cli) -> None:  # type: ignore[no-untyped-def]
    data = sample("generic.jsonl").read_bytes()
    cli = make_cli("down")
    with FakeOpenAI() as server:
        server.script(*(["500"] * 200))
        result = cli("run", input=data, env=_llm_env(cli, server))
        assert result.returncode == 0
        assert "kept in the journal" in result.stderr.decode()
        assert not cli.fact_files()
    status = json.loads(cli("status", "--json").stdout)
    assert status["bufferDepth"] > 0
    with FakeOpenAI() as server:
        result = cli("run", input=b"", env=_llm_env(cli, server))
        assert result.returncode == 0, result.stderr.decode()
    assert any("Acme Robotics" in b for b in _bodies(cli))
    assert json.loads(cli("status", "--json").stdout)["bufferDepth"] == 0

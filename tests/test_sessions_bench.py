"""The projects-folder benchmark's generator and its harness-memory check, at a tiny size."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from bench.sessions_bench import (
    PROJECT,
    SLASH_COMMAND_OUTPUT,
    SUBAGENT_PROMPT,
    ProjectsFolder,
    generate,
    harness_memories,
)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _texts(lines: list[dict[str, Any]]) -> list[str]:
    """The string contents of the user lines."""
    contents = [line["message"]["content"] for line in lines if line["type"] == "user"]
    return [content for content in contents if isinstance(content, str)]


def _tiny(tmp_path: Path) -> ProjectsFolder:
    return generate(tmp_path / "projects", sessions=2, turns=12, subagent_lines=8)


def test_the_folder_has_claude_codes_layout(tmp_path: Path) -> None:
    folder = _tiny(tmp_path)
    project = folder.root / PROJECT
    sessions = [p for p in project.glob("*.jsonl") if not p.name.startswith("agent-")]
    assert len(sessions) == 2
    for session in sessions:
        assert len(list((project / session.stem / "subagents").glob("agent-*.jsonl"))) == 2
    assert len(list(project.glob("agent-*.jsonl"))) == 2  # the older layout, beside them
    read = {p.relative_to(folder.root).as_posix() for p in folder.read_files()}
    assert len(read) == 4 and not any("/subagents/" in name for name in read)


def test_sessions_hold_the_persons_messages_among_harness_lines(tmp_path: Path) -> None:
    folder = _tiny(tmp_path)
    lines: list[dict[str, Any]] = []
    for path in folder.read_files():
        if not path.name.startswith("agent-"):
            lines += _lines(path)
    kinds = Counter(line["type"] for line in lines)
    assert set(kinds) == {
        "file-history-snapshot",
        "user",
        "assistant",
        "progress",
        "queue-operation",
        "system",
    }
    # Most lines are not the person's: that is what the throughput figure is made of.
    assert len(folder.person_texts) == 24 < len(lines) / 10
    texts = _texts(lines)
    for said in folder.person_texts:
        assert any(
            text == said or text.startswith(said + "\n\n<system-reminder>") for text in texts
        )
    joined = "\n".join(texts)
    for shape in ("<system-reminder>", "<command-name>/model", SLASH_COMMAND_OUTPUT):
        assert shape in joined
    assert "<task-notification>" in joined
    results = [
        line
        for line in lines
        if line["type"] == "user" and isinstance(line["message"]["content"], list)
    ]
    assert results and all(r["message"]["content"][0]["type"] == "tool_result" for r in results)
    # Message lines form one chain, as Claude Code links them.
    messages = [line for line in lines if line["type"] in ("user", "assistant")]
    session_ids = {line["sessionId"] for line in messages}
    for session_id in session_ids:
        chain = [line for line in messages if line["sessionId"] == session_id]
        assert chain[0]["parentUuid"] is None
        assert all(b["parentUuid"] == a["uuid"] for a, b in zip(chain, chain[1:], strict=False))


def test_subagent_lines_are_all_sidechain(tmp_path: Path) -> None:
    folder = _tiny(tmp_path)
    subagents = [p for p in folder.files() if p.name.startswith("agent-")]
    assert len(subagents) == 6
    for path in subagents:
        lines = _lines(path)
        assert len(lines) >= 8 // 2  # the older layout holds half as many
        assert all(line["isSidechain"] and line["agentId"] for line in lines)
        assert lines[0]["message"]["content"].startswith(SUBAGENT_PROMPT)


PERSON = [
    "we deploy with fly, not heroku",
    "I'll review the cache PR by Friday.",
    "My manager is Ruth.",
]


def test_memories_from_what_the_person_typed_pass() -> None:
    statements = [
        "The user's team deploys with fly, not heroku.",
        "The user will review the cache PR by Friday (2026-03-06).",
        "The user's manager is Ruth.",
    ]
    assert harness_memories(statements, PERSON) == []


def test_memories_with_words_the_person_did_not_type_are_flagged() -> None:
    harness = [
        "The user wants to explore the codebase to understand the current structure.",
        "Background command completed (exit code 0).",
        "The user set model to opus.",
        "The user's team deploys the cache worker to staging.",  # tool-output words
        "The user opened the file lib/cache.ex.",  # an appended reminder
        "The user's manager Ruth deploys with fly.",  # two messages' words in one
    ]
    person = "The user's manager is Ruth."
    assert harness_memories([harness[0], person, *harness[1:]], PERSON) == harness

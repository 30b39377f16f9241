"""The regression corpus (tests/data/sessions): Claude Code and OpenClaw transcripts in the
shapes those harnesses write, harness lines included. Each file gives exactly the person's
turns it lists; the whole folder, read as ``run --watch`` reads a projects folder, gives
exactly the expected memories and nothing from a harness, sidechain or tool line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram_md.app import open_engine
from engram_md.core.config import Config
from engram_md.core.models import Role
from engram_md.ingest.sources import expand_watch_paths
from engram_md.ingest.transcripts import LineError, TranscriptReader
from engram_md.store.factfile import format_time, read_fact
from engram_md.text.embeddings import LocalMiniLM

CORPUS = Path(__file__).parent / "data" / "sessions"
EXPECTED: dict[str, Any] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
# What `run --watch` would be given: a Claude Code projects folder and OpenClaw's sessions.
WATCHED = [CORPUS / "claude-code", CORPUS / "openclaw"]


def _user_turn_ids(path: Path) -> list[str]:
    reader = TranscriptReader(str(path))
    ids: list[str] = []
    for lineno, raw in enumerate(path.read_bytes().splitlines(), 1):
        result = reader.feed(raw, lineno)
        assert not isinstance(result, LineError), str(result)
        ids += [t.id for t in result if t.role is Role.USER]
    return ids


@pytest.mark.parametrize("name", sorted(EXPECTED["person_turns"]))
def test_each_file_gives_exactly_the_persons_turns(name: str) -> None:
    ids = _user_turn_ids(CORPUS / name)
    assert ids == EXPECTED["person_turns"][name]
    assert not set(ids) & set(EXPECTED["silent"])


def test_the_corpus_lists_every_file() -> None:
    files = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.jsonl")}
    assert files == set(EXPECTED["person_turns"])


def test_a_watched_projects_folder_leaves_subagent_transcripts_unread() -> None:
    found = {p.relative_to(CORPUS).as_posix() for p in expand_watch_paths(WATCHED)}
    assert not any("/subagents/" in name for name in found)
    # The older layout keeps sidechains beside the sessions: read, and silent line by line.
    assert "claude-code/-home-lee-shop/agent-5d1e9c2b.jsonl" in found


def test_the_corpus_gives_exactly_the_expected_memories(cfg: Config, minilm: LocalMiniLM) -> None:
    engine = open_engine(cfg, embedder=minilm)
    try:
        engine.runner.catch_up(WATCHED)
        # Names are kept in state/ as soon as they are learned, not only at the end.
        names = json.loads((cfg.state_dir / "speakers.json").read_text(encoding="utf-8"))
        assert {r.get("user") for r in names["sessions"].values()} == {"Lee"}
        engine.pipeline.flush()
    finally:
        engine.close()
    assert engine.runner.bad_lines == 0
    facts = [read_fact(p) for p in sorted((cfg.memory_dir / "facts").rglob("*.md"))]
    got = sorted(
        (
            {
                "content": f.content,
                "category": f.category.value,
                "created": format_time(f.created),
                "turns": list(f.source_turn_ids),
                "confirmations": f.confirmations,
            }
            for f in facts
        ),
        key=lambda m: (m["created"], m["content"]),
    )
    want = sorted(EXPECTED["memories"], key=lambda m: (m["created"], m["content"]))
    assert got == want
    silent = set(EXPECTED["silent"])
    for fact in facts:
        assert not silent & set(fact.source_turn_ids), fact.content
        planted = [w for w in EXPECTED["never_in_a_memory"] if w in fact.content]
        assert not planted, (fact.content, planted)

"""Index rows and facts for tests that build a search index directly (index, recall, server,
the folder watcher, the object store)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from engram_md.core.models import CandidateFact, Category, Fact, Source
from engram_md.index.table import IndexRow
from engram_md.ingest.pipeline import to_fact

T0 = datetime(2026, 3, 2, 9, 2, tzinfo=UTC)


def index_row(id: str, content: str, **changes: Any) -> IndexRow:
    """An active fact row with plain defaults; ``changes`` overrides any field."""
    base = IndexRow(
        id=id,
        path=f"facts/2026-03-02/{id}.md",
        kind="fact",
        content=content,
        category="fact",
        memory_kind="note",
        status="active",
        importance=0.5,
        confidence=0.8,
        created=T0,
        updated=T0,
        session="s-1",
        source_turn_ids=(f"turn-{id}",),
        entities=(),
        tags=(),
        speaker="dana",
        confirmations=1,
        file_mtime_ns=0,
        content_hash=f"hash-{id}",
    )
    return replace(base, **changes)


def preference_fact(text: str, minute: int = 0) -> Fact:
    """A preference said ``minute`` minutes after T0, as the pipeline would store it."""
    made = to_fact(
        CandidateFact(
            category=Category.PREFERENCE,
            content=text,
            confidence=0.95,
            source_turn_ids=(f"t{minute}",),
            session="s1",
            created=T0 + timedelta(minutes=minute),
            source=Source.MANUAL,
        )
    )
    assert made is not None
    return made

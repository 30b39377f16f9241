"""The memory folder as a store: file names, the hash index, and hand edits winning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram_md.core.models import Category, ConfidenceTier, Fact, MemoryKind, Source
from engram_md.core.paths import MemoryLayout
from engram_md.store.fact_store import MemoryStore
from engram_md.text.hashing import content_hash


def make_fact(text: str, *, category: Category = Category.PREFERENCE, minute: int = 2) -> Fact:
    digest = content_hash(text)
    created = datetime(2026, 3, 2, 9, minute, 5, tzinfo=UTC)
    return Fact(
        id=f"{category.value}-20260302-09{minute:02d}05-{digest[:8]}",
        category=category,
        created=created,
        updated=created + timedelta(0),
        source=Source.OFFLINE,
        confidence=0.95,
        confidence_tier=ConfidenceTier.EXPLICIT,
        importance=0.7,
        memory_kind=MemoryKind.NOTE,
        content=text,
        session="s1",
        source_turn_ids=("t1",),
        content_hash=digest,
    )


UV = make_fact("Dana uses uv instead of pip.")
PG = make_fact("The team moves to PostgreSQL 16.", category=Category.DECISION, minute=7)


@pytest.fixture
def layout(tmp_path: Path) -> MemoryLayout:
    return MemoryLayout(memory_dir=tmp_path / "memory", state_dir=tmp_path / "state")


def test_write_new_places_the_file_by_category_time_and_hash(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    path = store.write_new(UV)
    expected = f"facts/2026-03-02/preference-090205-{UV.content_hash[:8]}.md"
    assert layout.relative(path) == expected
    assert path.is_file()
    assert store.hashes.lookup(UV.content_hash) == expected
    assert layout.hashes_path.read_text() == f"{UV.content_hash} {expected}\n"


def test_find_returns_the_written_fact(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    path = store.write_new(UV)
    found = store.find(content_hash("dana USES uv, instead of pip"))  # same normalized text
    assert found is not None
    assert found[0] == path
    assert found[1] == UV
    assert store.find(content_hash("something never said")) is None


def test_open_rebuilds_missing_hashes_from_the_files(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    uv_path = store.write_new(UV)
    pg_path = store.write_new(PG)
    layout.hashes_path.unlink()
    # A broken file and a temp file left by a crash are not facts.
    (layout.facts_dir / "2026-03-02" / "broken.md").write_text("---\nid: [unclosed\n---\nx\n")
    (layout.facts_dir / "2026-03-02" / f".{uv_path.name}.tmp-999").write_text(uv_path.read_text())

    reopened = MemoryStore.open(layout, fsync=False)
    assert layout.hashes_path.is_file()
    assert reopened.hashes.items() == sorted(
        [(UV.content_hash, layout.relative(uv_path)), (PG.content_hash, layout.relative(pg_path))]
    )
    found = reopened.find(PG.content_hash)
    assert found is not None and found[0] == pg_path


def test_open_keeps_an_existing_index(layout: MemoryLayout) -> None:
    layout.ensure()
    layout.hashes_path.write_text("")  # present (even empty): trusted, not rebuilt
    store = MemoryStore.open(layout, fsync=False)
    assert len(store.hashes) == 0


def test_rebuild_includes_archived_facts(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    path = store.write_new(UV)
    archived = layout.archive_dir / layout.relative(path)
    archived.parent.mkdir(parents=True)
    path.rename(archived)
    assert store.rebuild_hashes() == 1
    assert store.hashes.lookup(UV.content_hash) == layout.relative(archived)
    assert list(store.fact_paths()) == [archived]


def test_find_returns_none_when_the_file_was_deleted(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    store.write_new(UV).unlink()
    assert store.find(UV.content_hash) is None


def test_find_returns_none_when_the_statement_was_edited_by_hand(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    path = store.write_new(UV)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("uses uv instead of pip", "went back to pip"), encoding="utf-8")
    assert store.find(UV.content_hash) is None


def test_find_returns_none_when_the_file_was_broken_by_hand(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    path = store.write_new(UV)
    path.write_text("---\nid: [oops\n---\nDana uses uv instead of pip.\n", encoding="utf-8")
    assert store.find(UV.content_hash) is None


def test_find_survives_a_status_edit(layout: MemoryLayout) -> None:
    # Editing metadata (not the statement) keeps the identity: find still answers.
    store = MemoryStore.open(layout, fsync=False)
    path = store.write_new(UV)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("status: active", "status: invalidated"), encoding="utf-8")
    found = store.find(UV.content_hash)
    assert found is not None and found[1].status.value == "invalidated"


def test_scan_reports_broken_files_without_stopping(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    store.write_new(UV)
    bad = layout.facts_dir / "2026-03-02" / "aaa-broken.md"
    bad.write_bytes(b"\xff\xfe not utf-8")
    results = dict(store.scan())
    assert set(results) == {bad, store.path_for(UV)}
    assert isinstance(results[store.path_for(UV)], Fact)
    assert not isinstance(results[bad], Fact)


def test_rewrite_in_place_reports_changes(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    path = store.write_new(UV)
    assert store.rewrite(path, UV) is False
    assert store.rewrite(path, UV.with_changes(importance=0.9)) is True
    found = store.find(UV.content_hash)
    assert found is not None and found[1].importance == 0.9


def test_rewrite_refuses_paths_outside_the_memory_folder(
    layout: MemoryLayout, tmp_path: Path
) -> None:
    store = MemoryStore.open(layout, fsync=False)
    with pytest.raises(ValueError):
        store.rewrite(layout.memory_dir / ".." / "escaped.md", UV)
    assert not (tmp_path / "escaped.md").exists()


def test_write_new_is_idempotent(layout: MemoryLayout) -> None:
    store = MemoryStore.open(layout, fsync=False)
    first = store.write_new(UV)
    mtime = first.stat().st_mtime_ns
    assert store.write_new(UV) == first
    assert first.stat().st_mtime_ns == mtime
    assert layout.hashes_path.read_text().count("\n") == 1
    assert len(list(store.fact_paths())) == 1

"""The LanceDB memory index: real tables in tmp_path, the real local model."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engram_md.core.errors import IndexError_
from engram_md.index.table import IndexRow, MemoryIndex, sql_quote
from engram_md.text.embeddings import LocalMiniLM, l2_normalize

from .conftest import HashEmbedder
from .rows import index_row


def FakeEmbedder(model_id: str = "fake", dim: int = 16) -> HashEmbedder:  # noqa: N802
    return HashEmbedder(model_id, dim)


T0 = datetime(2026, 3, 2, 9, 2, tzinfo=UTC)


def row(id: str, content: str, **changes: object) -> IndexRow:
    defaults: dict[str, object] = {
        "category": "preference",
        "importance": 0.7,
        "confidence": 0.95,
        "created": T0,
        "updated": T0,
        "session": "demo-1",
        "source_turn_ids": ("t1", "t2"),
        "entities": ("person-dana",),
        "tags": ("tooling", "python"),
        "file_mtime_ns": 1_700_000_000_000_000_000,
    }
    return index_row(id, content, **{**defaults, **changes})


FACTS = {
    "f-cat": "The cat sits on the mat by the window",
    "f-uv": "Dana wants shell commands to use uv instead of pip",
    "f-db": "The team decided to move the billing service to PostgreSQL",
    "f-tea": "Priya drinks green tea every morning before standup",
}


@pytest.fixture
def index(tmp_path: Path, minilm: LocalMiniLM) -> MemoryIndex:
    idx = MemoryIndex.open(tmp_path / "index", minilm)
    idx.upsert([row(i, text) for i, text in FACTS.items()])
    return idx


def test_a_new_index_is_empty_and_asks_for_a_rebuild(tmp_path: Path) -> None:
    idx = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    assert idx.needs_rebuild
    assert idx.count() == 0
    assert idx.manifest() == {}
    assert idx.text_search("anything", 5) == []
    assert idx.vector_search(np.ones(16, dtype=np.float32) / 4, 5) == []


def test_upsert_get_roundtrip_keeps_every_field(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    idx = MemoryIndex.open(tmp_path / "index", embedder)
    original = row("f-1", "Dana prefers uv", created=datetime(2026, 3, 2, 9, 2))  # naive = UTC
    idx.upsert([original])
    got = idx.get(["f-1", "missing"])
    assert set(got) == {"f-1"}
    stored = got["f-1"]
    assert stored.vector is not None
    np.testing.assert_allclose(stored.vector, embedder.embed(["Dana prefers uv"])[0], atol=1e-6)
    assert replace(stored, vector=None) == replace(original, created=T0)
    assert stored.created.tzinfo is not None


def test_upsert_replaces_by_id_and_embeds_only_rows_without_vectors(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    idx = MemoryIndex.open(tmp_path / "index", embedder)
    given = l2_normalize(np.arange(16, dtype=np.float32)[None, :])[0]
    idx.upsert([row("a", "first text"), row("b", "has a vector", vector=given)])
    assert embedder.calls == [["first text"]]
    # Same id twice in one batch: the last one wins, stored once.
    idx.upsert([row("a", "second text"), row("a", "third text", status="superseded")])
    assert idx.count() == 2
    got = idx.get(["a", "b"])
    assert got["a"].content == "third text"
    assert got["a"].status == "superseded"
    assert got["b"].vector is not None
    np.testing.assert_allclose(got["b"].vector, given, atol=1e-6)


def test_delete_removes_rows_from_every_search(index: MemoryIndex) -> None:
    index.delete(["f-uv", "never-existed"])
    assert index.count() == 3
    assert "f-uv" not in index.get(["f-uv"])
    assert all(h.row.id != "f-uv" for h in index.text_search("uv pip", 10))
    assert all(h.row.id != "f-uv" for h in index.nearest("Dana uses uv", 10))


def test_text_search_finds_a_word_right_after_upsert(index: MemoryIndex) -> None:
    hits = index.text_search("PostgreSQL", 5)
    assert [h.row.id for h in hits] == ["f-db"]
    assert hits[0].score > 0
    index.upsert([row("f-new", "The staging cluster runs Kubernetes on bare metal")])
    assert [h.row.id for h in index.text_search("kubernetes", 5)] == ["f-new"]
    # Stemming: the statement says "drinks", the question asks "drinking".
    assert [h.row.id for h in index.text_search("who is drinking tea?", 5)] == ["f-tea"]


def test_text_search_sees_edits_and_takes_any_text_as_a_query(index: MemoryIndex) -> None:
    index.upsert([row("f-db", "The team decided to keep billing on MySQL")])
    assert index.text_search("PostgreSQL", 5) == []
    assert [h.row.id for h in index.text_search("mysql", 5)] == ["f-db"]
    for odd in ['uv "pip', "a:b OR (", "DROP TABLE memories; --"]:
        index.text_search(odd, 5)  # no exception: matched word by word, never parsed
    assert index.text_search("*", 5) == [] and index.text_search("   ", 5) == []
    assert [h.row.id for h in index.text_search('"MySQL" OR (billing', 5)] == ["f-db"]


def test_search_after_optimize_still_sees_new_rows(index: MemoryIndex) -> None:
    connection = index._db
    index.optimize()
    # A fresh connection after each optimize, so LanceDB's caches drop replaced versions.
    assert index._db is not connection
    assert [h.row.id for h in index.text_search("green tea", 5)][0] == "f-tea"
    index.upsert([row("f-late", "Jonas moved to Lisbon in the spring")])
    assert [h.row.id for h in index.text_search("Lisbon", 5)] == ["f-late"]
    assert index.nearest("Jonas relocated to Portugal", 1)[0].row.id == "f-late"
    assert index.count() == 5


def test_vector_search_ranks_the_paraphrase_first(index: MemoryIndex, minilm: LocalMiniLM) -> None:
    hits = index.nearest("A feline rests on a rug", 4)
    assert hits[0].row.id == "f-cat"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert -1.0 <= hits[-1].score < hits[0].score <= 1.0
    query = minilm.embed(["Which package manager should the shell use?"])[0]
    top = index.vector_search(query, 1)[0]
    assert top.row.id == "f-uv"
    # The score is the cosine similarity of the stored vector and the query.
    assert top.row.vector is not None
    assert top.score == pytest.approx(float(top.row.vector @ query), abs=1e-4)


def test_where_filters_on_status(index: MemoryIndex) -> None:
    index.upsert([row("f-cat", FACTS["f-cat"], status="superseded")])
    active = "status = 'active'"
    assert "f-cat" not in {
        h.row.id for h in index.nearest("A feline rests on a rug", 4, where=active)
    }
    assert index.text_search("cat mat", 5, where=active) == []
    assert [h.row.id for h in index.text_search("cat mat", 5, where="status = 'superseded'")] == [
        "f-cat"
    ]
    session = sql_quote("o'brien's session")
    assert index.text_search("tea", 5, where=f"session = {session}") == []


def test_bad_filter_is_an_index_error(index: MemoryIndex) -> None:
    with pytest.raises(IndexError_):
        index.text_search("tea", 5, where="no_such_column = 1")
    with pytest.raises(IndexError_):
        index.vector_search(np.ones(7, dtype=np.float32), 3)


def test_model_change_recreates_the_index_and_asks_for_a_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "index"
    first = MemoryIndex.open(path, FakeEmbedder("model-a", 16))
    first.upsert([row("a", "something")])
    same = MemoryIndex.open(path, FakeEmbedder("model-a", 16))
    assert not same.needs_rebuild
    assert same.count() == 1

    other_model = MemoryIndex.open(path, FakeEmbedder("model-b", 16))
    assert other_model.needs_rebuild
    assert "model" in (other_model.rebuild_reason or "")
    assert other_model.count() == 0
    other_model.upsert([row("a", "something")])

    wider = MemoryIndex.open(path, FakeEmbedder("model-b", 32))
    assert wider.needs_rebuild
    assert wider.count() == 0
    wider.upsert([row("b", "else")])
    assert wider.get(["b"])["b"].vector.shape == (32,)  # type: ignore[union-attr]


def test_all_vectors_are_the_live_rows(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    idx = MemoryIndex.open(tmp_path / "index", embedder)
    assert idx.all_vectors().shape == (0, 16)
    idx.upsert([row("a", "one"), row("b", "two"), row("c", "three", status="archived")])
    idx.delete(["b"])
    vectors = idx.all_vectors()
    assert vectors.shape == (2, 16)
    expected = embedder.embed(["one", "three"])
    np.testing.assert_allclose(
        vectors[np.argsort(vectors[:, 0])], expected[np.argsort(expected[:, 0])], atol=1e-6
    )
    active = idx.all_vectors(where="status = 'active'")
    np.testing.assert_allclose(active, expected[:1], atol=1e-6)


def test_manifest_round_trip(tmp_path: Path) -> None:
    idx = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    rows = [
        row(f"f-{i}", f"fact number {i}", file_mtime_ns=1000 + i, content_hash=f"{i:016x}")
        for i in range(600)  # more than one id chunk
    ]
    idx.upsert(rows)
    expected = {r.id: (r.file_mtime_ns, r.content_hash) for r in rows}
    assert idx.manifest() == expected
    idx.upsert([row("f-7", "edited", file_mtime_ns=99, content_hash="changed")])
    idx.delete([f"f-{i}" for i in range(100, 600)])
    reopened = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    manifest = reopened.manifest()
    assert len(manifest) == 100
    assert manifest["f-7"] == (99, "changed")
    assert manifest["f-8"] == (1008, f"{8:016x}")
    assert len(reopened.get([f"f-{i}" for i in range(600)])) == 100


def test_filters_follow_later_writes(tmp_path: Path) -> None:
    idx = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    idx.upsert([row(f"f-{i}", f"fact {i}") for i in range(6)])
    active = "status = 'active' AND kind = 'fact'"
    probe = FakeEmbedder().embed(["fact 3"])[0]
    assert idx.vector_search(probe, 1, where=active)[0].row.id == "f-3"  # mask now cached
    idx.upsert([row("f-3", "fact 3", status="superseded")])
    assert "f-3" not in {h.row.id for h in idx.vector_search(probe, 10, where=active)}
    idx.upsert([row("f-new", "fact 3")])  # same text, new id, active
    assert idx.vector_search(probe, 1, where=active)[0].row.id == "f-new"
    idx.delete(["f-new"])
    hits = idx.vector_search(probe, 10, where=active)
    assert {h.row.id for h in hits} == {"f-0", "f-1", "f-2", "f-4", "f-5"}
    assert idx.vector_search(probe, 10, where="status = 'archived'") == []
    with pytest.raises(IndexError_):
        idx.vector_search(probe, 3, where="no_such_column = 1")


def test_many_replaced_rows_are_compacted_without_losing_any(tmp_path: Path) -> None:
    idx = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    n = 1100
    idx.upsert([row(f"f-{i}", f"first version {i}") for i in range(n)])
    where = "status = 'active'"
    probe = FakeEmbedder().embed(["second version 7"])[0]
    assert len(idx.vector_search(probe, n, where=where)) == n
    # Replacing every row leaves more dead positions than live ones: the copy compacts.
    idx.upsert(
        [
            row(f"f-{i}", f"second version {i}", status="active" if i % 2 else "superseded")
            for i in range(n)
        ]
    )
    assert idx.count() == n
    hits = idx.vector_search(probe, n, where=where)
    assert {h.row.id for h in hits} == {f"f-{i}" for i in range(1, n, 2)}
    assert idx.get(["f-8"])["f-8"].content == "second version 8"
    assert idx.nearest("second version 7", 1)[0].row.id == "f-7"
    texts = idx.text_search("second version", n, where=where)
    assert {h.row.id for h in texts} == {f"f-{i}" for i in range(1, n, 2)}


def test_writes_from_another_process_become_visible(tmp_path: Path) -> None:
    writer = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    reader = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    writer.upsert([row("a", "alpha apples"), row("b", "beta bananas")])
    reader.refresh()
    assert set(reader.get(["a", "b"])) == {"a", "b"}  # the reader now holds a copy
    writer.upsert([row("c", "gamma grapes")])
    writer.delete(["a"])
    reader.refresh()
    assert set(reader.get(["a", "b", "c"])) == {"b", "c"}
    assert [h.row.id for h in reader.text_search("grapes", 5)] == ["c"]
    assert reader.nearest("gamma grapes", 1)[0].row.id == "c"
    assert reader.manifest().keys() == {"b", "c"}


def test_approximate_vector_search_finds_the_exact_top_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall's shortlist (projected vectors, then exact re-scoring) agrees with exact search,
    follows later writes and respects the filter."""
    import engram_md.index.resident as index_module

    monkeypatch.setattr(index_module, "_SHORTLIST_MIN_ROWS", 100)
    monkeypatch.setattr(index_module, "_SHORTLIST_FLOOR", 100)
    idx = MemoryIndex.open(tmp_path / "index", FakeEmbedder(dim=96))
    n = 1500
    idx.upsert([row(f"f-{i}", f"memory number {i} about topic {i % 37}") for i in range(n)])
    embedder = FakeEmbedder(dim=96)
    for text in ("memory number 12 about topic 12", "topic 5", "number 1499"):
        probe = embedder.embed([text])[0]
        exact = idx.vector_search(probe, 10)
        approx = idx.vector_search(probe, 10, exact=False)
        assert [h.row.id for h in approx][:3] == [h.row.id for h in exact][:3]
        assert len({h.row.id for h in approx} & {h.row.id for h in exact}) >= 8
        # Scores are exact cosines either way.
        assert approx[0].score == pytest.approx(exact[0].score, abs=1e-6)
    probe = embedder.embed(["memory number 12 about topic 12"])[0]
    idx.upsert([row("f-12", "memory number 12 about topic 12", status="superseded")])
    idx.upsert([row("f-late", "memory number 12 about topic 12")])
    hits = idx.vector_search(probe, 5, where="status = 'active'", exact=False)
    assert hits[0].row.id == "f-late"
    assert "f-12" not in {h.row.id for h in hits}


def test_filtered_text_search_matches_the_prefiltered_answer(tmp_path: Path) -> None:
    """Text search filters in memory; when most matches fail the filter it asks LanceDB."""
    idx = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    rows = [
        row(f"f-{i}", f"garden note {i}", status="active" if i % 10 == 0 else "archived")
        for i in range(60)
    ]
    idx.upsert(rows)
    hits = idx.text_search("garden", 5, where="status = 'active'")
    assert len(hits) == 5
    assert all(h.row.status == "active" for h in hits)
    assert {h.row.id for h in idx.text_search("garden", 50, where="status = 'active'")} == {
        f"f-{i}" for i in range(0, 60, 10)
    }


def test_rows_are_built_once_and_follow_updates(index: MemoryIndex) -> None:
    first = index.get(["f-uv"])["f-uv"]
    assert index.get(["f-uv"])["f-uv"] is first  # served from the row cache
    index.upsert([row("f-uv", "Dana now prefers poetry over uv")])
    again = index.get(["f-uv"])["f-uv"]
    assert again.content == "Dana now prefers poetry over uv"
    assert index.text_search("poetry", 3)[0].row.content == again.content


def _stored_ids(path: Path) -> set[str]:
    """What LanceDB itself holds, read through a separate handle (another process's view)."""
    other = MemoryIndex.open(path, FakeEmbedder())
    return set(other.manifest())


def test_held_writes_are_searchable_here_before_lancedb_has_them(tmp_path: Path) -> None:
    path = tmp_path / "index"
    idx = MemoryIndex.open(path, FakeEmbedder())
    idx.upsert([row("a", "apples are red")])
    idx.hold_writes(3600)
    idx.upsert([row("b", "bananas are yellow")])
    idx.upsert([row("b", "bananas are green when unripe")])
    # This process sees the write at once; LanceDB does not have it yet.
    assert idx.get(["b"])["b"].content == "bananas are green when unripe"
    assert [h.row.id for h in idx.vector_search(idx.get(["b"])["b"].vector, 1)] == ["b"]
    # Text search is answered from memory too: the last write of an id wins.
    assert [h.row.id for h in idx.text_search("unripe", 5)] == ["b"]
    assert idx.text_search("yellow", 5) == []
    assert _stored_ids(path) == {"a"}
    idx.commit()
    stored = MemoryIndex.open(path, FakeEmbedder())
    assert stored.get(["b"])["b"].content == "bananas are green when unripe"
    assert stored.count() == 2


def test_held_writes_are_committed_when_due_on_close_and_before_a_delete(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index"
    idx = MemoryIndex.open(path, FakeEmbedder())
    idx.hold_writes(3600)
    idx.upsert([row("a", "apples are red")])
    idx.commit(due_only=True)
    assert _stored_ids(path) == set()  # not due yet
    idx.hold_writes(0.01)
    idx.upsert([row("b", "bananas are yellow")])
    time.sleep(0.02)
    idx.commit(due_only=True)
    assert _stored_ids(path) == {"a", "b"}
    idx.hold_writes(3600)
    idx.upsert([row("c", "cherries are dark")])
    idx.delete(["a"])
    assert _stored_ids(path) == {"b", "c"}
    idx.upsert([row("d", "dates are sweet")])
    idx.close()
    assert _stored_ids(path) == {"b", "c", "d"}


def test_equality_filters_in_memory_match_lancedb(tmp_path: Path) -> None:
    idx = MemoryIndex.open(tmp_path / "index", FakeEmbedder())
    idx.upsert(
        [
            row("a", "alpha", status="active"),
            row("b", "beta", status="superseded"),
            row("c", "gamma", status="active", kind="box", category="box"),
            row("d", "delta", status="active", session="other"),
        ]
    )
    vector = idx.get(["a"])["a"].vector
    for where in (
        "status = 'active' AND kind = 'fact'",
        "kind = 'fact'",
        "status = 'active' AND kind = 'box'",
        "session = 'other' AND status = 'active'",
        "status = 'nope'",
    ):
        in_memory = {h.row.id for h in idx.vector_search(vector, 10, where=where)}
        # The same filter with an OR around it is not an equality list: LanceDB answers it.
        by_lancedb = {h.row.id for h in idx.vector_search(vector, 10, where=f"({where}) OR 1 = 0")}
        assert in_memory == by_lancedb, where
    assert {h.row.id for h in idx.vector_search(vector, 10, where="kind = 'fact'")} == {
        "a",
        "b",
        "d",
    }

"""The index follows the memory folder: hand edits, deletions, moves, broken files, rebuilds.

Real fact files, the real local model and a real LanceDB index in tmp_path; the engine is
opened the way the CLI opens it, so "at start" means what it means for `engram-md run`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engram_md.app import Engine, open_engine
from engram_md.core.config import Config
from engram_md.core.models import CandidateFact, Category, Fact, Source, Status
from engram_md.index.indexer import Indexer
from engram_md.index.similar import same_specifics, specifics
from engram_md.ingest.pipeline import to_fact
from engram_md.store.factfile import render_fact
from engram_md.text.embeddings import LocalMiniLM

T0 = datetime(2026, 3, 2, 9, 2, tzinfo=UTC)


@pytest.fixture
def opened(cfg: Config, minilm: LocalMiniLM) -> Iterator[Engine]:
    with engine(cfg, minilm) as eng:
        yield eng


class Counting:
    """The real model, remembering which texts it was asked to embed."""

    def __init__(self, inner: LocalMiniLM) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.texts: list[str] = []

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@contextmanager
def engine(cfg: Config, minilm: LocalMiniLM | Counting) -> Iterator[Engine]:
    eng = open_engine(cfg, embedder=minilm)
    try:
        yield eng
    finally:
        eng.close()


def fact(
    text: str, *, category: Category = Category.PREFERENCE, minute: int = 0, turn: str = "t1"
) -> Fact:
    made = to_fact(
        CandidateFact(
            category=category,
            content=text,
            confidence=0.95,
            source_turn_ids=(turn,),
            session="s1",
            created=T0 + timedelta(minutes=minute),
            source=Source.MANUAL,
        )
    )
    assert made is not None
    return made


def write_by_hand(cfg: Config, item: Fact, *, day: str = "2026-03-02") -> Path:
    """A fact file written the way a person (or git) would: no index, no hash index."""
    path = cfg.memory_dir / "facts" / day / f"{item.category.value}-{item.content_hash[:8]}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_fact(item), encoding="utf-8")
    return path


def edit(path: Path, text: str) -> None:
    """Rewrite a file and make sure its mtime moves (timestamps are coarser than a test)."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    after = path.stat().st_mtime_ns
    if after <= before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def rel(cfg: Config, path: Path) -> str:
    return path.relative_to(cfg.memory_dir).as_posix()


def indexer_of(eng: Engine) -> Indexer:
    assert eng.indexer is not None
    return eng.indexer


def store_like_the_pipeline(eng: Engine, item: Fact) -> Path:
    path = eng.store.write_new(item)
    indexer_of(eng).upsert_fact(path, item, new=True)
    indexer_of(eng).batch_done()  # the pipeline ends every batch this way
    return path


UV = "Dana prefers uv over pip for installing Python packages."
TEA = "Dana drinks green tea every afternoon."
PG = "The team moved the staging database to PostgreSQL 16."


# ---------------------------------------------------------------- reconcile at start


def test_start_indexes_a_file_added_by_hand_and_learns_its_hash(
    cfg: Config, minilm: LocalMiniLM
) -> None:
    with engine(cfg, minilm):
        pass
    added = fact(UV)
    path = write_by_hand(cfg, added)
    with engine(cfg, minilm) as eng:
        row = indexer_of(eng).index.get([added.id])[added.id]
        assert row.path == rel(cfg, path)
        assert row.content == UV
        assert row.file_mtime_ns == path.stat().st_mtime_ns
        assert eng.store.hashes.lookup(added.content_hash) == rel(cfg, path)
        # Exact dedup now knows the hand-written statement.
        assert eng.store.find(added.content_hash) is not None


def test_a_status_edited_by_hand_reaches_the_row(cfg: Config, minilm: LocalMiniLM) -> None:
    uv = fact(UV)
    with engine(cfg, minilm) as eng:
        path = store_like_the_pipeline(eng, uv)
        vector_before = indexer_of(eng).index.get([uv.id])[uv.id].vector
    text = path.read_text(encoding="utf-8")
    assert "status: active" in text
    edit(path, text.replace("status: active", "status: superseded"))
    counting = Counting(minilm)
    with engine(cfg, counting) as eng:
        indexer = indexer_of(eng)
        row = indexer.index.get([uv.id])[uv.id]
        assert row.status == Status.SUPERSEDED.value
        assert row.file_mtime_ns == path.stat().st_mtime_ns
        # Only the status changed, so the stored vector was kept rather than recomputed.
        assert UV not in counting.texts
        assert row.vector is not None and vector_before is not None
        assert np.allclose(row.vector, vector_before, atol=1e-6)
        # A superseded fact is no longer a near-duplicate target (it is not active).
        assert indexer.near_duplicate(fact(UV, minute=5, turn="t9")) is None
        # Nothing else to do on a second pass.
        again = indexer.reconcile()
        assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 1)


def test_an_edited_statement_is_re_embedded_and_its_old_hash_forgotten(
    cfg: Config, minilm: LocalMiniLM
) -> None:
    uv = fact(UV)
    with engine(cfg, minilm) as eng:
        path = store_like_the_pipeline(eng, uv)
    edit(path, path.read_text(encoding="utf-8").replace(UV, TEA))
    with engine(cfg, minilm) as eng:
        row = indexer_of(eng).index.get([uv.id])[uv.id]
        assert row.content == TEA
        assert row.vector is not None
        assert float(row.vector @ minilm.embed([TEA])[0]) > 0.999
        assert eng.store.hashes.lookup(uv.content_hash) is None
        assert eng.store.hashes.lookup(fact(TEA).content_hash) == rel(cfg, path)


def test_a_deleted_file_loses_its_row_and_its_hash(cfg: Config, minilm: LocalMiniLM) -> None:
    uv, tea = fact(UV), fact(TEA, minute=1)
    with engine(cfg, minilm) as eng:
        gone = store_like_the_pipeline(eng, uv)
        store_like_the_pipeline(eng, tea)
    gone.unlink()
    with engine(cfg, minilm) as eng:
        index = indexer_of(eng).index
        assert set(index.manifest()) == {tea.id}
        assert eng.store.hashes.lookup(uv.content_hash) is None
        assert eng.store.hashes.lookup(tea.content_hash) is not None
        # The hash file on disk agrees, so a later start does not resurrect it.
        assert uv.content_hash not in cfg.state_dir.joinpath("fact-hashes.txt").read_text()


def test_a_moved_file_keeps_one_row_at_its_new_path(cfg: Config, minilm: LocalMiniLM) -> None:
    uv = fact(UV)
    with engine(cfg, minilm) as eng:
        old = store_like_the_pipeline(eng, uv)
    new = cfg.memory_dir / "archive" / "facts" / "2026-03-02" / old.name
    new.parent.mkdir(parents=True)
    shutil.move(old, new)
    with engine(cfg, minilm) as eng:
        indexer = indexer_of(eng)
        assert list(indexer.index.manifest()) == [uv.id]
        assert indexer.index.get([uv.id])[uv.id].path == rel(cfg, new)
        assert eng.store.hashes.lookup(uv.content_hash) == rel(cfg, new)
        report = indexer.reconcile()
        assert report.unchanged == 1 and not report.changed


def test_broken_frontmatter_is_reported_left_alone_and_dropped_from_recall(
    cfg: Config, minilm: LocalMiniLM
) -> None:
    uv, tea = fact(UV), fact(TEA, minute=1)
    with engine(cfg, minilm) as eng:
        broken = store_like_the_pipeline(eng, uv)
        store_like_the_pipeline(eng, tea)
    good_text = broken.read_text(encoding="utf-8")
    bad_text = good_text.replace("category: preference", "category: [preference")
    edit(broken, bad_text)
    bad_bytes = broken.read_bytes()
    added = fact(PG, category=Category.DECISION, minute=2)
    write_by_hand(cfg, added)
    with engine(cfg, minilm) as eng:
        indexer = indexer_of(eng)
        report = indexer.reconcile(full=True)
        assert len(report.broken) == 1
        assert report.broken[0].startswith(rel(cfg, broken) + ": ")
        assert "YAML" in report.broken[0]
        assert broken.read_bytes() == bad_bytes
        # The rest is indexed; the stale row of the broken file is gone, not served.
        assert set(indexer.index.manifest()) == {tea.id, added.id}
        assert eng.store.hashes.lookup(uv.content_hash) is None
    # Fixed by hand: it comes back.
    edit(broken, good_text)
    with engine(cfg, minilm) as eng:
        assert uv.id in indexer_of(eng).index.manifest()


def test_two_files_with_one_id_index_the_live_one_and_report_the_other(
    opened: Engine, cfg: Config
) -> None:
    uv = fact(UV)
    live = store_like_the_pipeline(opened, uv)
    copy = cfg.memory_dir / "archive" / "facts" / "2026-03-02" / live.name
    copy.parent.mkdir(parents=True)
    shutil.copy(live, copy)
    indexer = indexer_of(opened)
    report = indexer.reconcile()
    assert report.broken == (
        f"{rel(cfg, copy)}: same id {uv.id!r} as {rel(cfg, live)}; not indexed",
    )
    assert indexer.index.get([uv.id])[uv.id].path == rel(cfg, live)
    # The live file goes away: the copy takes the row over, even through a cheap pass.
    live.unlink()
    report = indexer.reconcile_paths([live])
    assert report.moved == 1 and report.removed == 0
    assert indexer.index.get([uv.id])[uv.id].path == rel(cfg, copy)


# ---------------------------------------------------------------- paths and rebuild


def test_reconcile_paths_is_a_no_op_for_the_daemons_own_writes(opened: Engine) -> None:
    indexer = indexer_of(opened)
    path = store_like_the_pipeline(opened, fact(UV))
    version = indexer.index._table.version
    report = indexer.reconcile_paths([path, path.parent])
    assert report.unchanged == 1 and not report.changed
    assert indexer.index._table.version == version  # nothing was written


def test_reconcile_paths_handles_a_deleted_folder(opened: Engine, cfg: Config) -> None:
    indexer = indexer_of(opened)
    uv, tea = fact(UV), fact(TEA, minute=1)
    store_like_the_pipeline(opened, uv)
    store_like_the_pipeline(opened, tea)
    day = cfg.memory_dir / "facts" / "2026-03-02"
    shutil.rmtree(day)
    report = indexer.reconcile_paths([day])
    assert report.removed == 2
    assert indexer.index.manifest() == {}
    assert len(opened.store.hashes) == 0


def test_paths_outside_the_fact_folders_are_ignored(opened: Engine, cfg: Config) -> None:
    profile = cfg.memory_dir / "profile.md"
    profile.write_text("# Profile\n", encoding="utf-8")
    temp = cfg.memory_dir / "facts" / "2026-03-02" / ".x.md.tmp-1"
    temp.parent.mkdir(parents=True)
    temp.write_text("---\nid: x\n---\n", encoding="utf-8")
    report = indexer_of(opened).reconcile_paths([profile, temp, Path("/elsewhere/a.md")])
    assert report == type(report)()


def test_rebuild_from_scratch_equals_the_incremental_index(
    cfg: Config, minilm: LocalMiniLM
) -> None:
    texts = [UV, TEA, PG, "Dana's sister Maria lives in Lisbon.", "Dana reviews pull requests."]
    with engine(cfg, minilm) as eng:
        paths = [store_like_the_pipeline(eng, fact(t, minute=i)) for i, t in enumerate(texts)]
    # Hand changes while the daemon is down: one edit, one deletion, one addition, one move.
    edit(paths[0], paths[0].read_text(encoding="utf-8").replace("status: active", "status: merged"))
    paths[1].unlink()
    write_by_hand(cfg, fact("Dana bikes to work.", minute=9), day="2026-03-03")
    moved = cfg.memory_dir / "facts" / "2026-03-04" / paths[2].name
    moved.parent.mkdir(parents=True)
    paths[2].rename(moved)

    def snapshot(indexer: Indexer) -> dict[str, tuple[object, ...]]:
        rows = indexer.index.get(list(indexer.index.manifest()))
        return {
            i: (r.path, r.status, r.content, r.content_hash, r.file_mtime_ns, r.category)
            for i, r in rows.items()
        }

    with engine(cfg, minilm) as eng:
        indexer = indexer_of(eng)
        incremental = snapshot(indexer)
        vectors = {i: r.vector for i, r in indexer.index.get(list(incremental)).items()}
        hashes = eng.store.hashes.items()
        centroid = indexer.centroid()
        calls: list[tuple[int, int]] = []
        report = indexer.rebuild(progress=lambda done, total: calls.append((done, total)))
        assert report.unchanged == 0 and report.added + report.updated == 5
        assert calls[-1] == (5, 5)
        assert snapshot(indexer) == incremental
        for i, row in indexer.index.get(list(incremental)).items():
            assert row.vector is not None
            assert np.allclose(row.vector, vectors[i], atol=1e-6)
        assert eng.store.hashes.items() == hashes
        # The published centroid is the mean of what the folder holds now.
        rebuilt = indexer.centroid()
        assert rebuilt is not None and centroid is not None
        mean = np.stack([vectors[i] for i in incremental]).mean(axis=0)
        assert np.allclose(rebuilt, mean / np.linalg.norm(mean), atol=1e-5)


def test_the_centroid_follows_hand_deletions_at_the_next_batch(opened: Engine) -> None:
    indexer = indexer_of(opened)
    uv, tea, pg = fact(UV), fact(TEA, minute=1), fact(PG, category=Category.DECISION, minute=2)
    paths = [store_like_the_pipeline(opened, f) for f in (uv, tea, pg)]
    indexer.batch_done()
    before = indexer.centroid()
    paths[1].unlink()
    indexer.reconcile_paths([paths[1]])
    # Published only when a batch finishes, so a batch in flight sees one centroid.
    assert np.array_equal(indexer.centroid(), before)
    indexer.batch_done()
    vectors = minilm_vectors(indexer, [uv.id, pg.id])
    mean = vectors.mean(axis=0)
    assert np.allclose(indexer.centroid(), mean / np.linalg.norm(mean), atol=1e-5)


def minilm_vectors(indexer: Indexer, ids: list[str]) -> np.ndarray:
    rows = indexer.index.get(ids)
    return np.stack([rows[i].vector for i in ids])


# ---------------------------------------------------------------- near duplicates


def test_near_duplicate_needs_cosine_word_overlap_category_and_the_same_specifics(
    opened: Engine,
) -> None:
    indexer = indexer_of(opened)
    stored = store_like_the_pipeline(opened, fact(UV))
    meeting = fact("The team meeting is on Monday at 10am.", category=Category.FACT, minute=1)
    store_like_the_pipeline(opened, meeting)

    def probe(text: str, category: Category = Category.PREFERENCE) -> Path | None:
        found = indexer.near_duplicate(fact(text, category=category, minute=30, turn="t7"))
        return None if found is None else found[0]

    # Reworded twin: cosine ~0.99 and most content words shared.
    assert probe("Dana prefers uv instead of pip for installing Python packages.") == stored
    # Related, same category, many shared words, but another tool: cosine ~0.78.
    assert probe("Dana prefers poetry over pip for installing Python packages.") is None
    # Close in meaning (cosine ~0.94) but about setting up projects: word overlap 0.5.
    assert probe("Dana prefers using uv over pip to set up Python projects.") is None
    # The same words under another category are another kind of memory.
    assert probe(UV.replace("prefers", "prefers,"), Category.DECISION) is None
    # Cosine ~0.96 and overlap 0.6 pass, yet the day changed: news, not a confirmation.
    assert probe("The team meeting is on Tuesday at 10am.", Category.FACT) is None
    assert probe("The team meeting is on Monday at 10am!", Category.FACT) is not None


def test_specifics_are_numbers_and_names_inside_a_sentence() -> None:
    assert specifics("The meeting is on Monday at 10am. Dana leads it.") == {"monday", "10am"}
    assert same_specifics("Python is Dana's language.", "Dana's language is Python.")
    assert not same_specifics("Staging runs PostgreSQL 15.", "Staging runs PostgreSQL 16.")

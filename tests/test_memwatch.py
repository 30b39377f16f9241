"""The memory watcher: hand edits reach the index while the daemon runs.

A real watchdog observer on a real memory folder, the real model and LanceDB index; each
check polls the index with a deadline instead of sleeping a fixed time.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram_md.app import Engine, open_engine
from engram_md.core.config import Config
from engram_md.core.models import Fact
from engram_md.index.indexer import Indexer
from engram_md.index.memwatch import MemoryWatcher
from engram_md.index.reconcile import ReconcileReport
from engram_md.store.factfile import render_fact
from engram_md.text.embeddings import LocalMiniLM

from .rows import preference_fact

T0 = datetime(2026, 3, 2, 9, 2, tzinfo=UTC)
WITHIN = 2.5  # seconds: "about two", with room for a busy machine


@pytest.fixture
def eng(cfg: Config, minilm: LocalMiniLM) -> Iterator[Engine]:
    opened = open_engine(cfg, embedder=minilm)
    try:
        yield opened
    finally:
        opened.close()


class Spy:
    """Records every batch the watcher hands to the indexer, and the reports."""

    def __init__(self, indexer: Indexer) -> None:
        self._inner = indexer.reconcile_paths
        self.batches: list[list[Path]] = []
        self.reports: list[ReconcileReport] = []
        self._lock = threading.Lock()

    def __call__(self, paths: list[Path]) -> ReconcileReport:
        report = self._inner(paths)
        with self._lock:
            self.batches.append(list(paths))
            self.reports.append(report)
        return report


@pytest.fixture
def watched(eng: Engine, cfg: Config, monkeypatch: pytest.MonkeyPatch) -> Iterator[Spy]:
    assert eng.indexer is not None
    spy = Spy(eng.indexer)
    monkeypatch.setattr(eng.indexer, "reconcile_paths", spy)
    watcher = MemoryWatcher(eng.indexer, cfg.memory_dir, debounce_seconds=0.1)
    watcher.start()
    try:
        yield spy
    finally:
        watcher.stop()


def written(eng: Engine, item: Fact) -> Path:
    """Written the way the pipeline writes: file, hash, row."""
    assert eng.indexer is not None
    path = eng.store.write_new(item)
    eng.indexer.upsert_fact(path, item, new=True)
    eng.indexer.batch_done()
    return path


def wait_for(condition: Callable[[], bool], what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < WITHIN:
        if condition():
            return time.monotonic() - start
        time.sleep(0.02)
    pytest.fail(f"not within {WITHIN}s: {what}")


def status_of(eng: Engine, fact_id: str) -> str | None:
    assert eng.indexer is not None
    row = eng.indexer.index.get([fact_id]).get(fact_id)
    return None if row is None else row.status


UV = "Dana prefers uv over pip for installing Python packages."
TEA = "Dana drinks green tea every afternoon."


def test_a_status_edit_reaches_the_index(eng: Engine, watched: Spy) -> None:
    uv = preference_fact(UV)
    path = written(eng, uv)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("status: active", "status: superseded"), encoding="utf-8")
    wait_for(lambda: status_of(eng, uv.id) == "superseded", "the row's status follows the file")


def test_a_deleted_file_leaves_the_index(eng: Engine, watched: Spy) -> None:
    uv, tea = preference_fact(UV), preference_fact(TEA, minute=1)
    path = written(eng, uv)
    written(eng, tea)
    path.unlink()
    wait_for(
        lambda: status_of(eng, uv.id) is None and eng.store.hashes.lookup(uv.content_hash) is None,
        "the deleted file's row and hash are gone",
    )
    assert status_of(eng, tea.id) == "active"
    assert eng.store.hashes.lookup(tea.content_hash) is not None


def test_a_file_added_by_hand_is_indexed(eng: Engine, cfg: Config, watched: Spy) -> None:
    tea = preference_fact(TEA)
    # A new day folder with the file in it, as a git pull would bring.
    path = cfg.memory_dir / "facts" / "2026-03-05" / "preference-by-hand.md"
    path.parent.mkdir(parents=True)
    path.write_text(render_fact(tea), encoding="utf-8")
    where = "facts/2026-03-05/preference-by-hand.md"
    wait_for(
        lambda: (
            status_of(eng, tea.id) == "active"
            and eng.store.hashes.lookup(tea.content_hash) == where
        ),
        "the new file is indexed and its hash learned",
    )


def test_a_moved_folder_keeps_one_row_per_fact(eng: Engine, cfg: Config, watched: Spy) -> None:
    assert eng.indexer is not None
    uv = preference_fact(UV)
    path = written(eng, uv)
    target = cfg.memory_dir / "archive" / "facts" / "2026-03-02"
    target.parent.mkdir(parents=True)
    shutil.move(path.parent, target)
    expected = f"archive/facts/2026-03-02/{path.name}"

    def moved() -> bool:
        assert eng.indexer is not None
        row = eng.indexer.index.get([uv.id]).get(uv.id)
        return row is not None and row.path == expected

    wait_for(moved, "the row follows the moved folder")
    assert list(eng.indexer.index.manifest()) == [uv.id]


def test_broken_frontmatter_is_reported(eng: Engine, cfg: Config, minilm: LocalMiniLM) -> None:
    assert eng.indexer is not None
    reports: list[ReconcileReport] = []
    uv = preference_fact(UV)
    path = written(eng, uv)
    with MemoryWatcher(eng.indexer, cfg.memory_dir, debounce_seconds=0.1, on_report=reports.append):
        bad = path.read_text(encoding="utf-8").replace("id: ", "id: [", 1)
        path.write_text(bad, encoding="utf-8")
        wait_for(lambda: any(r.broken for r in reports), "the broken file is reported")
    assert path.read_text(encoding="utf-8") == bad
    assert status_of(eng, uv.id) is None


def test_the_daemons_own_writes_are_no_ops(eng: Engine, cfg: Config, watched: Spy) -> None:
    path = written(eng, preference_fact(UV))
    wait_for(lambda: any(path in batch for batch in watched.batches), "the write is seen")
    seen = [r for r, b in zip(watched.reports, watched.batches, strict=True) if path in b]
    assert all(not r.changed and r.unchanged == 1 for r in seen)
    # Files that are not facts never reach the indexer.
    (cfg.memory_dir / "profile.md").write_text("# Profile\n", encoding="utf-8")
    (path.parent / f".{path.name}.tmp-99").write_text("partial", encoding="utf-8")
    (path.parent / "notes.txt").write_text("scratch", encoding="utf-8")
    time.sleep(0.4)  # several debounce periods: long enough for a batch to have gone out
    handed = {p for batch in watched.batches for p in batch}
    # The new facts/ and day folders are handed over too (files may land in a new folder
    # before its watch is in place); nothing else is.
    assert handed <= {path, path.parent, path.parent.parent}

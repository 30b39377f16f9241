"""Keeps the LanceDB index true to the memory folder.

The folder is the truth; the index is derived. This module turns fact files into index rows
(upsert on every write), reconciles the index with the folder at start (hand edits, deleted
files, git checkouts), answers the write-time near-duplicate question, and keeps the running
centroid of stored memories that the offline extractor's novelty score needs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .config import Config
from .embeddings import Embedder
from .errors import MemoryFileError
from .factfile import read_fact
from .hashing import normalize_text
from .index import IndexRow, MemoryIndex
from .models import Fact
from .paths import MemoryLayout
from .store import MemoryStore

log = logging.getLogger(__name__)

# Words too common to say two statements are about the same thing.
_STOP = frozenset(
    "a an the and or but of to in on at for with by from is are was were be been it its this "
    "that these those as i you he she we they my your his her our their me him them not no "
    "so do does did has have had will would can could should just very also".split()
)


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    broken: tuple[str, ...] = ()  # "path: reason" for files that could not be read


def fact_row(layout: MemoryLayout, path: Path, fact: Fact, mtime_ns: int | None = None) -> IndexRow:
    if mtime_ns is None:
        try:
            mtime_ns = path.stat().st_mtime_ns
        except OSError:
            mtime_ns = 0
    speaker = ""
    for entity in fact.entities:
        if entity.startswith("person-"):
            speaker = entity.removeprefix("person-")
            break
    return IndexRow(
        id=fact.id,
        path=layout.relative(path),
        kind="fact",
        content=fact.content,
        category=fact.category.value,
        memory_kind=fact.memory_kind.value,
        status=fact.status.value,
        lifecycle_state=fact.lifecycle_state.value,
        importance=float(fact.importance),
        confidence=float(fact.confidence),
        created=fact.created,
        updated=fact.updated,
        session=fact.session,
        source_turn_ids=tuple(fact.source_turn_ids),
        entities=tuple(fact.entities),
        tags=tuple(fact.tags),
        speaker=speaker,
        access_count=int(fact.access_count),
        confirmations=int(fact.confirmations),
        file_mtime_ns=int(mtime_ns),
        content_hash=fact.content_hash,
    )


def content_words(text: str) -> set[str]:
    return {w for w in normalize_text(text).split() if w not in _STOP}


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of content words: the second test a near-duplicate must pass."""
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


class Indexer:
    def __init__(
        self,
        cfg: Config,
        layout: MemoryLayout,
        store: MemoryStore,
        index: MemoryIndex,
        embedder: Embedder,
    ) -> None:
        self.cfg = cfg
        self.layout = layout
        self.store = store
        self.index = index
        self.embedder = embedder
        self._sum: np.ndarray | None = None
        self._count = 0
        self._snapshot: tuple[np.ndarray, int] | None = None
        self._loaded = False
        self._centroid_path = layout.state_dir / "centroid.npz"

    @classmethod
    def open(
        cls,
        cfg: Config,
        layout: MemoryLayout,
        store: MemoryStore,
        embedder: Embedder,
        *,
        reconcile: bool = True,
    ) -> Indexer:
        index = MemoryIndex.open(layout.index_dir, embedder)
        indexer = cls(cfg, layout, store, index, embedder)
        if reconcile:
            report = indexer.reconcile()
            for problem in report.broken:
                log.warning("skipped %s", problem)
        return indexer

    def close(self) -> None:
        pass

    # ------------------------------------------------------------ reconcile
    def reconcile(
        self, *, progress: Callable[[int, int], None] | None = None, full: bool = False
    ) -> ReconcileReport:
        """Make the index match the folder: new and edited files in, deleted ones out.

        Cheap when nothing changed: a file is re-read only when its mtime differs from the
        one recorded in the index (or always, with ``full``).
        """
        manifest = {} if full else self.index.manifest()
        seen: set[str] = set()
        rows: list[IndexRow] = []
        broken: list[str] = []
        unchanged = updated = added = 0
        paths = list(self.store.fact_paths())
        rel_to_id = {rel: id_ for id_, (_m, _h, rel) in self._manifest_paths(manifest).items()}
        for done, path in enumerate(paths, 1):
            rel = self.layout.relative(path)
            try:
                mtime = path.stat().st_mtime_ns
            except OSError:
                continue
            known_id = rel_to_id.get(rel)
            if known_id is not None and manifest[known_id][0] == mtime:
                seen.add(known_id)
                unchanged += 1
            else:
                try:
                    fact = read_fact(path)
                except MemoryFileError as exc:
                    broken.append(str(exc))
                    if known_id is not None:
                        seen.add(known_id)  # keep the last good row until it is fixed
                    continue
                seen.add(fact.id)
                rows.append(fact_row(self.layout, path, fact, mtime))
                if fact.id in manifest:
                    updated += 1
                else:
                    added += 1
            if progress is not None:
                progress(done, len(paths))
            if len(rows) >= 512:
                self.index.upsert(rows)
                rows = []
        if rows:
            self.index.upsert(rows)
        stale = [id_ for id_ in manifest if id_ not in seen]
        if stale:
            self.index.delete(stale)
        if added or updated or stale or full:
            self.index.optimize()
        return ReconcileReport(added, updated, len(stale), unchanged, tuple(broken))

    def _manifest_paths(
        self, manifest: dict[str, tuple[int, str]]
    ) -> dict[str, tuple[int, str, str]]:
        paths = self.index.paths(list(manifest)) if manifest else {}
        return {id_: (m, h, paths.get(id_, "")) for id_, (m, h) in manifest.items()}

    # ------------------------------------------------------------ writes
    def upsert_fact(self, path: Path, fact: Fact, *, new: bool) -> None:
        row = fact_row(self.layout, path, fact)
        vector = self.embedder.embed([fact.content])[0]
        self.index.upsert([replace(row, vector=vector)])
        if new:
            self._ensure_centroid()
            self._sum = vector.astype(np.float64) if self._sum is None else self._sum + vector
            self._count += 1

    def remove(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            self.index.delete(ids)
            self._sum, self._count = None, 0
            self._snapshot = None

    def batch_done(self) -> None:
        """A batch's memories are all written: publish the centroid the next batch sees.

        The extractor reads the centroid as of the last finished batch, never a half-written
        one, so a batch redone after a crash scores its episodes exactly as the first try did.
        """
        self._ensure_centroid()
        if self._sum is None or not self._count:
            return
        self._snapshot = (self._sum.copy(), self._count)
        tmp = self._centroid_path.with_name(".centroid.tmp.npz")
        np.savez(tmp, sum=self._sum, count=np.array([self._count]), model=self.embedder.model_id)
        os.replace(tmp, self._centroid_path)

    # ------------------------------------------------------------ questions
    def near_duplicate(self, fact: Fact) -> tuple[Path, Fact] | None:
        """An active stored fact that says the same thing in other words, if any.

        Cosine similarity alone does not separate a duplicate from a related fact (related
        notes reach 0.84-0.90), so a hit must also share most content words and the category.
        """
        dedup = self.cfg.dedup
        if not dedup.near_duplicate:
            return None
        hits = self.index.nearest(fact.content, 5, where="status = 'active' AND kind = 'fact'")
        for hit in hits:
            row = hit.row
            if hit.score < dedup.cosine_threshold:
                break
            if row.category != fact.category.value:
                continue
            if word_overlap(row.content, fact.content) < dedup.token_overlap_threshold:
                continue
            path = self.layout.memory_dir / row.path
            try:
                stored = read_fact(path)
            except MemoryFileError:
                continue
            return path, stored
        return None

    def centroid(self) -> np.ndarray | None:
        """Mean embedding of the memories stored before the current batch (None if none)."""
        self._ensure_centroid()
        if self._snapshot is None:
            return None
        total, count = self._snapshot
        mean = total / count
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None

    def _ensure_centroid(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            with np.load(self._centroid_path) as saved:
                if str(saved["model"]) == self.embedder.model_id:
                    self._sum = saved["sum"].astype(np.float64)
                    self._count = int(saved["count"][0])
        except (OSError, KeyError, ValueError):
            vectors = self.index.all_vectors()
            self._count = len(vectors)
            self._sum = vectors.astype(np.float64).sum(axis=0) if len(vectors) else None
        if self._sum is not None and self._count:
            self._snapshot = (self._sum.copy(), self._count)


def stat_mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0

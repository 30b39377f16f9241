"""The one writer of the index for a memory folder, and the questions asked of it at write time.

The folder is the truth; the index is derived. Fact files written by the pipeline are queued
here and indexed together at the end of each batch (with the boxes sealed meanwhile); the
index is reconciled with the folder at start and for the paths a watcher saw change
(:mod:`.reconcile`); and the pipeline asks here whether a new fact is a near-duplicate of a
stored one (:mod:`.similar`) and for the centroid of stored facts (:mod:`.centroid`).

Every method that writes takes one lock, so the daemon's pipeline thread and the memory
watcher's thread can both call in; the parts below it rely on that lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..core.config import Config
from ..core.errors import MemoryFileError
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..organize.boxes import Box
from ..store.fact_store import MemoryStore
from ..store.factfile import read_fact
from ..store.said import is_said_rel
from ..text.embeddings import Embedder
from .boxindex import box_row, sync_boxes
from .centroid import Centroid
from .factindex import FactIndex
from .factrows import row_at, row_path, stat_mtime
from .reconcile import Progress, Reconciler, ReconcileReport
from .saidindex import index_said_files, sync_said
from .similar import same_specifics, word_overlap
from .storage import index_location
from .table import IndexRow, MemoryIndex

log = logging.getLogger(__name__)


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
        # The pipeline thread and the memory watcher's thread both write through here.
        self._lock = threading.RLock()
        self._centroid = Centroid(index, embedder.model_id, layout.state_dir / "centroid.npz")
        self._facts = FactIndex(store, index, self._centroid)
        self._reconciler = Reconciler(layout, self._facts, embedder)
        # Facts written during the current batch, indexed together at batch_done(), and the
        # rows of boxes sealed meanwhile, which go into the same write.
        self._queued: dict[str, tuple[Path, Fact]] = {}
        self._queued_boxes: dict[str, IndexRow] = {}

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
        index = MemoryIndex.open(index_location(cfg.index, layout.index_dir), embedder)
        indexer = cls(cfg, layout, store, index, embedder)
        if index.rebuild_reason is not None and index.rebuild_reason != "new index":
            log.info("rebuilding the search index: %s", index.rebuild_reason)
        if reconcile:
            report = indexer.reconcile()
            for problem in report.broken:
                log.warning("not indexed: %s", problem)
        return indexer

    def close(self) -> None:
        self.flush()
        self.index.close()

    def idle(self) -> None:
        """Nothing is being written: commit held index writes whose period is over."""
        self.index.commit(due_only=True)

    # ------------------------------------------------------------ reconcile
    def reconcile(self, progress: Progress | None = None, *, full: bool = False) -> ReconcileReport:
        """Make the index match the whole folder: new and edited files in, deleted ones out.

        Cheap when nothing changed: a file is re-read only when its mtime differs from the
        one recorded in its row (or always, with ``full``; vectors of unchanged statements
        are still reused).
        """
        with self._lock:
            report = self._reconciler.folder(progress, force_read=full, force_embed=False)
            # Box and said rows are kept by their own small modules, at the same moments.
            sync_boxes(self.index, self.layout)
            sync_said(self.index, self.layout)
            return report

    def rebuild(self, progress: Progress | None = None) -> ReconcileReport:
        """Index the whole folder from scratch: every file re-read and re-embedded, every
        other fact row dropped, the hash index and the centroid derived anew."""
        with self._lock:
            report = self._reconciler.folder(progress, force_read=True, force_embed=True)
            sync_boxes(self.index, self.layout)
            sync_said(self.index, self.layout)
            self._centroid.rederive()
            return report

    def reconcile_paths(self, paths: Iterable[Path]) -> ReconcileReport:
        """The same as :meth:`reconcile` for a few changed, created or deleted paths.

        A folder among them stands for every fact file under it (a folder that is gone, for
        every row that pointed into it). Paths outside the fact folders are ignored. Costs
        a ``stat`` per path when nothing changed — the daemon's own writes come back here
        through the watcher and must stay cheap.
        """
        paths = list(paths)
        said = [p for p in paths if (rel := row_path(self.layout, p)) and is_said_rel(rel)]
        with self._lock:
            if said:
                index_said_files(self.index, self.layout, [p for p in said if p.is_file()])
                if any(not p.exists() for p in said):
                    sync_said(self.index, self.layout)  # a said file deleted by hand
            return self._reconciler.paths(paths)

    # ------------------------------------------------------------ writes
    def upsert_fact(self, path: Path, fact: Fact, *, new: bool) -> None:
        """Queue a fact file the caller just wrote; it is indexed at :meth:`batch_done`.

        One LanceDB write and one batched embedding per extraction batch instead of one per
        fact: the per-write cost dominates ingest otherwise. Exact duplicates within a batch
        are caught before this (the hash index); a near-duplicate check sees every earlier
        batch. ``new`` says whether the file was just created; the index itself is what
        counts (the watcher may have indexed the file a moment earlier), so an existing row
        is always replaced, never counted twice.
        """
        with self._lock:
            self._queued[fact.id] = (path, fact)

    def upsert_box(self, path: Path, box: Box) -> None:
        """Queue a box the caller just sealed; it is indexed with the batch's facts."""
        row = box_row(self.layout, path, box, stat_mtime(path))
        with self._lock:
            self._queued_boxes[row.id] = row

    def upsert_said(self, paths: Iterable[Path]) -> None:
        """Index the said files a batch just wrote (their sentences), replacing older rows."""
        with self._lock:
            index_said_files(self.index, self.layout, paths)

    def flush(self) -> None:
        """Index every queued fact and box now (one embedding batch, one write)."""
        with self._lock:
            queued = list(self._queued.values())
            boxes = list(self._queued_boxes.values())
            self._queued.clear()
            self._queued_boxes.clear()
            if not queued and not boxes:
                return
            olds = self._facts.rows([fact.id for _, fact in queued])
            fresh = [
                fact.content
                for _, fact in queued
                if (old := olds.get(fact.id)) is None or old.content_hash != fact.content_hash
            ]
            vectors = dict(zip(fresh, self.embedder.embed(fresh), strict=True)) if fresh else {}
            pairs: list[tuple[IndexRow, IndexRow | None]] = []
            new_rows: list[IndexRow] = []
            removed_rows: list[IndexRow] = []
            for path, fact in queued:
                rel = row_path(self.layout, path)
                if rel is None:
                    raise ValueError(f"{path} is not inside the memory folder")
                old = olds.get(fact.id)
                if old is not None and old.content_hash == fact.content_hash:
                    vector = old.vector
                else:
                    vector = vectors[fact.content]
                row = replace(row_at(rel, fact, stat_mtime(path)), vector=vector)
                pairs.append((row, old))
                if old is None or old.path != rel or old.content_hash != fact.content_hash:
                    new_rows.append(row)
                    if old is not None:
                        removed_rows.append(old)
            # Box rows are embedded by the index in the same call.
            self._facts.write(pairs, boxes)
            if new_rows or removed_rows:
                self._facts.fix_hashes(new_rows, removed_rows)

    def remove(self, ids: Iterable[str]) -> None:
        """Drop fact rows (their files were deleted by the caller)."""
        with self._lock:
            rows = list(self._facts.rows(list(dict.fromkeys(ids))).values())
            if not rows:
                return
            self._facts.delete(rows)
            self._facts.fix_hashes([], rows)

    def batch_done(self) -> None:
        """A batch's memories are all written: publish the centroid the next batch sees.

        The extractor reads the centroid as of the last finished batch, never a half-written
        one, so a batch redone after a crash scores its episodes exactly as the first try did.
        """
        with self._lock:
            self.flush()
            self._centroid.publish()

    # ------------------------------------------------------------ questions
    def embed_ahead(self, texts: Sequence[str]) -> None:
        """Embed, in one model run, texts about to be checked by :meth:`near_duplicate` or
        indexed: both then find their vectors cached."""
        if texts:
            self.index.embed_ahead(texts)

    def near_duplicate(self, fact: Fact) -> tuple[Path, Fact] | None:
        """An active stored fact that says the same thing in other words, if any.

        Cosine similarity alone does not separate a duplicate from a related fact (related
        notes reach 0.84-0.90), so a hit must also have the category, share most content
        words, and name the same numbers and names (a changed day or version is news).
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
            if not same_specifics(row.content, fact.content):
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
        with self._lock:
            return self._centroid.mean()

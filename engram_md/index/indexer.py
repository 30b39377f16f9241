"""Keeps the LanceDB index true to the memory folder.

The folder is the truth; the index is derived. This module turns fact files into index rows
(upsert on every write), reconciles the index with the folder (at start, and for the paths a
watcher saw change), answers the write-time near-duplicate question, and keeps the running
centroid of stored memories that the offline extractor's novelty score needs.

Reconcile rules (the folder wins):

* A file whose mtime equals the one recorded in its row is not read again, so a reconcile of
  an unchanged folder costs one ``stat`` per file.
* A new or edited file is read and its row replaced: a status set by hand reaches the row that
  recall filters on. The vector is reused when the statement itself did not change.
* A row whose file is gone is deleted. A file that moved (same id, new path: a git checkout,
  an archive step) keeps its one row, which now points at the new path.
* A file that cannot be read (broken frontmatter, not UTF-8, no body) is reported and left
  untouched, and its old row is deleted: recall must never serve a statement the folder no
  longer holds in readable form. The fact comes back as soon as the file is fixed.
* Two files with the same id: the first in folder order (``facts/`` before ``archive/``, then
  by path) is indexed, the other is reported and remembered, so it takes over if the first
  one goes away.
* The exact-dedup hash index (``store.hashes``) follows: hashes of files added by hand are
  learned, hashes of deleted or rewritten files are forgotten.

Only rows of kind ``fact`` belong to this module; rows of other kinds are never touched.
Every method that writes takes one lock, so the daemon's pipeline thread and the memory
watcher's thread can both call in.
"""

from __future__ import annotations

import io
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import regex

from ..core.atomic import atomic_write_bytes, is_temp_file
from ..core.config import Config
from ..core.errors import MemoryFileError
from ..core.folder import markdown_files
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..organize.boxes import Box
from ..store.dedup import HashIndex
from ..store.fact_store import MemoryStore
from ..store.factfile import read_fact
from ..text.embeddings import Embedder
from ..text.words import STOP_WORDS, WORD, content_words, words
from .boxindex import box_row, sync_boxes
from .table import IndexRow, MemoryIndex

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]

_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+")

FACT_KIND = "fact"
# Where fact files live, relative to the memory folder (as MemoryStore.fact_paths reads them).
FACT_ROOTS = ("facts/", "archive/facts/")
# Files read, embedded and written per step of a bulk reconcile: big enough that the embedder
# sees full batches and LanceDB few commits, small enough that progress moves and memory stays
# flat.
_CHUNK = 256


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What one reconcile did to the index."""

    added: int = 0  # files that had no row
    updated: int = 0  # re-read files whose row was replaced (moved ones included)
    removed: int = 0  # rows deleted: file gone, unreadable, or no longer holding that id
    unchanged: int = 0  # files skipped because their mtime matched their row
    broken: tuple[str, ...] = ()  # "path: reason" for files left out of the index
    moved: int = 0  # of ``updated``: rows that now point at another path

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def fact_row(layout: MemoryLayout, path: Path, fact: Fact, mtime_ns: int | None = None) -> IndexRow:
    """The index row for a fact file (the file's mtime is read when not given)."""
    return _row(layout.relative(path), fact, stat_mtime(path) if mtime_ns is None else mtime_ns)


def _row(rel: str, fact: Fact, mtime_ns: int) -> IndexRow:
    speaker = ""
    for entity in fact.entities:
        if entity.startswith("person-"):
            speaker = entity.removeprefix("person-")
            break
    return IndexRow(
        id=fact.id,
        path=rel,
        kind=FACT_KIND,
        content=fact.content,
        category=fact.category.value,
        memory_kind=fact.memory_kind.value,
        status=fact.status.value,
        importance=float(fact.importance),
        confidence=float(fact.confidence),
        created=fact.created,
        updated=fact.updated,
        session=fact.session,
        source_turn_ids=tuple(fact.source_turn_ids),
        entities=tuple(fact.entities),
        tags=tuple(fact.tags),
        speaker=speaker,
        confirmations=int(fact.confirmations),
        file_mtime_ns=int(mtime_ns),
        content_hash=fact.content_hash,
    )


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of content words: the second test a near-duplicate must pass."""
    wa, wb = set(content_words(a)), set(content_words(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def specifics(text: str) -> set[str]:
    """The words that pin a statement down: numbers, dates, versions (any word with a digit)
    and names (a capitalized word that does not start its sentence), casefolded."""
    found: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        for position, word in enumerate(WORD.findall(sentence)):
            if any(ch.isdigit() for ch in word) or (position > 0 and word[0].isupper()):
                found.add(word.casefold())
    return found - STOP_WORDS


def same_specifics(a: str, b: str) -> bool:
    """Whether each statement's numbers and names all occur in the other.

    "The meeting is on Monday" and "... on Tuesday" share most words and embed almost alike,
    yet the second is news, not a confirmation of the first.
    """
    words_a, words_b = set(words(a)), set(words(b))
    return specifics(a) <= words_b and specifics(b) <= words_a


def is_fact_rel(rel: str) -> bool:
    """Whether a path relative to the memory folder names a fact file (live or archived)."""
    return rel.startswith(FACT_ROOTS) and rel.endswith(".md") and not is_temp_file(Path(rel))


def _order(rel: str) -> tuple[bool, str]:
    """Folder order, which decides between two files with the same id: live before archived."""
    return (rel.startswith("archive/"), rel)


def _file_mtime(path: Path) -> int | None:
    """The mtime of a regular file, None when it is gone (or is not a file)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns if stat.S_ISREG(info.st_mode) else None


def _chunks(
    items: Sequence[tuple[str, Path, int]], size: int
) -> Iterator[list[tuple[str, Path, int]]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class _Pass:
    """The working state of one reconcile: who holds which id, what changed."""

    def __init__(self) -> None:
        self.holders: dict[str, str] = {}  # id -> path of the file indexed for it
        self.hashes: dict[str, str] = {}  # id -> content hash of that file
        self.shadow: dict[str, set[str]] = {}  # id -> paths of other files with that id
        self.broken: list[str] = []
        self.added = self.updated = self.moved = self.unchanged = self.deleted = 0
        self.removed_rows: list[IndexRow] = []  # old rows replaced or deleted
        self.new_rows: list[IndexRow] = []  # rows written (with their vectors)

    def lose(self, fact_id: str, loser: str, winner: str) -> None:
        self.shadow.setdefault(fact_id, set()).add(loser)
        self.broken.append(f"{loser}: same id {fact_id!r} as {winner}; not indexed")


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
        # path -> id of the fact row at that path, so a watcher event costs no table scan.
        # Built on first need; every write below keeps it true.
        self._by_path: dict[str, str] | None = None
        # id -> paths of further files with that id that are not indexed (see _Pass.lose).
        self._shadow: dict[str, set[str]] = {}
        # Centroid: a running sum over the vectors the index holds, kept exact by every write
        # here (minus the old vector, plus the new one), and the snapshot published at the end
        # of each batch, which is what the extractor reads.
        self._sum: np.ndarray | None = None
        self._count = 0
        self._sum_ready = False
        self._sum_changed = False
        self._snapshot: tuple[np.ndarray, int] | None = None
        self._snapshot_loaded = False
        self._centroid_path = layout.state_dir / "centroid.npz"
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
        index = MemoryIndex.open(layout.index_dir, embedder)
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
            report = self._reconcile_all(progress, force_read=full, force_embed=False)
            # Box rows are kept by their own small module (boxindex.py), at the same moments.
            sync_boxes(self.index, self.layout)
            return report

    def rebuild(self, progress: Progress | None = None) -> ReconcileReport:
        """Index the whole folder from scratch: every file re-read and re-embedded, every
        other fact row dropped, the hash index and the centroid derived anew."""
        with self._lock:
            report = self._reconcile_all(progress, force_read=True, force_embed=True)
            sync_boxes(self.index, self.layout)
            self._sum_ready = False
            self._snapshot_loaded = True
            self._publish(force=True)
            return report

    def reconcile_paths(self, paths: Iterable[Path]) -> ReconcileReport:
        """The same as :meth:`reconcile` for a few changed, created or deleted paths.

        A folder among them stands for every fact file under it (a folder that is gone, for
        every row that pointed into it). Paths outside the fact folders are ignored. Costs
        a ``stat`` per path when nothing changed — the daemon's own writes come back here
        through the watcher and must stay cheap.
        """
        with self._lock:
            by_path = self._path_map()
            scope: dict[str, Path] = {}
            for path in paths:
                rel = self._rel(path)
                if rel is None:
                    continue
                if path.is_dir():
                    # A linked folder is reported and not entered (markdown_files).
                    for inner in markdown_files(path, base=self.layout.memory_dir):
                        inner_rel = self._rel(inner)
                        if inner_rel is not None and is_fact_rel(inner_rel):
                            scope[inner_rel] = inner
                    continue
                if is_fact_rel(rel):
                    scope[rel] = path
                if not path.exists():
                    # A folder that went away (deleted, or moved out by a checkout).
                    prefix = rel.rstrip("/") + "/"
                    for known in by_path:
                        if known.startswith(prefix):
                            scope[known] = self.layout.memory_dir / known
            if not scope:
                return ReconcileReport()
            # Files shadowed by an id that is in play may have to take its row over.
            ids_in_scope = {by_path[rel] for rel in scope if rel in by_path}
            for rel in scope:
                for fact_id, others in list(self._shadow.items()):
                    others.discard(rel)
                    if not others:
                        del self._shadow[fact_id]
            for fact_id in ids_in_scope:
                for other in self._shadow.pop(fact_id, set()):
                    scope.setdefault(other, self.layout.memory_dir / other)
            files = {rel: (path, _file_mtime(path)) for rel, path in scope.items()}
            rows = self._fact_rows([by_path[rel] for rel in scope if rel in by_path])
            step = self._sync(files, rows, complete=False, force_read=False, force_embed=False)
            for fact_id, others in step.shadow.items():
                self._shadow.setdefault(fact_id, set()).update(others)
            self._fix_hashes(step)
            return self._report(step)

    def _reconcile_all(
        self, progress: Progress | None, *, force_read: bool, force_embed: bool
    ) -> ReconcileReport:
        files: dict[str, tuple[Path, int | None]] = {}
        root = self.layout.memory_dir
        for path in self.store.fact_paths():
            mtime = _file_mtime(path)
            if mtime is not None:
                files[path.relative_to(root).as_posix()] = (path, mtime)
        rows = self._fact_rows(None)
        self._by_path = {row.path: row.id for row in rows.values()}
        step = self._sync(
            files,
            rows,
            complete=True,
            force_read=force_read,
            force_embed=force_embed,
            progress=progress,
        )
        self._shadow = step.shadow
        # The whole folder was seen: derive the hash index from it in one write.
        wanted: dict[str, str] = {}
        for fact_id, rel in sorted(step.holders.items(), key=lambda item: _order(item[1])):
            wanted.setdefault(step.hashes[fact_id], rel)
        if wanted != dict(self.store.hashes.items()):
            self.store.hashes = HashIndex.rebuild(self.layout.hashes_path, wanted.items())
        if step.added or step.updated or step.deleted or force_read:
            self.index.optimize()
        return self._report(step)

    def _sync(
        self,
        files: dict[str, tuple[Path, int | None]],
        rows: dict[str, IndexRow],
        *,
        complete: bool,
        force_read: bool,
        force_embed: bool,
        progress: Progress | None = None,
    ) -> _Pass:
        """Bring the rows of the paths in ``files`` in line with those files.

        ``files`` maps each path in scope to (path, mtime), mtime None when the file is gone;
        ``rows`` are the fact rows that point at those paths. ``complete`` says ``files`` is
        the whole folder, so a row pointing anywhere else is stale.
        """
        step = _Pass()
        by_path = {row.path: row for row in rows.values()}
        present = sorted(
            ((rel, path, mtime) for rel, (path, mtime) in files.items() if mtime is not None),
            key=lambda item: _order(item[0]),
        )
        to_read: list[tuple[str, Path, int]] = []
        for rel, path, mtime in present:
            row = by_path.get(rel)
            if row is not None and not force_read and row.file_mtime_ns == mtime:
                step.holders[row.id] = rel
                step.hashes[row.id] = row.content_hash
                step.unchanged += 1
            else:
                to_read.append((rel, path, mtime))
        total = len(present)
        done = total - len(to_read)
        if progress is not None:
            progress(done, total)
        for chunk in _chunks(to_read, _CHUNK):
            self._sync_chunk(step, chunk, files, complete=complete, force_embed=force_embed)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
        stale = [row for fact_id, row in rows.items() if fact_id not in step.holders]
        if stale:
            self.index.delete([row.id for row in stale])
            self._forget(stale)
            step.removed_rows.extend(stale)
            step.deleted += len(stale)
        if progress is not None:
            progress(total, total)
        return step

    def _sync_chunk(
        self,
        step: _Pass,
        chunk: list[tuple[str, Path, int]],
        files: dict[str, tuple[Path, int | None]],
        *,
        complete: bool,
        force_embed: bool,
    ) -> None:
        parsed: list[tuple[str, int, Fact]] = []
        for rel, path, mtime in chunk:
            try:
                parsed.append((rel, mtime, read_fact(path)))
            except MemoryFileError as exc:
                step.broken.append(f"{rel}: {exc.reason}")
        old_rows = self._fact_rows([fact.id for _, _, fact in parsed])
        fresh: list[tuple[IndexRow, IndexRow | None]] = []
        for rel, mtime, fact in parsed:
            holder = step.holders.get(fact.id)
            old = old_rows.get(fact.id)
            if (
                holder is None
                and old is not None
                and not complete
                and old.path not in files
                and _file_mtime(self.layout.memory_dir / old.path) is not None
            ):
                # The row points at a file outside this pass that is still there: it keeps
                # holding the id (its own change, if any, comes in its own pass).
                holder = old.path
            if holder is not None:
                if _order(holder) <= _order(rel):
                    step.lose(fact.id, rel, holder)
                    continue
                step.lose(fact.id, holder, rel)
                if step.holders.get(fact.id) == holder:
                    step.unchanged -= 1
            step.holders[fact.id] = rel
            step.hashes[fact.id] = fact.content_hash
            row = _row(rel, fact, mtime)
            if old is not None and not force_embed and old.content_hash == fact.content_hash:
                row = replace(row, vector=old.vector)
            fresh.append((row, old))
        if not fresh:
            return
        todo = [i for i, (row, _) in enumerate(fresh) if row.vector is None]
        if todo:
            vectors = self.embedder.embed([fresh[i][0].content for i in todo])
            for i, vector in zip(todo, vectors, strict=True):
                fresh[i] = (replace(fresh[i][0], vector=vector), fresh[i][1])
        self.index.upsert([row for row, _ in fresh])
        by_path = self._path_map()
        for row, old in fresh:
            if old is None:
                step.added += 1
            else:
                step.updated += 1
                step.removed_rows.append(old)
                if old.path != row.path:
                    step.moved += 1
                    if by_path.get(old.path) == old.id:
                        del by_path[old.path]
            by_path[row.path] = row.id
            step.new_rows.append(row)
        self._shift(
            minus=[old.vector for _, old in fresh if old is not None and old.vector is not None],
            plus=[row.vector for row, _ in fresh if row.vector is not None],
        )

    def _forget(self, stale: list[IndexRow]) -> None:
        """Bookkeeping for deleted rows: path map, centroid."""
        by_path = self._path_map()
        for row in stale:
            if by_path.get(row.path) == row.id:
                del by_path[row.path]
        self._shift(minus=[row.vector for row in stale if row.vector is not None], plus=[])

    def _report(self, step: _Pass) -> ReconcileReport:
        return ReconcileReport(
            added=step.added,
            updated=step.updated,
            removed=step.deleted,
            unchanged=step.unchanged,
            broken=tuple(step.broken),
            moved=step.moved,
        )

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

    def flush(self) -> None:
        """Index every queued fact and box now (one embedding batch, one write)."""
        with self._lock:
            queued = list(self._queued.values())
            boxes = list(self._queued_boxes.values())
            self._queued.clear()
            self._queued_boxes.clear()
            if not queued and not boxes:
                return
            olds = self._fact_rows([fact.id for _, fact in queued])
            fresh = [
                fact.content
                for _, fact in queued
                if (old := olds.get(fact.id)) is None or old.content_hash != fact.content_hash
            ]
            vectors = dict(zip(fresh, self.embedder.embed(fresh), strict=True)) if fresh else {}
            rows = []
            step = _Pass()
            by_path = self._path_map()
            minus: list[np.ndarray] = []
            plus: list[np.ndarray] = []
            for path, fact in queued:
                rel = self._rel(path)
                if rel is None:
                    raise ValueError(f"{path} is not inside the memory folder")
                old = olds.get(fact.id)
                if old is not None and old.content_hash == fact.content_hash:
                    vector = old.vector
                else:
                    vector = vectors[fact.content]
                row = replace(_row(rel, fact, stat_mtime(path)), vector=vector)
                rows.append(row)
                if old is not None and old.path != rel and by_path.get(old.path) == old.id:
                    del by_path[old.path]
                by_path[rel] = fact.id
                if old is not None and old.vector is not None:
                    minus.append(old.vector)
                if vector is not None:
                    plus.append(vector)
                if old is None or old.path != rel or old.content_hash != fact.content_hash:
                    step.new_rows.append(row)
                    if old is not None:
                        step.removed_rows.append(old)
            # Box rows are embedded by the index in the same call; they stay out of the
            # centroid, which is over facts.
            self.index.upsert(rows + boxes)
            self._shift(minus=minus, plus=plus)
            if step.new_rows or step.removed_rows:
                self._fix_hashes(step)

    def remove(self, ids: Iterable[str]) -> None:
        """Drop fact rows (their files were deleted by the caller)."""
        with self._lock:
            rows = self._fact_rows(list(dict.fromkeys(ids)))
            if not rows:
                return
            self.index.delete(list(rows))
            self._forget(list(rows.values()))
            step = _Pass()
            step.removed_rows.extend(rows.values())
            self._fix_hashes(step)

    def batch_done(self) -> None:
        """A batch's memories are all written: publish the centroid the next batch sees.

        The extractor reads the centroid as of the last finished batch, never a half-written
        one, so a batch redone after a crash scores its episodes exactly as the first try did.
        """
        with self._lock:
            self.flush()
            self._load_snapshot()
            self._publish(force=False)

    # ------------------------------------------------------------ questions
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
            self._load_snapshot()
            if self._snapshot is None:
                return None
            total, count = self._snapshot
        mean = total / count
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None

    # ------------------------------------------------------------ centroid
    def _ensure_sum(self) -> None:
        """The running sum, computed from the index the first time it is needed."""
        if self._sum_ready:
            return
        vectors = self.index.all_vectors()
        self._count = len(vectors)
        self._sum = vectors.astype(np.float64).sum(axis=0) if len(vectors) else None
        self._sum_ready = True
        self._sum_changed = True

    def _shift(self, *, minus: Sequence[np.ndarray], plus: Sequence[np.ndarray]) -> None:
        """Apply a write to the running sum (nothing to do until it has been computed)."""
        if not self._sum_ready or (not minus and not plus):
            return
        total = np.zeros(self.index.dim, dtype=np.float64) if self._sum is None else self._sum
        for vector in plus:
            total = total + np.asarray(vector, dtype=np.float64)
        for vector in minus:
            total = total - np.asarray(vector, dtype=np.float64)
        self._count += len(plus) - len(minus)
        # Back to nothing: drop the float residue of adding and subtracting the same vectors.
        self._sum = total if self._count > 0 else None
        self._count = max(0, self._count)
        self._sum_changed = True

    def _load_snapshot(self) -> None:
        """The published centroid: the saved one (as of the last finished batch) if there is
        one for this model, else the running sum."""
        if self._snapshot_loaded:
            return
        self._snapshot_loaded = True
        try:
            with np.load(self._centroid_path) as saved:
                total = saved["sum"].astype(np.float64)
                count = int(saved["count"][0])
                if (
                    str(saved["model"]) == self.embedder.model_id
                    and total.shape == (self.index.dim,)
                    and count > 0
                ):
                    self._snapshot = (total, count)
                    return
        except (OSError, KeyError, ValueError, IndexError):
            pass
        self._ensure_sum()
        if self._sum is not None and self._count:
            self._snapshot = (self._sum.copy(), self._count)

    def _publish(self, *, force: bool) -> None:
        self._ensure_sum()
        if not (self._sum_changed or force):
            return
        self._sum_changed = False
        if self._sum is None or not self._count:
            self._snapshot = None
            self._centroid_path.unlink(missing_ok=True)
            return
        self._snapshot = (self._sum.copy(), self._count)
        # Built in memory and written like every state file (temp file named for doctor and
        # the start-up sweep, fsync, rename), so a crash leaves no orphan they cannot see.
        data = io.BytesIO()
        np.savez(data, sum=self._sum, count=np.array([self._count]), model=self.embedder.model_id)
        atomic_write_bytes(self._centroid_path, data.getvalue())

    # ------------------------------------------------------------ bookkeeping
    def _rel(self, path: Path) -> str | None:
        """``path`` relative to the memory folder, the way rows store it (None if outside)."""
        root = self.layout.memory_dir
        for base in (root, root.resolve()):
            try:
                return path.relative_to(base).as_posix()
            except ValueError:
                continue
        try:
            return self.layout.relative(path)
        except (ValueError, OSError):
            return None

    def _fact_rows(self, ids: Sequence[str] | None) -> dict[str, IndexRow]:
        """The fact rows with these ids (all of them for None)."""
        wanted = list(self.index.manifest()) if ids is None else list(ids)
        if not wanted:
            return {}
        return {i: row for i, row in self.index.get(wanted).items() if row.kind == FACT_KIND}

    def _path_map(self) -> dict[str, str]:
        if self._by_path is None:
            self._by_path = {row.path: row.id for row in self._fact_rows(None).values()}
        return self._by_path

    def _fix_hashes(self, step: _Pass) -> None:
        """Point the exact-dedup hash index at files that hold each affected statement.

        A hash that pointed at a file which no longer holds it moves to another file with the
        same statement, if any, or is forgotten; a statement no file was known for is learned.
        """
        hashes = self.store.hashes
        new_paths = {row.path for row in step.new_rows}
        lost = {
            row.content_hash
            for row in step.removed_rows
            if hashes.lookup(row.content_hash) == row.path
            and not any(
                new.path == row.path and new.content_hash == row.content_hash
                for new in step.new_rows
            )
        }
        if lost:
            holders: dict[str, list[str]] = {}
            manifest = self.index.manifest()
            ids = [i for i, (_mtime, digest) in manifest.items() if digest in lost]
            for row in self._fact_rows(ids).values():
                holders.setdefault(row.content_hash, []).append(row.path)
            for digest in lost:
                paths = sorted(holders.get(digest, []), key=_order)
                if paths:
                    hashes.add(digest, paths[0])
                else:
                    hashes.remove(digest)
        by_path = self._path_map()
        for row in step.new_rows:
            current = hashes.lookup(row.content_hash)
            if current is None:
                hashes.add(row.content_hash, row.path)
            elif current != row.path and current not in new_paths:
                # Keep an older holder of the same statement while it still holds it.
                holder = by_path.get(current)
                kept = self._fact_rows([holder]).get(holder) if holder is not None else None
                if kept is None or kept.content_hash != row.content_hash:
                    hashes.add(row.content_hash, row.path)


def stat_mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0

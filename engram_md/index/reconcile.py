"""Reconciling the fact rows of the index with the memory folder (the folder wins).

Done at start for the whole folder, and for the paths a watcher saw change. The rules:

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

Only rows of kind ``fact`` are reconciled here; box rows have their own sync (boxindex.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.errors import MemoryFileError
from ..core.folder import markdown_files
from ..core.models import Fact
from ..core.paths import MemoryLayout
from ..store.dedup import HashIndex
from ..store.factfile import read_fact
from ..text.embeddings import Embedder
from .factindex import FactIndex, RowKey
from .factrows import file_mtime, folder_order, is_fact_rel, row_at, row_path
from .table import IndexRow

Progress = Callable[[int, int], None]

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

    def report(self) -> ReconcileReport:
        return ReconcileReport(
            added=self.added,
            updated=self.updated,
            removed=self.deleted,
            unchanged=self.unchanged,
            broken=tuple(self.broken),
            moved=self.moved,
        )


class Reconciler:
    """Brings fact rows in line with fact files, for the whole folder or a few paths.

    Not locked: its owner calls it under one lock (the Indexer's).
    """

    def __init__(self, layout: MemoryLayout, facts: FactIndex, embedder: Embedder) -> None:
        self.layout = layout
        self.facts = facts
        self.embedder = embedder
        # id -> paths of further files with that id that are not indexed (see _Pass.lose).
        self._shadow: dict[str, set[str]] = {}

    def folder(
        self, progress: Progress | None, *, force_read: bool, force_embed: bool
    ) -> ReconcileReport:
        """Make the fact rows match the whole folder.

        ``force_read`` re-reads every file whatever its mtime; ``force_embed`` also
        re-embeds every statement instead of reusing the vectors of unchanged ones.
        """
        store = self.facts.store
        files: dict[str, tuple[Path, int | None]] = {}
        root = self.layout.memory_dir
        for path in store.fact_paths():
            mtime = file_mtime(path)
            if mtime is not None:
                files[path.relative_to(root).as_posix()] = (path, mtime)
        rows = self.facts.all_keys()
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
        for fact_id, rel in sorted(step.holders.items(), key=lambda item: folder_order(item[1])):
            wanted.setdefault(step.hashes[fact_id], rel)
        if wanted != dict(store.hashes.items()):
            store.hashes = HashIndex.rebuild(self.layout.hashes_path, wanted.items())
        if step.added or step.updated or step.deleted or force_read:
            self.facts.index.optimize()
        return step.report()

    def paths(self, paths: Iterable[Path]) -> ReconcileReport:
        """The same as :meth:`folder` for a few changed, created or deleted paths.

        A folder among them stands for every fact file under it (a folder that is gone, for
        every row that pointed into it). Paths outside the fact folders are ignored.
        """
        by_path = self.facts.path_map()
        scope: dict[str, Path] = {}
        for path in paths:
            rel = row_path(self.layout, path)
            if rel is None:
                continue
            if path.is_dir():
                # A linked folder is reported and not entered (markdown_files).
                for inner in markdown_files(path, base=self.layout.memory_dir):
                    inner_rel = row_path(self.layout, inner)
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
        files = {rel: (path, file_mtime(path)) for rel, path in scope.items()}
        rows = self.facts.rows([by_path[rel] for rel in scope if rel in by_path])
        step = self._sync(files, rows, complete=False, force_read=False, force_embed=False)
        for fact_id, others in step.shadow.items():
            self._shadow.setdefault(fact_id, set()).update(others)
        self.facts.fix_hashes(step.new_rows, step.removed_rows)
        return step.report()

    def _sync(
        self,
        files: dict[str, tuple[Path, int | None]],
        rows: Mapping[str, RowKey] | Mapping[str, IndexRow],
        *,
        complete: bool,
        force_read: bool,
        force_embed: bool,
        progress: Progress | None = None,
    ) -> _Pass:
        """Bring the rows of the paths in ``files`` in line with those files.

        ``files`` maps each path in scope to (path, mtime), mtime None when the file is gone;
        ``rows`` are the fact rows that point at those paths (or just what is compared of
        them, for the whole folder). ``complete`` says ``files`` is
        the whole folder, so a row pointing anywhere else is stale.
        """
        step = _Pass()
        by_path = {row.path: row for row in rows.values()}
        present = sorted(
            ((rel, path, mtime) for rel, (path, mtime) in files.items() if mtime is not None),
            key=lambda item: folder_order(item[0]),
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
        stale_ids = [fact_id for fact_id in rows if fact_id not in step.holders]
        # Whole rows only for those: the delete takes their vectors out of the centroid.
        stale = list(self.facts.rows(stale_ids).values())
        if stale:
            self.facts.delete(stale)
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
        old_rows = self.facts.rows([fact.id for _, _, fact in parsed])
        fresh: list[tuple[IndexRow, IndexRow | None]] = []
        for rel, mtime, fact in parsed:
            holder = step.holders.get(fact.id)
            old = old_rows.get(fact.id)
            if (
                holder is None
                and old is not None
                and not complete
                and old.path not in files
                and file_mtime(self.layout.memory_dir / old.path) is not None
            ):
                # The row points at a file outside this pass that is still there: it keeps
                # holding the id (its own change, if any, comes in its own pass).
                holder = old.path
            if holder is not None:
                if folder_order(holder) <= folder_order(rel):
                    step.lose(fact.id, rel, holder)
                    continue
                step.lose(fact.id, holder, rel)
                if step.holders.get(fact.id) == holder:
                    step.unchanged -= 1
            step.holders[fact.id] = rel
            step.hashes[fact.id] = fact.content_hash
            row = row_at(rel, fact, mtime)
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
        self.facts.write(fresh)
        for row, old in fresh:
            if old is None:
                step.added += 1
            else:
                step.updated += 1
                step.removed_rows.append(old)
                if old.path != row.path:
                    step.moved += 1
            step.new_rows.append(row)

"""The fact rows of the index, and what must follow every write of them.

Three things are derived from the fact rows and kept true by each write here rather than
recomputed: the map from path to the id of the row at that path (so a watcher event costs no
table scan), the running centroid, and the exact-dedup hash index (``store.hashes``), which
must point at a file that holds each statement. Rows of other kinds pass through untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..store.fact_store import MemoryStore
from .centroid import Centroid
from .factrows import FACT_KIND, folder_order
from .table import IndexRow, MemoryIndex


@dataclass(frozen=True, slots=True)
class RowKey:
    """The fields of a fact row that tell whether its file changed (an IndexRow has them too)."""

    id: str
    path: str
    file_mtime_ns: int
    content_hash: str


class FactIndex:
    """Reads and writes fact rows, keeping the path map, the centroid and the hash index in
    step. Not locked: its owner calls it under one lock (the Indexer's)."""

    def __init__(self, store: MemoryStore, index: MemoryIndex, centroid: Centroid) -> None:
        self.store = store
        self.index = index
        self.centroid = centroid
        # path -> id of the fact row at that path. Built on first need; every write keeps it
        # true.
        self._by_path: dict[str, str] | None = None

    def rows(self, ids: Sequence[str]) -> dict[str, IndexRow]:
        """The fact rows with these ids."""
        if not ids:
            return {}
        return {i: row for i, row in self.index.get(list(ids)).items() if row.kind == FACT_KIND}

    def all_keys(self) -> dict[str, RowKey]:
        """What a reconcile compares of every fact row, read as columns: building every row
        (vector and all) held ~300 MB for a moment at 100k facts. The path map is rebuilt
        from them, as they are all read anyway."""
        names = ("id", "path", "file_mtime_ns", "content_hash")
        found = self.index.columns_of_kind(FACT_KIND, names)
        keys = {
            row_id: RowKey(row_id, path, mtime, digest)
            for row_id, path, mtime, digest in zip(*(found[n] for n in names), strict=True)
        }
        self._by_path = {key.path: key.id for key in keys.values()}
        return keys

    def path_map(self) -> dict[str, str]:
        """path -> id of the fact row at that path (for reading: the writes here keep it)."""
        if self._by_path is None:
            self._by_path = {
                row.path: row.id for row in self.rows(list(self.index.manifest())).values()
            }
        return self._by_path

    def write(
        self, pairs: Sequence[tuple[IndexRow, IndexRow | None]], boxes: Sequence[IndexRow] = ()
    ) -> None:
        """Upsert fact rows, each with the row it replaces (None for a new one).

        Box rows, if given, go into the same write; they stay out of the path map and the
        centroid, which are over facts.
        """
        self.index.upsert([row for row, _ in pairs] + list(boxes))
        by_path = self.path_map()
        for row, old in pairs:
            if old is not None and old.path != row.path and by_path.get(old.path) == old.id:
                del by_path[old.path]
            by_path[row.path] = row.id
        self.centroid.shift(
            minus=[old.vector for _, old in pairs if old is not None and old.vector is not None],
            plus=[row.vector for row, _ in pairs if row.vector is not None],
        )

    def delete(self, rows: Sequence[IndexRow]) -> None:
        """Delete fact rows (their files are gone or no longer hold them)."""
        self.index.delete([row.id for row in rows])
        by_path = self.path_map()
        for row in rows:
            if by_path.get(row.path) == row.id:
                del by_path[row.path]
        self.centroid.shift(minus=[row.vector for row in rows if row.vector is not None], plus=[])

    def fix_hashes(self, new_rows: Sequence[IndexRow], removed_rows: Sequence[IndexRow]) -> None:
        """Point the exact-dedup hash index at files that hold each affected statement.

        ``new_rows`` were written, ``removed_rows`` replaced or deleted. A hash that pointed
        at a file which no longer holds it moves to another file with the same statement, if
        any, or is forgotten; a statement no file was known for is learned.
        """
        hashes = self.store.hashes
        new_paths = {row.path for row in new_rows}
        lost = {
            row.content_hash
            for row in removed_rows
            if hashes.lookup(row.content_hash) == row.path
            and not any(
                new.path == row.path and new.content_hash == row.content_hash for new in new_rows
            )
        }
        if lost:
            holders: dict[str, list[str]] = {}
            manifest = self.index.manifest()
            ids = [i for i, (_mtime, digest) in manifest.items() if digest in lost]
            for row in self.rows(ids).values():
                holders.setdefault(row.content_hash, []).append(row.path)
            for digest in lost:
                paths = sorted(holders.get(digest, []), key=folder_order)
                if paths:
                    hashes.add(digest, paths[0])
                else:
                    hashes.remove(digest)
        by_path = self.path_map()
        for row in new_rows:
            current = hashes.lookup(row.content_hash)
            if current is None:
                hashes.add(row.content_hash, row.path)
            elif current != row.path and current not in new_paths:
                # Keep an older holder of the same statement while it still holds it.
                holder = by_path.get(current)
                kept = self.rows([holder]).get(holder) if holder is not None else None
                if kept is None or kept.content_hash != row.content_hash:
                    hashes.add(row.content_hash, row.path)

"""The search index: every memory (facts, episodes, boxes) in one LanceDB table under state/.

The index is derived data: the markdown folder is the truth and ``engram-md reindex`` can
always rebuild it. So whenever the stored table cannot be trusted for the current embedder
(another model, another width, an older row layout) it is dropped and recreated empty, and
:attr:`MemoryIndex.needs_rebuild` tells the caller to reindex.

This module is the index its parts make together: :mod:`.rows` (the row layout and its Arrow
form), :mod:`.resident` (the copy in memory that answers vector search and filters) and
:mod:`.lance` (LanceDB itself: connection, table, search indices).

Where the work happens, and why:

* **LanceDB** stores the rows (durable, shared between processes).
* **Vector search, text search and row reads are served from memory.** On first read the
  table is loaded once into a resident copy (rows as Arrow columns, vectors as one float32
  matrix) that every write of this process updates in place. An exact dot product over that
  matrix is faster than LanceDB's own vector search at the sizes a memory folder reaches
  (measured: 100k rows x 384 dims in ~6 ms, against 10-15 ms for an IVF-PQ index that also
  took minutes to train and gave approximate answers), and reading hits from memory avoids
  the per-query cost of fetching twenty columns from disk. Text search is BM25 over postings
  built from the same copy at the first text query (:mod:`.textindex`): LanceDB's own
  full-text query cost ~9 ms of fixed overhead each, the largest part of a recall. ``where``
  filters of the form ``col = 'v' AND ...`` (all the library uses) are evaluated on the
  resident columns; any other SQL is LanceDB's.
  The result is kept per filter as a row mask and extended incrementally after writes.
* Writes from another process are noticed by the table version, checked at most once a
  second (a read-only daemon: every ``index.refresh_seconds``); the resident copy is then
  reloaded. The table may be in an object store (:mod:`.storage`): the same holds there.
* A long-running writer (the daemon) may hold its writes back (:meth:`MemoryIndex.hold_writes`):
  each write reaches the resident copy at once, so this process's searches see it, but
  LanceDB gets them together, at most once per period and always before LanceDB itself is
  asked anything (a text search, an unusual filter, another process's write noticed).
  Every LanceDB commit costs tens of milliseconds and leaves native memory behind (measured:
  tens of KB per commit, whatever the cache sizes), so committing every few seconds instead
  of once per extraction batch keeps a busy daemon fast and its memory level. A kill -9
  loses at most that period's rows, which the reconcile at the next start restores from the
  files, as after any crash between a file write and its index write; another process sees
  the daemon's writes that much later.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.crashpoints import crashpoint
from ..core.errors import EngramError, IndexError_
from ..text.embeddings import CachedEmbedder, Embedder, l2_normalize
from .lance import (
    TABLE_NAME,
    connect,
    create_search_indices,
    ensure_search_indices,
    stored_table,
)
from .resident import Resident, equal_mask, equality_pairs, is_in
from .rows import (
    Hit,
    IndexRow,
    last_per_id,
    python_values,
    row_schema,
    rows_to_arrow,
)
from .storage import IndexLocation

log = logging.getLogger(__name__)


# Each write leaves a small fragment and a table version; optimize folds the fragments into
# larger files and the new rows into the id index that merge_insert and delete look ids up
# in, and lets old versions go.
_AUTO_OPTIMIZE_WRITES = 32
# Old table versions are kept this long after compaction so a reader in another process that
# is mid-query on an older version never finds its files gone. Readers move to the latest
# version at least once a second (_FRESHNESS_SECONDS), so a minute is ample; longer costs
# time, since every cleanup walks all the versions it keeps (thousands an hour in a daemon).
_KEEP_OLD_VERSIONS = timedelta(minutes=1)
# How often a reader looks for writes made by another process (by default; a read-only
# daemon on another machine sets its own, index.refresh_seconds).
_FRESHNESS_SECONDS = 1.0
# Long id lists are split so a generated SQL filter stays a reasonable size.
_ID_CHUNK = 512
# A filter mask missing more rows than this is recomputed with one scan instead of by id.
_MASK_INCREMENTAL_MAX = 2048


@contextmanager
def _mapped(action: str) -> Iterator[None]:
    """Turn LanceDB / Arrow / OS failures into IndexError_; our own errors pass through."""
    try:
        yield
    except EngramError:
        raise
    except (ValueError, RuntimeError, OSError, KeyError, pa.ArrowException) as exc:
        raise IndexError_(f"index {action} failed: {exc}") from exc


def sql_quote(value: str) -> str:
    """A SQL string literal, for ``where`` filters built from ids, statuses or sessions."""
    return "'" + value.replace("'", "''") + "'"


class MemoryIndex:
    """The table of all memories, opened once and kept open for the life of the process."""

    def __init__(
        self,
        location: IndexLocation,
        db: Any,
        table: Any,
        embedder: Embedder,
        dim: int,
        rebuild_reason: str | None,
        refresh_seconds: float = _FRESHNESS_SECONDS,
    ) -> None:
        self.location = location
        self._refresh_seconds = refresh_seconds
        self._db = db
        self._table = table
        self._schema: pa.Schema = table.schema
        self._embedder = embedder
        self.dim = dim
        self.rebuild_reason = rebuild_reason
        # One lock for the resident copy and for writes: reads are short, and a daemon's
        # recall thread must never see a half-applied write.
        self._lock = threading.RLock()
        self._resident: Resident | None = None
        self._checked_at = 0.0
        # (the resident copy read, its compactions then, rows read, speakers found): speakers().
        self._speakers: tuple[Callable[[], Resident | None], int, int, set[str]] = (
            lambda: None,
            0,
            0,
            set(),
        )
        self._writes_since_optimize = 0
        # Held-back writes (see hold_writes): applied to the resident copy, not yet committed.
        self._hold_seconds = 0.0
        self._held: list[pa.Table] = []
        self._held_since = 0.0

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        where: Path | IndexLocation,
        embedder: Embedder,
        *,
        may_rebuild: bool = True,
        refresh_seconds: float = _FRESHNESS_SECONDS,
    ) -> MemoryIndex:
        """Open the index in the folder or at the location ``where``, creating it if missing.

        If the stored table was built for another embedder (model id or width) or another row
        layout, it is dropped and recreated empty; if it cannot be opened at all (a kill -9
        while it was being created, a damaged manifest) it is moved aside to
        ``<path>/unreadable/`` and recreated empty. ``needs_rebuild`` is then True (also for a
        brand-new index) and the caller should reindex the memory folder. A table missing its
        text or id index (a kill between creating the table and its indices) gets them.

        Only the holder of the writer lock may do that. A reader (``may_rebuild=False``: a
        recall or search beside the daemon) must not wipe the table the writer fills, nor race
        it creating one, so it gets :class:`IndexError_` instead and nothing is changed.

        ``refresh_seconds``: how often reads look for a newer table version another process
        committed (and then reload the resident copy).
        """
        location = where if isinstance(where, IndexLocation) else IndexLocation.local(where)
        dim = embedder.dim
        model_id = embedder.model_id
        with _mapped(f"open at {location}"):
            if location.local_dir is not None:
                location.local_dir.mkdir(parents=True, exist_ok=True)
            db = connect(location)
            table, reason = stored_table(db, location, model_id, dim, may_rebuild=may_rebuild)
            if table is None:
                table = db.create_table(TABLE_NAME, schema=row_schema(dim, model_id))
                crashpoint("index.create")  # a table without its indices yet
            if may_rebuild:
                ensure_search_indices(table)
        return cls(location, db, table, embedder, dim, reason, refresh_seconds)

    @property
    def needs_rebuild(self) -> bool:
        """True when the index was created or recreated empty at open: reindex the folder."""
        return self.rebuild_reason is not None

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    def refresh(self) -> None:
        """Pick up writes other processes made, now rather than within a second."""
        with self._lock:
            self._checked_at = 0.0
            self._current()

    # ------------------------------------------------------------------ writing

    def hold_writes(self, seconds: float) -> None:
        """Commit upserts to LanceDB at most every ``seconds`` (see the module docstring);
        0 commits each one at once. Held writes are committed by :meth:`commit`, by
        :meth:`close`, and before anything asks LanceDB."""
        with self._lock:
            self._hold_seconds = max(0.0, seconds)
            if not self._hold_seconds:
                self._commit_held()

    def upsert(self, rows: Sequence[IndexRow]) -> None:
        """Insert or replace rows by id; rows without a vector are embedded in one batch."""
        if not rows:
            return
        # The last row for an id wins (merge_insert would otherwise store both).
        unique = list({row.id: row for row in rows}.values())
        vectors = self._vectors_for(unique)
        data = self._to_arrow(unique, vectors)
        with self._lock, _mapped("upsert"):
            if self._hold_seconds:
                self._current().append(data, vectors)
                if not self._held:
                    self._held_since = time.monotonic()
                self._held.append(data)
                self.commit(due_only=True)
                return
            self._merge(data)
            if self._resident is not None:
                self._resident.append(data, vectors)
            self._wrote(self._table.version - 1, 1)

    def commit(self, *, due_only: bool = False) -> None:
        """Commit held writes now (``due_only``: only if the oldest has waited its period)."""
        with self._lock, _mapped("upsert"):
            if due_only and time.monotonic() - self._held_since < self._hold_seconds:
                return
            self._commit_held()

    def close(self) -> None:
        """Commit what is held; the index stays usable."""
        self.commit()

    def _commit_held(self) -> None:
        if not self._held:
            return
        data = last_per_id(pa.concat_tables(self._held))
        self._held = []
        # The resident copy already holds these rows: keep it, unless someone else wrote.
        self._merge(data)
        self._wrote(self._table.version - 1, 1)

    def _merge(self, data: pa.Table) -> None:
        crashpoint("index.upsert")
        (
            self._table.merge_insert("id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data)
        )

    def delete(self, ids: Sequence[str]) -> None:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return
        with self._lock, _mapped("delete"):
            self._commit_held()
            before = self._table.version
            chunks = list(_chunks(unique, _ID_CHUNK))
            for chunk in chunks:
                self._table.delete(_id_filter(chunk))
            if self._resident is not None:
                self._resident.remove(unique)
            self._wrote(before, len(chunks))

    def _wrote(self, before: int, commits: int) -> None:
        """Bookkeeping after our own write: the resident copy already has it applied, unless
        another process slipped a commit in between, in which case it is reloaded later."""
        resident = self._resident
        if resident is not None:
            if resident.version == before and self._table.version == before + commits:
                resident.version = self._table.version
            else:
                self._resident = None
        self._writes_since_optimize += 1
        if self._writes_since_optimize >= _AUTO_OPTIMIZE_WRITES:
            self._optimize_locked()

    def _vectors_for(self, rows: Sequence[IndexRow]) -> np.ndarray:
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        todo = [i for i, row in enumerate(rows) if row.vector is None]
        if todo:
            fresh = self._embedder.embed([rows[i].content for i in todo])
            if fresh.shape != (len(todo), self.dim):
                raise IndexError_(
                    f"the embedder returned vectors of shape {fresh.shape}, "
                    f"expected ({len(todo)}, {self.dim})"
                )
            out[todo] = fresh
        for i, row in enumerate(rows):
            if row.vector is not None:
                vector = np.asarray(row.vector, dtype=np.float32).reshape(-1)
                if vector.shape[0] != self.dim:
                    raise IndexError_(
                        f"row {row.id!r} has a {vector.shape[0]}-d vector; the index is "
                        f"{self.dim}-d"
                    )
                out[i] = vector
        # Unit length makes the dot product a cosine, whoever computed the vector.
        return l2_normalize(out)

    def _to_arrow(self, rows: Sequence[IndexRow], vectors: np.ndarray) -> pa.Table:
        with _mapped("row conversion"):
            return rows_to_arrow(rows, vectors, self._schema)

    # ------------------------------------------------------------------ reading

    def get(self, ids: Sequence[str]) -> dict[str, IndexRow]:
        with self._lock:
            resident = self._current()
            found = [(row_id, resident.pos[row_id]) for row_id in ids if row_id in resident.pos]
            rows = resident.rows([p for _, p in found])
        return {row.id: row for row in rows}

    def rows_of_kind(self, kind: str) -> list[IndexRow]:
        """Every live row of one kind (e.g. the few ``box`` rows), without the others."""
        with self._lock:
            resident = self._current()
            kinds = resident.columns.column("kind").to_numpy(zero_copy_only=False)
            live = resident.alive[: resident.n]
            return resident.rows(np.flatnonzero((kinds == kind) & live))

    def columns_of_kind(
        self, kind: str, names: Sequence[str], *, paths: Sequence[str] | None = None
    ) -> dict[str, list[Any]]:
        """Some columns of the live rows of one kind (and, given ``paths``, stored for those
        paths), as lists: a vectorized pass, without building a row per match (the said rows
        of a folder run to hundreds of thousands)."""
        with self._lock:
            resident = self._current()
            columns = resident.columns.slice(0, resident.n)
            mask = equal_mask(columns, [("kind", kind)]) & resident.alive[: resident.n]
            if paths is not None:
                mask &= is_in(columns.column("path"), pa.array(list(paths), pa.string()))
            chosen = columns.select(list(names)).filter(pa.array(mask))
        return {name: python_values(chosen.column(name)) for name in names}

    def columns_where(self, where: str, names: Sequence[str]) -> dict[str, list[Any]]:
        """Some columns of the live rows matching ``where``, as lists. The filter's mask is
        cached and grows with the table, so asking on every recall costs the matches only."""
        with self._lock:
            resident = self._current()
            mask = self._mask(resident, where)
            chosen = (
                resident.columns.slice(0, resident.n).select(list(names)).filter(pa.array(mask))
            )
        return {name: python_values(chosen.column(name)) for name in names}

    def speakers(self) -> tuple[str, ...]:
        """The distinct speakers of the rows, as written. Recall asks on every query (to read
        a misspelled name in a question), so rows are read once: positions only grow, and a
        reload starts over. A speaker whose rows were all deleted stays until then."""
        with self._lock:
            resident = self._current()
            held, compactions, read, found = self._speakers
            if held() is not resident or compactions != resident.compactions:
                read, found = 0, set()
            if read < resident.n:
                column = resident.columns.column("speaker").slice(read, resident.n - read)
                found = found | {s for s in pc.unique(column).to_pylist() if s}
            self._speakers = (weakref.ref(resident), resident.compactions, resident.n, found)
            return tuple(sorted(found))

    def paths(self, ids: Sequence[str]) -> dict[str, str]:
        """id -> path relative to the memory folder, for the ids the index holds."""
        return {row_id: row.path for row_id, row in self.get(ids).items()}

    def vector_search(
        self, vector: np.ndarray, k: int, *, where: str | None = None, exact: bool = True
    ) -> list[Hit]:
        """The ``k`` rows most similar to ``vector``, best first; score = cosine similarity.

        Exact by default, so a near-duplicate check never misses its twin. ``exact=False``
        (recall) lets a large table shortlist by projected vectors first
        (:class:`.resident.Shortlist`); the hits returned are still scored with full vectors.
        """
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise IndexError_(f"a {query.shape[0]}-d query against a {self.dim}-d index")
        if k <= 0:
            return []
        query = l2_normalize(query[None, :])[0]
        with self._lock:
            resident = self._current()
            allowed = self._mask(resident, where) if where else resident.alive[: resident.n]
            return resident.search(query, allowed, k, exact=exact)

    def text_search(self, query: str, k: int, *, where: str | None = None) -> list[Hit]:
        """The ``k`` best BM25 matches of ``query`` in the content, best first.

        Any text is a valid query: it is matched word by word (stemmed, stop words dropped),
        never parsed as query syntax. Answered from the resident copy (:mod:`.textindex`),
        which reads words as LanceDB's full-text index did, with ``where`` applied before
        the best are taken.
        """
        return self.text_search_each(query, k, [where])[0]

    def text_search_each(self, query: str, k: int, wheres: Sequence[str | None]) -> list[list[Hit]]:
        """:meth:`text_search` for several filters at once: recall asks for facts and for
        sentences of what was said with the same words."""
        if k <= 0 or not query.strip():
            return [[] for _ in wheres]
        with self._lock, _mapped("text search"):
            resident = self._current()
            return [
                resident.text_search(query, k, self._mask(resident, where) if where else None)
                for where in wheres
            ]

    def embed_ahead(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` now, in one model run, for :meth:`nearest` and :meth:`upsert` to
        find them in the embedder's cache (an embedder without one would only do it twice)."""
        if isinstance(self._embedder, CachedEmbedder):
            self._embedder.embed(list(texts))

    def nearest(self, text: str, k: int = 5, *, where: str | None = None) -> list[Hit]:
        """Embed ``text`` and return its ``k`` nearest rows (near-duplicate checks, recall)."""
        return self.vector_search(self._embedder.embed([text])[0], k, where=where)

    def manifest(self) -> dict[str, tuple[int, str]]:
        """id -> (file_mtime_ns, content_hash) for every row: what reconcile compares."""
        with self._lock:
            resident = self._current()
            live = np.flatnonzero(resident.alive[: resident.n])
            table = resident.columns.select(["id", "file_mtime_ns", "content_hash"]).take(
                pa.array(live)
            )
        mtimes = table.column("file_mtime_ns").to_pylist()
        hashes = table.column("content_hash").to_pylist()
        return dict(
            zip(table.column("id").to_pylist(), zip(mtimes, hashes, strict=True), strict=True)
        )

    def all_vectors(self, *, where: str | None = None) -> np.ndarray:
        """Every stored vector (optionally of the rows matching ``where``), one per row.

        A copy, shape ``(rows, dim)``: e.g. for the centroid of everything remembered.
        """
        with self._lock:
            resident = self._current()
            allowed = self._mask(resident, where) if where else resident.alive[: resident.n]
            return resident.vectors[: resident.n][allowed].copy()

    def holds(self, where: str) -> bool:
        """Whether any live row satisfies ``where`` (a mask the filter's searches keep)."""
        with self._lock:
            resident = self._current()
            return bool(self._mask(resident, where).any())

    def count(self) -> int:
        with self._lock:
            if self._resident is None:
                # Counting alone is no reason to load the whole table (e.g. `status`).
                with _mapped("count"):
                    self._table.checkout_latest()
                    return int(self._table.count_rows())
            return len(self._current().pos)

    # ------------------------------------------------------------------ upkeep

    def optimize(self) -> None:
        """Compact small writes and fold new rows into the id index.

        Also runs by itself every few dozen writes; call it after bulk loads.
        """
        with self._lock:
            self._optimize_locked()

    def purge_history(self) -> None:
        """Leave nothing of deleted rows on disk (``forget``): rewrite every live row, rebuild
        the id index over them, and remove every older version and stray file.

        A delete only marks rows as deleted: their data files (compaction rewrites a file only
        once a tenth of its rows are gone) and the older versions keep them. Each step
        commits a table that still has its id index, so a kill part-way leaves
        a working index. Only for a holder of the writer lock: other processes' readers on an
        older version fail, and a write in flight elsewhere would be corrupted.
        """
        with self._lock, _mapped("purge"):
            self._commit_held()
            self._table.checkout_latest()
            self._table.update(values_sql={"id": "id"})  # every row moves to new files
            create_search_indices(self._table)
            with warnings.catch_warnings():
                # LanceDB warns that a zero retention breaks other processes' readers.
                warnings.simplefilter("ignore", UserWarning)
                self._optimize_locked(keep=timedelta(0), unverified=True)
            self._resident = None  # same rows at new positions: reload

    def _optimize_locked(
        self, keep: timedelta = _KEEP_OLD_VERSIONS, *, unverified: bool = False
    ) -> None:
        with _mapped("optimize"):
            self._commit_held()
            before = self._table.version
            self._table.optimize(cleanup_older_than=keep, delete_unverified=unverified)
            self._writes_since_optimize = 0
            # LanceDB caches metadata and index pages per table and index version, and
            # compaction has just replaced both: what the caches hold will not be read again,
            # yet it stays until evicted, so a daemon grew towards the caches' bound over a
            # whole 100k-turn run. A new connection starts them empty: they keep one cycle.
            self._db = connect(self.location)
            self._table = self._db.open_table(TABLE_NAME)
            # Compaction rewrites files, not rows: the resident copy stays true.
            resident = self._resident
            if resident is not None and resident.version == before:
                resident.version = self._table.version

    # ------------------------------------------------------------------ resident copy

    def _current(self) -> Resident:
        """The resident copy, loaded on first use and reloaded after another process wrote."""
        now = time.monotonic()
        if self._resident is not None and now - self._checked_at < self._refresh_seconds:
            return self._resident
        with _mapped("read"):
            self._table.checkout_latest()
            if self._resident is None or self._resident.version != self._table.version:
                # Another process wrote: what we hold goes in first, then all is read back.
                self._commit_held()
                data = self._table.search().limit(None).to_arrow()
                earlier = self._resident
                self._resident = Resident(data, self.dim, self._table.version)
                if earlier is not None:
                    self._resident.carry_text_from(earlier)
        self._checked_at = now
        return self._resident

    def _mask(self, resident: Resident, where: str) -> np.ndarray:
        """Which live positions satisfy ``where``, as LanceDB evaluates it.

        Cached per filter: positions only grow, so after a write only the new positions are
        asked about, and a mask is never recomputed for unchanged rows. The filters the
        library itself uses (``column = 'value' AND ...``) are evaluated on the resident
        columns; any other SQL is LanceDB's, asked by id for the new positions.
        """
        mask = resident.masks.get(where)
        n = resident.n
        ids = resident.columns.column("id")
        equalities = equality_pairs(where)
        with _mapped("filter"):
            if equalities is not None:
                start = 0 if mask is None else len(mask)
                fresh = equal_mask(resident.columns.slice(start, n - start), equalities)
                mask = fresh if mask is None else np.concatenate([mask, fresh])
            elif mask is None or n - len(mask) > _MASK_INCREMENTAL_MAX:
                matching = self._matching_ids(where)
                mask = is_in(ids, matching)
            elif len(mask) < n:
                fresh = ids.slice(len(mask)).to_pylist()
                parts = [
                    self._matching_ids(f"({where}) AND {_id_filter(chunk)}")
                    for chunk in _chunks(list(dict.fromkeys(fresh)), _ID_CHUNK)
                ]
                matching = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
                mask = np.concatenate([mask, is_in(ids.slice(len(mask)), matching)])
        resident.masks[where] = mask
        return mask & resident.alive[:n]

    def _matching_ids(self, where: str) -> pa.Array:
        self._commit_held()  # LanceDB evaluates the filter: it must hold every row
        found = self._table.search().where(where).select(["id"]).limit(None).to_arrow()
        return found.column("id").combine_chunks()


# ---------------------------------------------------------------------- helpers


def _id_filter(ids: Sequence[str]) -> str:
    return f"id IN ({', '.join(sql_quote(i) for i in ids)})"


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

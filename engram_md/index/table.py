"""The search index: every memory (facts, episodes, boxes) in one LanceDB table under state/.

The index is derived data: the markdown folder is the truth and ``engram-md reindex`` can
always rebuild it. So whenever the stored table cannot be trusted for the current embedder
(another model, another width, an older row layout) it is dropped and recreated empty, and
:attr:`MemoryIndex.needs_rebuild` tells the caller to reindex.

Where the work happens, and why:

* **LanceDB** stores the rows (durable, shared between processes) and answers full-text
  queries with its native BM25 index. Rows written since the last :meth:`optimize` are
  searched by a flat scan, so text search sees a row as soon as ``upsert`` returns.
* **Vector search and row reads are served from memory.** On first read the table is loaded
  once into a resident copy (rows as Arrow columns, vectors as one float32 matrix) that every
  write of this process updates in place. An exact dot product over that matrix is faster
  than LanceDB's own vector search at the sizes a memory folder reaches (measured: 100k rows
  x 384 dims in ~6 ms, against 10-15 ms for an IVF-PQ index that also took minutes to train
  and gave approximate answers), and reading hits from memory avoids the per-query cost of
  fetching twenty columns from disk. ``where`` filters of the form ``col = 'v' AND ...``
  (all the library uses) are evaluated on the resident columns; any other SQL is LanceDB's.
  The result is kept per filter as a row mask and extended incrementally after writes.
* Writes from another process are noticed by the table version, checked at most once a
  second; the resident copy is then reloaded.
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
import os
import shutil
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# LanceDB logs deprecation notices and routine events as warnings on stderr, which would
# end up in CLI output; real failures reach us as exceptions. Must be set before the import.
os.environ.setdefault("LANCEDB_LOG", "error")

import lancedb  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import regex  # noqa: E402
from lancedb.index import FTS, BTree  # noqa: E402
from lancedb.query import FullTextOperator, MatchQuery  # noqa: E402

from ..core.crashpoints import crashpoint
from ..core.errors import EngramError, IndexError_  # noqa: E402
from ..text.embeddings import Embedder, l2_normalize  # noqa: E402

log = logging.getLogger(__name__)

TABLE_NAME = "memories"
# Where a table that cannot be opened is moved before a new one is built: kept (the newest
# one only) so what went wrong can still be looked at, and outside LanceDB's table listing.
UNREADABLE_DIR = "unreadable"
# What LanceDB raises when a table's files cannot be read as a table (a kill -9 while it was
# being created, a damaged manifest).
UNOPENABLE_TABLE = (ValueError, RuntimeError, OSError)
# Bump when the row layout changes: an index written with another layout is rebuilt.
SCHEMA_VERSION = "1"
_META_MODEL = b"engram.model_id"
_META_DIM = b"engram.dim"
_META_SCHEMA = b"engram.schema_version"

# Each write leaves a small fragment that text search scans row by row until optimize folds
# it into the index; past a few dozen such fragments that scan dominates query time.
_AUTO_OPTIMIZE_WRITES = 32
# Old table versions are kept this long after compaction so a reader in another process that
# is mid-query on an older version never finds its files gone. Readers move to the latest
# version at least once a second (_FRESHNESS_SECONDS), so a minute is ample; longer costs
# time, since every cleanup walks all the versions it keeps (thousands an hour in a daemon).
_KEEP_OLD_VERSIONS = timedelta(minutes=1)
# LanceDB caches index and table metadata per version and, by default, lets the caches grow
# to gigabytes; a writer makes new versions all the time, so the caches fill with versions it
# will never read again and its memory grows with its input. Text search over 100k rows is
# as fast with a 16 MB index cache as with 128 MB (p50 5 ms, p95 6-8 ms; 4 MB doubles p95).
_INDEX_CACHE_BYTES = 32 << 20
_METADATA_CACHE_BYTES = 16 << 20
# How often a reader looks for writes made by another process.
_FRESHNESS_SECONDS = 1.0
# Long id lists are split so a generated SQL filter stays a reasonable size.
_ID_CHUNK = 512
# A filter mask missing more rows than this is recomputed with one scan instead of by id.
_MASK_INCREMENTAL_MAX = 2048

# Row values kept built between queries (a few hundred bytes each plus the content).
_ROW_CACHE_MAX = 50_000
# Approximate first pass for vector search: used above this many rows, with this many
# principal directions, re-scoring this many times the requested hits (at least the floor).
_SHORTLIST_MIN_ROWS = 20_000
_SHORTLIST_DIM = 64
_SHORTLIST_FACTOR = 10
_SHORTLIST_FLOOR = 2000
_SHORTLIST_SAMPLE = 20_000

# Text search with a filter asks for this many times the hits, then filters in memory.
_FTS_OVERFETCH = 2

_FTS_INDEX = "content_idx"
_ID_INDEX = "id_idx"


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One memory as the index holds it: what recall needs without opening the file."""

    id: str
    path: str  # relative to the memory folder, forward slashes
    kind: str  # "fact" | "box"
    content: str
    category: str
    memory_kind: str
    status: str
    lifecycle_state: str
    importance: float
    confidence: float
    created: datetime
    updated: datetime
    session: str
    source_turn_ids: tuple[str, ...]
    entities: tuple[str, ...]
    tags: tuple[str, ...]
    speaker: str
    access_count: int
    confirmations: int
    file_mtime_ns: int  # with content_hash: lets reconcile spot edited files cheaply
    content_hash: str
    vector: np.ndarray | None = None  # filled from the index's embedder when None


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result: cosine similarity for vector search, BM25 score for text search."""

    row: IndexRow
    score: float


def _schema(dim: int, model_id: str) -> pa.Schema:
    strings = pa.list_(pa.string())
    stamp = pa.timestamp("us", tz="UTC")
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("path", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("content", pa.string()),
            pa.field("category", pa.string()),
            pa.field("memory_kind", pa.string()),
            pa.field("status", pa.string()),
            pa.field("lifecycle_state", pa.string()),
            pa.field("importance", pa.float64()),
            pa.field("confidence", pa.float64()),
            pa.field("created", stamp),
            pa.field("updated", stamp),
            pa.field("session", pa.string()),
            pa.field("source_turn_ids", strings),
            pa.field("entities", strings),
            pa.field("tags", strings),
            pa.field("speaker", pa.string()),
            pa.field("access_count", pa.int64()),
            pa.field("confirmations", pa.int64()),
            pa.field("file_mtime_ns", pa.int64()),
            pa.field("content_hash", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ],
        metadata={
            _META_MODEL: model_id.encode(),
            _META_DIM: str(dim).encode(),
            _META_SCHEMA: SCHEMA_VERSION.encode(),
        },
    )


_COLUMNS = tuple(_schema(1, "").names)
_SCALAR_COLUMNS = tuple(name for name in _COLUMNS if name != "vector")
_TUPLE_COLUMNS = frozenset({"source_turn_ids", "entities", "tags"})
_TIME_COLUMNS = frozenset({"created", "updated"})
# Filters on these compare in memory (see MemoryIndex._mask).
_TEXT_COLUMNS = frozenset(
    {"id", "path", "kind", "category", "memory_kind", "status", "lifecycle_state", "session"}
)


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


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class _Resident:
    """The table in memory: Arrow columns for the rows, one matrix for the vectors.

    Positions only grow: an updated row is appended and its old position marked dead, so a
    filter mask computed for earlier positions stays valid. ``compact`` drops dead rows when
    they pile up.
    """

    def __init__(self, data: pa.Table, dim: int, version: int) -> None:
        self.dim = dim
        self.version = version
        n = data.num_rows
        self.columns: pa.Table = data.drop_columns(["vector"]).combine_chunks()
        self.vectors = np.empty((max(64, n + n // 4), dim), dtype=np.float32)
        self.vectors[:n] = _vector_matrix(data, dim)
        self.alive = np.zeros(len(self.vectors), dtype=bool)
        ids = self.columns.column("id").to_pylist()
        self.pos: dict[str, int] = dict(zip(ids, range(n), strict=True))
        self.alive[list(self.pos.values())] = True
        self.n = n
        self.dead = n - len(self.pos)
        self.masks: dict[str, np.ndarray] = {}
        # IndexRow values built so far, by position: recall asks for a few hundred rows per
        # query, and building them from Arrow is most of its cost. Positions are never reused
        # (an update appends), so an entry stays true until compaction renumbers them.
        self.row_cache: dict[int, IndexRow] = {}
        self.shortlist: _Shortlist | None = None

    def append(self, data: pa.Table, vectors: np.ndarray) -> None:
        ids = data.column("id").to_pylist()
        for row_id in ids:
            old = self.pos.get(row_id)
            if old is not None:
                self.alive[old] = False
                self.dead += 1
        start, m = self.n, len(ids)
        if start + m > len(self.vectors):
            capacity = max(start + m, 2 * len(self.vectors))
            grown = np.empty((capacity, self.dim), dtype=np.float32)
            grown[:start] = self.vectors[:start]
            self.vectors = grown
            alive = np.zeros(capacity, dtype=bool)
            alive[:start] = self.alive[:start]
            self.alive = alive
            self.row_cache.clear()  # cached rows hold views of the old matrix: let it go
        self.vectors[start : start + m] = vectors
        self.alive[start : start + m] = True
        self.pos.update(zip(ids, range(start, start + m), strict=True))
        self.columns = pa.concat_tables([self.columns, data.drop_columns(["vector"])])
        self.n += m
        if self.shortlist is not None:
            self.shortlist.extend(self.vectors[: self.n])
        self._tidy()

    def remove(self, ids: Sequence[str]) -> None:
        for row_id in ids:
            old = self.pos.pop(row_id, None)
            if old is not None:
                self.alive[old] = False
                self.dead += 1
        self._tidy()

    def _tidy(self) -> None:
        if self.dead > max(1024, self.n // 4):
            self._compact()
        elif self.columns.column("id").num_chunks > 32:
            # Many single-row writes make many chunks, and Arrow's take slows down with them.
            self.columns = self.columns.combine_chunks()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        self.columns = self.columns.take(pa.array(keep)).combine_chunks()
        vectors = np.empty((max(64, len(keep) + len(keep) // 4), self.dim), dtype=np.float32)
        vectors[: len(keep)] = self.vectors[keep]
        self.vectors = vectors
        self.alive = np.zeros(len(vectors), dtype=bool)
        self.alive[: len(keep)] = True
        # A mask covered a prefix of the old positions; keep is sorted, so the surviving
        # positions of that prefix are a prefix of the new positions.
        self.masks = {
            where: mask[keep[: int(np.searchsorted(keep, len(mask)))]]
            for where, mask in self.masks.items()
        }
        self.n = len(keep)
        self.row_cache = {}
        self.shortlist = None
        self.pos = dict(zip(self.columns.column("id").to_pylist(), range(self.n), strict=True))
        self.dead = 0

    def rows(self, positions: Sequence[int] | np.ndarray) -> list[IndexRow]:
        wanted = [int(p) for p in positions]
        cache = self.row_cache
        missing = list(dict.fromkeys(p for p in wanted if p not in cache))
        if missing:
            if len(cache) + len(missing) > _ROW_CACHE_MAX:
                cache.clear()
            built = _rows(self.columns.take(pa.array(missing, pa.int64())), self.vectors[missing])
            cache.update(zip(missing, built, strict=True))
        return [cache[p] for p in wanted]

    def shortlisted(self) -> _Shortlist:
        if self.shortlist is None:
            self.shortlist = _Shortlist.build(self.vectors[: self.n])
        return self.shortlist


class _Shortlist:
    """A cheap first pass for vector search over large tables: the vectors projected onto
    their top principal directions.

    Exact search reads every full vector per query (150 MB at 100k memories), which is
    bound by memory bandwidth. Scoring the projection (a sixth of the size) and re-scoring
    only the best few thousand with full vectors returns the same top hits in practice; the
    benchmark reports the overlap with exact search. Exactness matters for the near-duplicate
    check, which therefore never uses this.
    """

    def __init__(self, basis: np.ndarray, projected: np.ndarray, n: int) -> None:
        self.basis = basis  # (dim, k)
        self.projected = projected  # (capacity, k)
        self.n = n

    @classmethod
    def build(cls, vectors: np.ndarray) -> _Shortlist:
        # A fixed, strided sample keeps the basis deterministic and cheap to compute.
        step = max(1, len(vectors) // _SHORTLIST_SAMPLE)
        sample = vectors[::step].astype(np.float64)
        # Uncentred: queries are scored by dot product, so keep the shared direction too.
        _, _, vt = np.linalg.svd(sample, full_matrices=False)
        basis = np.ascontiguousarray(vt[:_SHORTLIST_DIM].T, dtype=np.float32)
        capacity = max(64, len(vectors) + len(vectors) // 4)
        projected = np.empty((capacity, basis.shape[1]), np.float32)
        projected[: len(vectors)] = vectors @ basis
        return cls(basis, projected, len(vectors))

    def extend(self, vectors: np.ndarray) -> None:
        """Project rows appended since the last call (``vectors`` is the whole live prefix)."""
        n = len(vectors)
        if n <= self.n:
            return
        if n > len(self.projected):
            grown = np.empty((2 * n, self.projected.shape[1]), np.float32)
            grown[: self.n] = self.projected[: self.n]
            self.projected = grown
        self.projected[self.n : n] = vectors[self.n : n] @ self.basis
        self.n = n

    def candidates(self, query: np.ndarray, allowed: np.ndarray, want: int) -> np.ndarray:
        """Positions of the ``want`` best allowed rows by projected score (unordered)."""
        scores = self.projected[: self.n] @ (query @ self.basis)
        scores[~allowed[: self.n]] = -np.inf
        want = min(want, int(np.count_nonzero(allowed[: self.n])))
        if want <= 0:
            return np.empty(0, dtype=np.int64)
        if want >= self.n:
            return np.flatnonzero(allowed[: self.n])
        return np.argpartition(-scores, want - 1)[:want]


class MemoryIndex:
    """The table of all memories, opened once and kept open for the life of the process."""

    def __init__(
        self,
        path: Path,
        db: Any,
        table: Any,
        embedder: Embedder,
        dim: int,
        rebuild_reason: str | None,
    ) -> None:
        self._path = path
        self._db = db
        self._table = table
        self._schema: pa.Schema = table.schema
        self._embedder = embedder
        self.dim = dim
        self.rebuild_reason = rebuild_reason
        # One lock for the resident copy and for writes: reads are short, and a daemon's
        # recall thread must never see a half-applied write.
        self._lock = threading.RLock()
        self._resident: _Resident | None = None
        self._checked_at = 0.0
        self._writes_since_optimize = 0
        # Held-back writes (see hold_writes): applied to the resident copy, not yet committed.
        self._hold_seconds = 0.0
        self._held: list[pa.Table] = []
        self._held_since = 0.0

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: Path, embedder: Embedder, *, may_rebuild: bool = True) -> MemoryIndex:
        """Open the index at ``path``, creating it if missing.

        If the stored table was built for another embedder (model id or width) or another row
        layout, it is dropped and recreated empty; if it cannot be opened at all (a kill -9
        while it was being created, a damaged manifest) it is moved aside to
        ``<path>/unreadable/`` and recreated empty. ``needs_rebuild`` is then True (also for a
        brand-new index) and the caller should reindex the memory folder. A table missing its
        text or id index (a kill between creating the table and its indices) gets them.

        Only the holder of the writer lock may do that. A reader (``may_rebuild=False``: a
        recall or search beside the daemon) must not wipe the table the writer fills, nor race
        it creating one, so it gets :class:`IndexError_` instead and nothing is changed.
        """
        dim = embedder.dim
        model_id = embedder.model_id
        with _mapped(f"open at {path}"):
            path.mkdir(parents=True, exist_ok=True)
            db = connect(path)
            table, reason = _stored_table(db, path, model_id, dim, may_rebuild=may_rebuild)
            if table is None:
                table = db.create_table(TABLE_NAME, schema=_schema(dim, model_id))
                crashpoint("index.create")  # a table without its indices yet
            if may_rebuild:
                _ensure_search_indices(table)
        return cls(path, db, table, embedder, dim, reason)

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
        data = _last_per_id(pa.concat_tables(self._held))
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
        columns: dict[str, list[Any]] = {name: [] for name in _SCALAR_COLUMNS}
        for row in rows:
            for name in _SCALAR_COLUMNS:
                value = getattr(row, name)
                if name in _TUPLE_COLUMNS:
                    value = list(value)
                elif name in _TIME_COLUMNS:
                    value = _utc(value)
                columns[name].append(value)
        with _mapped("row conversion"):
            arrays: list[pa.Array] = [
                pa.array(columns[name], type=self._schema.field(name).type)
                for name in _SCALAR_COLUMNS
            ]
            arrays.append(
                pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), self.dim)
            )
            return pa.Table.from_arrays(arrays, schema=self._schema)

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

    def paths(self, ids: Sequence[str]) -> dict[str, str]:
        """id -> path relative to the memory folder, for the ids the index holds."""
        return {row_id: row.path for row_id, row in self.get(ids).items()}

    def vector_search(
        self, vector: np.ndarray, k: int, *, where: str | None = None, exact: bool = True
    ) -> list[Hit]:
        """The ``k`` rows most similar to ``vector``, best first; score = cosine similarity.

        Exact by default, so a near-duplicate check never misses its twin. ``exact=False``
        (recall) lets a large table shortlist by projected vectors first (:class:`_Shortlist`);
        the hits returned are still scored with the full vectors.
        """
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise IndexError_(f"a {query.shape[0]}-d query against a {self.dim}-d index")
        if k <= 0:
            return []
        query = l2_normalize(query[None, :])[0]
        with self._lock:
            resident = self._current()
            n = resident.n
            allowed = self._mask(resident, where) if where else resident.alive[:n]
            candidates = int(np.count_nonzero(allowed))
            if candidates == 0:
                return []
            if not exact and n >= _SHORTLIST_MIN_ROWS:
                want = max(_SHORTLIST_FLOOR, k * _SHORTLIST_FACTOR)
                short = resident.shortlisted().candidates(query, allowed, want)
                exact_scores = resident.vectors[short] @ query
                order = np.argsort(-exact_scores, kind="stable")[:k]
                top = short[order]
                rows = resident.rows(top)
                return [
                    Hit(row, float(s)) for row, s in zip(rows, exact_scores[order], strict=True)
                ]
            scores = resident.vectors[:n] @ query
            scores[~allowed] = -np.inf
            k = min(k, candidates)
            top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.argsort(-scores[top], kind="stable")][:k]
            rows = resident.rows(top)
        return [Hit(row, float(scores[p])) for row, p in zip(rows, top, strict=True)]

    def text_search(self, query: str, k: int, *, where: str | None = None) -> list[Hit]:
        """The ``k`` best BM25 matches of ``query`` in the content, best first.

        Any text is a valid query: it is matched word by word (stemmed, stop words dropped),
        never parsed as query syntax. A filter is applied to the matches with the resident
        filter mask (twice as fast as LanceDB's prefilter); only when that leaves fewer than
        ``k`` of a full answer is the query asked again with the filter inside LanceDB.
        """
        if k <= 0 or not query.strip():
            return []
        with self._lock:
            self._commit_held()  # LanceDB answers this one: it must hold every row
            self._current()  # notice other writers before asking LanceDB
        limit = k * _FTS_OVERFETCH if where else k
        ids, scores = self._fts(query, limit, None)
        with self._lock:
            resident = self._current()
            if any(row_id not in resident.pos for row_id in ids):
                # Another process wrote between our freshness check and the query.
                self._resident = None
                resident = self._current()
            allowed = self._mask(resident, where) if where else None
            keep = [
                (resident.pos[i], s)
                for i, s in zip(ids, scores, strict=True)
                if i in resident.pos and (allowed is None or allowed[resident.pos[i]])
            ][:k]
            if where and len(keep) < k and len(ids) == limit:
                keep = []
        if where and not keep and len(ids) == limit:
            ids, scores = self._fts(query, k, where)
            with self._lock:
                resident = self._current()
                keep = [
                    (resident.pos[i], s)
                    for i, s in zip(ids, scores, strict=True)
                    if i in resident.pos
                ]
        with self._lock:
            rows = self._current().rows([p for p, _ in keep])
        return [Hit(row, float(s)) for row, (_, s) in zip(rows, keep, strict=True)]

    def _fts(self, query: str, limit: int, where: str | None) -> tuple[list[str], list[float]]:
        with _mapped("text search"):
            builder = (
                self._table.search(_match(query), query_type="fts")
                .select(["id", "_score"])
                .limit(limit)
            )
            if where:
                builder = builder.where(where, prefilter=True)
            found = builder.to_arrow()
        return found.column("id").to_pylist(), found.column("_score").to_pylist()

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
        """Compact small writes and fold new rows into the text and id indices.

        Also runs by itself every few dozen writes; call it after bulk loads.
        """
        with self._lock:
            self._optimize_locked()

    def purge_history(self) -> None:
        """Leave nothing of deleted rows on disk (``forget``): rewrite every live row, rebuild
        both indices over them, and remove every older version and stray file.

        A delete only marks rows as deleted: their data files (compaction rewrites a file only
        once a tenth of its rows are gone), the older versions and the full-text index keep
        them. Each step commits a table that still has both indices, so a kill part-way leaves
        a working index. Only for a holder of the writer lock: other processes' readers on an
        older version fail, and a write in flight elsewhere would be corrupted.
        """
        with self._lock, _mapped("purge"):
            self._commit_held()
            self._table.checkout_latest()
            self._table.update(values_sql={"id": "id"})  # every row moves to new files
            self._table.create_index("content", config=_fts_config(), name=_FTS_INDEX)
            self._table.create_index("id", config=BTree(), name=_ID_INDEX)
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
            self._db = connect(self._path)
            self._table = self._db.open_table(TABLE_NAME)
            # Compaction rewrites files, not rows: the resident copy stays true.
            resident = self._resident
            if resident is not None and resident.version == before:
                resident.version = self._table.version

    # ------------------------------------------------------------------ resident copy

    def _current(self) -> _Resident:
        """The resident copy, loaded on first use and reloaded after another process wrote."""
        now = time.monotonic()
        if self._resident is not None and now - self._checked_at < _FRESHNESS_SECONDS:
            return self._resident
        with _mapped("read"):
            self._table.checkout_latest()
            if self._resident is None or self._resident.version != self._table.version:
                # Another process wrote: what we hold goes in first, then all is read back.
                self._commit_held()
                data = self._table.search().limit(None).to_arrow()
                self._resident = _Resident(data, self.dim, self._table.version)
        self._checked_at = now
        return self._resident

    def _mask(self, resident: _Resident, where: str) -> np.ndarray:
        """Which live positions satisfy ``where``, as LanceDB evaluates it.

        Cached per filter: positions only grow, so after a write only the new positions are
        asked about, and a mask is never recomputed for unchanged rows. The filters the
        library itself uses (``column = 'value' AND ...``) are evaluated on the resident
        columns; any other SQL is LanceDB's, asked by id for the new positions.
        """
        mask = resident.masks.get(where)
        n = resident.n
        ids = resident.columns.column("id")
        equalities = _equalities(where)
        with _mapped("filter"):
            if equalities is not None:
                start = 0 if mask is None else len(mask)
                fresh = _equal_mask(resident.columns.slice(start, n - start), equalities)
                mask = fresh if mask is None else np.concatenate([mask, fresh])
            elif mask is None or n - len(mask) > _MASK_INCREMENTAL_MAX:
                matching = self._matching_ids(where)
                mask = _is_in(ids, matching)
            elif len(mask) < n:
                fresh = ids.slice(len(mask)).to_pylist()
                parts = [
                    self._matching_ids(f"({where}) AND {_id_filter(chunk)}")
                    for chunk in _chunks(list(dict.fromkeys(fresh)), _ID_CHUNK)
                ]
                matching = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
                mask = np.concatenate([mask, _is_in(ids.slice(len(mask)), matching)])
        resident.masks[where] = mask
        return mask & resident.alive[:n]

    def _matching_ids(self, where: str) -> pa.Array:
        self._commit_held()  # LanceDB evaluates the filter: it must hold every row
        found = self._table.search().where(where).select(["id"]).limit(None).to_arrow()
        return found.column("id").combine_chunks()


# ---------------------------------------------------------------------- helpers


def connect(path: Path) -> Any:
    """A LanceDB connection whose caches are bounded (see _INDEX_CACHE_BYTES)."""
    session = lancedb.Session(
        index_cache_size_bytes=_INDEX_CACHE_BYTES,
        metadata_cache_size_bytes=_METADATA_CACHE_BYTES,
    )
    return lancedb.connect(str(path), session=session)


def _stored_table(
    db: Any, path: Path, model_id: str, dim: int, *, may_rebuild: bool
) -> tuple[Any | None, str | None]:
    """The stored table and why it must be rebuilt: (table, None) when it can be used as it
    is, (None, reason) when a new, empty one is needed. Only a writer (``may_rebuild``) may
    drop or move a table; a reader gets :class:`IndexError_` instead."""
    if TABLE_NAME not in db.list_tables().tables:
        if not may_rebuild:
            raise IndexError_(
                f"there is no search index at {path} yet: the process writing to the "
                "memory folder creates it; try again in a moment"
            )
        return None, "new index"
    try:
        table = db.open_table(TABLE_NAME)
    except UNOPENABLE_TABLE as exc:
        if not may_rebuild:
            raise IndexError_(
                f"the search index at {path} cannot be opened ({exc}): if the daemon is "
                "starting, try again in a moment; otherwise the daemon rebuilds it when it "
                "starts, or stop it and run `engram-md doctor --repair`"
            ) from exc
        kept = _set_aside(path)
        log.warning(
            "the search index could not be opened (%s); moved it to %s and building a new "
            "one from the memory folder",
            exc,
            kept,
        )
        return None, f"the stored index could not be opened ({exc})"
    reason = _mismatch(table.schema, model_id, dim)
    if reason is None:
        return table, None
    if not may_rebuild:
        raise IndexError_(
            f"the search index at {path} was built with another embedding model "
            f"or layout ({reason}); only the writer may rebuild it: use the "
            "daemon's configuration, or stop the daemon and run `engram-md reindex`"
        )
    db.drop_table(TABLE_NAME)
    return None, reason


def _set_aside(path: Path) -> Path:
    """Move the unopenable table under ``path/unreadable/``, replacing one moved earlier."""
    aside = path / UNREADABLE_DIR
    shutil.rmtree(aside, ignore_errors=True)
    aside.mkdir()
    target = aside / f"{TABLE_NAME}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.lance"
    os.replace(path / f"{TABLE_NAME}.lance", target)
    return target


def search_indices_lacking(table: Any) -> set[str]:
    """Which of the table's two indices are missing: "text" and/or "id"."""
    names = {index.name for index in table.list_indices()}
    return {what for what, name in (("text", _FTS_INDEX), ("id", _ID_INDEX)) if name not in names}


def _ensure_search_indices(table: Any) -> None:
    """Create the text and id indices if the table lacks them: text search refuses to run
    without its index, and merge_insert and delete look rows up by id."""
    lacking = search_indices_lacking(table)
    if "text" in lacking:
        # Created on the empty table, too, so text search works from the first row on.
        table.create_index("content", config=_fts_config(), name=_FTS_INDEX)
    if "id" in lacking:
        table.create_index("id", config=BTree(), name=_ID_INDEX)


def _fts_config() -> FTS:
    # English stemming and stop words: recall queries are questions ("what does Dana
    # prefer?"), facts are statements ("Dana prefers ..."). Positions are not stored: we
    # never run phrase queries, and they double the index size.
    return FTS(with_position=False, stem=True, remove_stop_words=True, ascii_folding=True)


def _match(query: str) -> MatchQuery:
    # Any word may match (OR) and BM25 ranks rows with more of them higher; no fuzziness,
    # since a near-miss word is the vector search's job. All fields spelled out because the
    # pydantic defaults are invisible to type checkers.
    return MatchQuery(
        query,
        "content",
        boost=1.0,
        fuzziness=0,
        max_expansions=50,
        operator=FullTextOperator.OR,
        prefix_length=0,
        document_granularity=None,
    )


def _mismatch(schema: pa.Schema, model_id: str, dim: int) -> str | None:
    meta = schema.metadata or {}
    stored_model = meta.get(_META_MODEL, b"").decode()
    stored_dim = meta.get(_META_DIM, b"").decode()
    stored_schema = meta.get(_META_SCHEMA, b"").decode()
    if stored_schema != SCHEMA_VERSION or tuple(schema.names) != _COLUMNS:
        return f"row layout changed ({stored_schema or 'unknown'} -> {SCHEMA_VERSION})"
    if stored_model != model_id:
        return f"embedding model changed ({stored_model or 'unknown'} -> {model_id})"
    if stored_dim != str(dim):
        return f"embedding width changed ({stored_dim or 'unknown'} -> {dim})"
    return None


def _id_filter(ids: Sequence[str]) -> str:
    return f"id IN ({', '.join(sql_quote(i) for i in ids)})"


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _is_in(values: pa.ChunkedArray | pa.Array, value_set: pa.Array) -> np.ndarray:
    result = pc.is_in(values, value_set=value_set)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)


_EQUALITY = regex.compile(r"\s*(\w+)\s*=\s*'([^']*)'\s*")


def _equalities(where: str) -> list[tuple[str, str]] | None:
    """``col = 'v' AND col2 = 'w'`` on scalar text columns as pairs, else None (other SQL)."""
    pairs: list[tuple[str, str]] = []
    for part in regex.split(r"\bAND\b", where):
        match = _EQUALITY.fullmatch(part)
        if match is None or match.group(1) not in _TEXT_COLUMNS:
            return None
        pairs.append((match.group(1), match.group(2)))
    return pairs


def _equal_mask(columns: pa.Table, pairs: list[tuple[str, str]]) -> np.ndarray:
    """Rows where every column equals its value (a null equals nothing, as in SQL)."""
    mask = np.ones(columns.num_rows, dtype=bool)
    for name, value in pairs:
        equal = pc.fill_null(pc.equal(columns.column(name), value), False)
        mask &= np.asarray(equal.to_numpy(zero_copy_only=False), dtype=bool)
    return mask


def _last_per_id(table: pa.Table) -> pa.Table:
    """The rows of ``table`` with the last row for each id only (writes held back in order)."""
    last = {row_id: i for i, row_id in enumerate(table.column("id").to_pylist())}
    if len(last) == table.num_rows:
        return table
    return table.take(pa.array(sorted(last.values()), pa.int64()))


def _vector_matrix(table: pa.Table, dim: int) -> np.ndarray:
    if table.num_rows == 0:
        return np.zeros((0, dim), dtype=np.float32)
    array = table.column("vector").combine_chunks()
    return array.values.to_numpy(zero_copy_only=False).reshape(-1, dim)


def _rows(table: pa.Table, vectors: np.ndarray) -> list[IndexRow]:
    """Arrow rows -> IndexRow values, column by column (much faster than row dicts)."""
    cols = {name: table.column(name).to_pylist() for name in _SCALAR_COLUMNS}
    out = []
    for i in range(table.num_rows):
        out.append(
            IndexRow(
                id=cols["id"][i],
                path=cols["path"][i] or "",
                kind=cols["kind"][i] or "",
                content=cols["content"][i] or "",
                category=cols["category"][i] or "",
                memory_kind=cols["memory_kind"][i] or "",
                status=cols["status"][i] or "",
                lifecycle_state=cols["lifecycle_state"][i] or "",
                importance=float(cols["importance"][i] or 0.0),
                confidence=float(cols["confidence"][i] or 0.0),
                created=cols["created"][i],
                updated=cols["updated"][i],
                session=cols["session"][i] or "",
                source_turn_ids=tuple(cols["source_turn_ids"][i] or ()),
                entities=tuple(cols["entities"][i] or ()),
                tags=tuple(cols["tags"][i] or ()),
                speaker=cols["speaker"][i] or "",
                access_count=int(cols["access_count"][i] or 0),
                confirmations=int(cols["confirmations"][i] or 0),
                file_mtime_ns=int(cols["file_mtime_ns"][i] or 0),
                content_hash=cols["content_hash"][i] or "",
                vector=vectors[i],
            )
        )
    return out

"""The search index: every memory (facts, episodes, boxes) in one LanceDB table under state/.

The index is derived data: the markdown folder is the truth and ``engram-md reindex`` can
always rebuild it. So whenever the stored table cannot be trusted for the current embedder
(another model, another width, an older row layout) it is dropped and recreated empty, and
:attr:`MemoryIndex.needs_rebuild` tells the caller to reindex.

Two searches run against it: cosine similarity over the ``vector`` column and BM25 over the
``content`` column (LanceDB's native full-text index). Both see rows the moment ``upsert``
returns: LanceDB searches rows its indices do not cover yet by a flat scan, and
:meth:`MemoryIndex.optimize` folds them into the indices (it also runs by itself now and then,
so a long-running daemon does not accumulate a large unindexed tail).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, BTree, IvfPq
from lancedb.query import MatchQuery

from .embeddings import Embedder
from .errors import EngramError, IndexError_

TABLE_NAME = "memories"
# Bump when the row layout changes: an index written with another layout is rebuilt.
SCHEMA_VERSION = "1"
_META_MODEL = b"engram.model_id"
_META_DIM = b"engram.dim"
_META_SCHEMA = b"engram.schema_version"

# Past this many rows a flat vector scan starts to cost more than the recall budget allows,
# so optimize() trains an approximate (IVF-PQ) index; below it exact search is fast enough.
ANN_MIN_ROWS = 50_000
# Search settings for the approximate index: probe enough partitions to keep recall high and
# re-rank the candidates by their exact distance, so scores stay true cosine similarities.
_ANN_NPROBES = 24
_ANN_REFINE_FACTOR = 10
# Housekeeping: after this many writes in one process, compact and fold the unindexed tail
# into the indices (cheap when little changed, and it keeps flat-scanned rows few).
_AUTO_OPTIMIZE_WRITES = 200
# Old table versions are kept this long after compaction so a reader in another process that
# is mid-query on an older version never finds its files gone.
_KEEP_OLD_VERSIONS = timedelta(minutes=10)
# Readers in other processes look for a newer table version at most this often.
_READ_CONSISTENCY = timedelta(seconds=2)
# Long id lists are split so a generated SQL filter stays a reasonable size.
_ID_CHUNK = 512

_FTS_INDEX = "content_idx"
_ID_INDEX = "id_idx"
_VECTOR_INDEX = "vector_idx"


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
_TUPLE_COLUMNS = ("source_turn_ids", "entities", "tags")


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
    """A SQL string literal (for ``where`` filters built from ids or statuses)."""
    return "'" + value.replace("'", "''") + "'"


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class MemoryIndex:
    """The LanceDB table of all memories, opened once and kept open for the process."""

    def __init__(
        self,
        db: Any,
        table: Any,
        embedder: Embedder,
        dim: int,
        rebuild_reason: str | None,
        ann_min_rows: int,
    ) -> None:
        self._db = db
        self._table = table
        self._schema: pa.Schema = table.schema
        self._embedder = embedder
        self.dim = dim
        self.rebuild_reason = rebuild_reason
        self._ann_min_rows = ann_min_rows
        self._write_lock = threading.Lock()
        self._writes_since_optimize = 0
        self._has_ann = self._index_exists(_VECTOR_INDEX)

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls, path: Path, embedder: Embedder, *, ann_min_rows: int = ANN_MIN_ROWS
    ) -> MemoryIndex:
        """Open the index at ``path``, creating it if missing.

        If the stored table was built for another embedder (model id or width) or another row
        layout, it is dropped and recreated empty; ``needs_rebuild`` is then True (also for a
        brand-new index) and the caller should reindex the memory folder.
        """
        dim = embedder.dim
        model_id = embedder.model_id
        with _mapped(f"open at {path}"):
            path.mkdir(parents=True, exist_ok=True)
            db = lancedb.connect(str(path), read_consistency_interval=_READ_CONSISTENCY)
            reason: str | None = None
            if TABLE_NAME in db.list_tables().tables:
                table = db.open_table(TABLE_NAME)
                reason = _mismatch(table.schema, model_id, dim)
                if reason is not None:
                    db.drop_table(TABLE_NAME)
            else:
                reason = "new index"
            if reason is not None:
                table = db.create_table(TABLE_NAME, schema=_schema(dim, model_id))
                # Created on the empty table so text search works from the first row on;
                # LanceDB searches rows not yet folded into an index by a flat scan.
                table.create_index("content", config=_fts_config(), name=_FTS_INDEX)
                table.create_index("id", config=BTree(), name=_ID_INDEX)
        return cls(db, table, embedder, dim, reason, ann_min_rows)

    @property
    def needs_rebuild(self) -> bool:
        """True when the index was created or recreated empty at open: reindex the folder."""
        return self.rebuild_reason is not None

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    def refresh(self) -> None:
        """See writes other processes made since this one last looked."""
        with _mapped("refresh"):
            self._table.checkout_latest()

    # ------------------------------------------------------------------ writing

    def upsert(self, rows: Sequence[IndexRow]) -> None:
        """Insert or replace rows by id; rows without a vector are embedded in one batch."""
        if not rows:
            return
        # The last row for an id wins (merge_insert would otherwise keep both).
        unique = list({row.id: row for row in rows}.values())
        vectors = self._vectors_for(unique)
        data = self._to_arrow(unique, vectors)
        with self._write_lock, _mapped("upsert"):
            (
                self._table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(data)
            )
            self._after_write()

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._write_lock, _mapped("delete"):
            for chunk in _chunks(list(dict.fromkeys(ids)), _ID_CHUNK):
                self._table.delete(_id_filter(chunk))
            self._after_write()

    def _after_write(self) -> None:
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
                        f"row {row.id!r} has a {vector.shape[0]}-d vector, the index is {self.dim}-d"
                    )
                out[i] = vector
        return out

    def _to_arrow(self, rows: Sequence[IndexRow], vectors: np.ndarray) -> pa.Table:
        columns: dict[str, list[Any]] = {name: [] for name in _SCALAR_COLUMNS}
        for row in rows:
            for name in _SCALAR_COLUMNS:
                value = getattr(row, name)
                if name in _TUPLE_COLUMNS:
                    value = list(value)
                elif name in ("created", "updated"):
                    value = _utc(value)
                columns[name].append(value)
        schema = self._schema
        arrays: list[pa.Array] = [
            pa.array(columns[name], type=schema.field(name).type) for name in _SCALAR_COLUMNS
        ]
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        arrays.append(pa.FixedSizeListArray.from_arrays(flat, self.dim))
        with _mapped("row conversion"):
            return pa.Table.from_arrays(arrays, schema=schema)

    # ------------------------------------------------------------------ reading

    def get(self, ids: Sequence[str]) -> dict[str, IndexRow]:
        found: dict[str, IndexRow] = {}
        with _mapped("get"):
            for chunk in _chunks(list(dict.fromkeys(ids)), _ID_CHUNK):
                table = self._table.search().where(_id_filter(chunk)).limit(None).to_arrow()
                for row in _rows(table):
                    found[row.id] = row
        return found

    def vector_search(
        self, vector: np.ndarray, k: int, *, where: str | None = None
    ) -> list[Hit]:
        """The ``k`` rows most similar to ``vector``; score = cosine similarity."""
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise IndexError_(f"a {query.shape[0]}-d query against a {self.dim}-d index")
        with _mapped("vector search"):
            builder = (
                self._table.search(query, vector_column_name="vector")
                .distance_type("cosine")
                .limit(k)
            )
            if self._has_ann:
                builder = builder.nprobes(_ANN_NPROBES).refine_factor(_ANN_REFINE_FACTOR)
            if where:
                builder = builder.where(where, prefilter=True)
            table = builder.to_arrow()
        distances = table.column("_distance").to_pylist()
        return [
            Hit(row, 1.0 - float(d)) for row, d in zip(_rows(table), distances, strict=True)
        ]

    def text_search(self, query: str, k: int, *, where: str | None = None) -> list[Hit]:
        """The ``k`` best BM25 matches of ``query`` in the content; any text is a valid query
        (it is matched word by word, never parsed as query syntax)."""
        if k <= 0 or not query.strip():
            return []
        with _mapped("text search"):
            builder = self._table.search(MatchQuery(query, "content"), query_type="fts").limit(k)
            if where:
                builder = builder.where(where, prefilter=True)
            table = builder.to_arrow()
        scores = table.column("_score").to_pylist()
        return [Hit(row, float(s)) for row, s in zip(_rows(table), scores, strict=True)]

    def nearest(self, text: str, k: int = 5, *, where: str | None = None) -> list[Hit]:
        """Embed ``text`` and return its ``k`` nearest rows (near-duplicate checks, recall)."""
        return self.vector_search(self._embedder.embed([text])[0], k, where=where)

    def manifest(self) -> dict[str, tuple[int, str]]:
        """id -> (file_mtime_ns, content_hash) for every row: what reconcile compares."""
        with _mapped("manifest"):
            table = (
                self._table.search()
                .select(["id", "file_mtime_ns", "content_hash"])
                .limit(None)
                .to_arrow()
            )
        return dict(
            zip(
                table.column("id").to_pylist(),
                zip(
                    table.column("file_mtime_ns").to_pylist(),
                    table.column("content_hash").to_pylist(),
                    strict=True,
                ),
                strict=True,
            )
        )

    def count(self) -> int:
        with _mapped("count"):
            return int(self._table.count_rows())

    # ------------------------------------------------------------------ upkeep

    def optimize(self) -> None:
        """Compact small writes, fold new rows into the text and id indices, and train the
        approximate vector index once the table is large. Call after bulk loads."""
        with self._write_lock:
            self._optimize_locked()

    def _optimize_locked(self) -> None:
        with _mapped("optimize"):
            self._table.optimize(cleanup_older_than=_KEEP_OLD_VERSIONS)
            self._writes_since_optimize = 0
            if not self._has_ann and self._table.count_rows() >= self._ann_min_rows:
                self._build_ann()

    def _build_ann(self) -> None:
        rows = self._table.count_rows()
        # ~sqrt(n) partitions is the usual IVF balance; 48 sub-vectors of 8 dims each keeps
        # PQ error low enough that the exact re-ranking (refine_factor) sees the true top k.
        partitions = max(8, int(math.sqrt(rows)))
        sub_vectors = _divisor_near(self.dim, self.dim // 8)
        self._table.create_index(
            "vector",
            config=IvfPq(
                distance_type="cosine", num_partitions=partitions, num_sub_vectors=sub_vectors
            ),
            name=_VECTOR_INDEX,
            replace=True,
        )
        self._has_ann = True

    def _index_exists(self, name: str) -> bool:
        with _mapped("list indices"):
            return any(index.name == name for index in self._table.list_indices())


# ---------------------------------------------------------------------- helpers


def _fts_config() -> FTS:
    # English stemming and stop words: recall queries are questions ("what does Dana
    # prefer?"), facts are statements ("Dana prefers ..."). Positions are not stored: we
    # never run phrase queries, and they double the index size.
    return FTS(with_position=False, stem=True, remove_stop_words=True, ascii_folding=True)


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


def _divisor_near(n: int, target: int) -> int:
    """The divisor of ``n`` closest to ``target`` (PQ needs dim % sub_vectors == 0)."""
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    return min(divisors, key=lambda d: (abs(d - target), d))


def _rows(table: pa.Table) -> list[IndexRow]:
    """Arrow result -> IndexRow values, column by column (much faster than row dicts)."""
    n = table.num_rows
    if n == 0:
        return []
    cols = {name: table.column(name).to_pylist() for name in _SCALAR_COLUMNS}
    vectors: np.ndarray | None = None
    if "vector" in table.column_names:
        array = table.column("vector").combine_chunks()
        vectors = array.values.to_numpy(zero_copy_only=False).reshape(n, -1)
    out = []
    for i in range(n):
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
                vector=None if vectors is None else vectors[i],
            )
        )
    return out

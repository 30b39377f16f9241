"""The row format of the search index: one memory as the index holds it, and its Arrow form.

Both the LanceDB table (:mod:`.table`) and the resident copy in memory (:mod:`.resident`)
hold rows in this layout; converting between :class:`IndexRow` values and Arrow columns
happens here, column by column, which is much faster than building a dict per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Bump when the row layout changes: an index written with another layout is rebuilt.
# 2: no access count or lifecycle state (they live in state/access.jsonl, read at recall).
# 3: valid_at, the day a fact's event happened (recall shows it beside the day it was said).
SCHEMA_VERSION = "3"


META_MODEL = b"engram.model_id"


META_DIM = b"engram.dim"


META_SCHEMA = b"engram.schema_version"


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
    importance: float
    confidence: float
    created: datetime
    updated: datetime
    session: str
    source_turn_ids: tuple[str, ...]
    entities: tuple[str, ...]
    tags: tuple[str, ...]
    speaker: str
    confirmations: int
    file_mtime_ns: int  # with content_hash: lets reconcile spot edited files cheaply
    content_hash: str
    valid_at: datetime | None = None  # when a fact's event happened, if known (facts only)
    vector: np.ndarray | None = None  # filled from the index's embedder when None


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result: cosine similarity for vector search, BM25 score for text search."""

    row: IndexRow
    score: float


def row_schema(dim: int, model_id: str) -> pa.Schema:
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
            pa.field("importance", pa.float64()),
            pa.field("confidence", pa.float64()),
            pa.field("created", stamp),
            pa.field("updated", stamp),
            pa.field("valid_at", stamp),
            pa.field("session", pa.string()),
            pa.field("source_turn_ids", strings),
            pa.field("entities", strings),
            pa.field("tags", strings),
            pa.field("speaker", pa.string()),
            pa.field("confirmations", pa.int64()),
            pa.field("file_mtime_ns", pa.int64()),
            pa.field("content_hash", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ],
        metadata={
            META_MODEL: model_id.encode(),
            META_DIM: str(dim).encode(),
            META_SCHEMA: SCHEMA_VERSION.encode(),
        },
    )


COLUMNS = tuple(row_schema(1, "").names)


SCALAR_COLUMNS = tuple(name for name in COLUMNS if name != "vector")


TUPLE_COLUMNS = frozenset({"source_turn_ids", "entities", "tags"})


TIME_COLUMNS = frozenset({"created", "updated", "valid_at"})


# Filters on these compare in memory (see MemoryIndex._mask).
TEXT_COLUMNS = frozenset({"id", "path", "kind", "category", "memory_kind", "status", "session"})


def utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def last_per_id(table: pa.Table) -> pa.Table:
    """The rows of ``table`` with the last row for each id only (writes held back in order)."""
    last = {row_id: i for i, row_id in enumerate(table.column("id").to_pylist())}
    if len(last) == table.num_rows:
        return table
    return table.take(pa.array(sorted(last.values()), pa.int64()))


def copy_vectors(table: pa.Table, dim: int, out: np.ndarray) -> None:
    """The table's vectors into the first rows of ``out``, chunk by chunk: joining the chunks
    first would hold a third copy of every vector for a moment (154 MB at 100k rows)."""
    start = 0
    for chunk in table.column("vector").chunks:
        # flatten(), not .values: a sliced chunk's values start before its first row.
        values = chunk.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
        out[start : start + len(values)] = values
        start += len(values)


def rows_from_arrow(table: pa.Table, vectors: np.ndarray) -> list[IndexRow]:
    """Arrow rows -> IndexRow values, column by column (much faster than row dicts).

    Missing values take their defaults in Arrow, and each row is built from its fields in
    order: recall turns a few hundred hits into rows per question, and at 100k memories
    that was its largest single cost."""
    columns = [_field_values(table.column(name), name) for name in _SCALAR_FIELDS]
    columns.append(list(vectors[: table.num_rows]))
    return [IndexRow(*values) for values in zip(*columns, strict=True)]


# IndexRow's fields in order; its last field, the vector, is not a column.
_SCALAR_FIELDS = tuple(f.name for f in fields(IndexRow))[:-1]
_DEFAULTS = {pa.string(): "", pa.float64(): 0.0, pa.int64(): 0}


def _field_values(column: pa.ChunkedArray, name: str) -> list[Any]:
    if name in TUPLE_COLUMNS:
        return [tuple(v) if v else () for v in column.to_pylist()]
    default = _DEFAULTS.get(column.type)
    if default is not None and column.null_count:
        column = pc.fill_null(column, default)
    return python_values(column)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def python_values(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """A column as Python values. A UTC timestamp column is read from its integer
    microseconds: pyarrow converts each zoned value through the time zone database, five
    times slower, and at recall that was half the cost of turning hits into rows."""
    kind = column.type
    if pa.types.is_timestamp(kind) and kind.unit == "us" and kind.tz in ("UTC", "+00:00"):
        micros = column.cast(pa.int64()).to_pylist()
        return [None if m is None else _EPOCH + timedelta(microseconds=m) for m in micros]
    return column.to_pylist()


def rows_to_arrow(rows: Sequence[IndexRow], vectors: np.ndarray, schema: pa.Schema) -> pa.Table:
    """IndexRow values and their (already normalized) vectors -> one Arrow table."""
    columns: dict[str, list[Any]] = {name: [] for name in SCALAR_COLUMNS}
    for row in rows:
        for name in SCALAR_COLUMNS:
            value = getattr(row, name)
            if name in TUPLE_COLUMNS:
                value = list(value)
            elif name in TIME_COLUMNS and value is not None:
                value = utc(value)
            columns[name].append(value)
    arrays: list[pa.Array] = [
        pa.array(columns[name], type=schema.field(name).type) for name in SCALAR_COLUMNS
    ]
    dim = schema.field("vector").type.list_size
    arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim))
    return pa.Table.from_arrays(arrays, schema=schema)

"""LanceDB behind one seam: connecting with bounded caches, opening the memories table (or
setting aside one that cannot be opened), its id index, and the check that a stored table
still fits the embedder and the row layout. Text search is not LanceDB's (:mod:`.textindex`).

Only this module and :mod:`.table` know LanceDB exists; only this one imports it.
"""

from __future__ import annotations

import logging
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

# LanceDB logs deprecation notices and routine events as warnings on stderr, which would
# end up in CLI output; real failures reach us as exceptions. Must be set before the import.
os.environ.setdefault("LANCEDB_LOG", "error")

import lancedb  # noqa: E402
from lancedb.index import BTree  # noqa: E402

from ..core.errors import IndexError_  # noqa: E402
from .rows import COLUMNS, META_DIM, META_MODEL, META_SCHEMA, SCHEMA_VERSION  # noqa: E402
from .storage import IndexLocation  # noqa: E402

log = logging.getLogger(__name__)


TABLE_NAME = "memories"


# Where a table that cannot be opened is moved before a new one is built: kept (the newest
# one only) so what went wrong can still be looked at, and outside LanceDB's table listing.
UNREADABLE_DIR = "unreadable"


# What LanceDB raises when a table's files cannot be read as a table (a kill -9 while it was
# being created, a damaged manifest).
UNOPENABLE_TABLE = (ValueError, RuntimeError, OSError)


# LanceDB caches index and table metadata per version and, by default, lets the caches grow
# to gigabytes; a writer makes new versions all the time, so the caches fill with versions it
# will never read again and its memory grows with its input. The index cache holds the id
# index's pages (merge_insert and delete look rows up by id): a few MB at 100k rows.
_INDEX_CACHE_BYTES = 32 << 20


_METADATA_CACHE_BYTES = 16 << 20


# LanceDB's own full-text index, which earlier versions built on ``content``.
_LEGACY_TEXT_INDEX = "content_idx"


_ID_INDEX = "id_idx"


def connect(where: Path | IndexLocation) -> Any:
    """A LanceDB connection whose caches are bounded (see _INDEX_CACHE_BYTES), to a folder or
    to an index in an object store (with its storage options)."""
    location = where if isinstance(where, IndexLocation) else IndexLocation.local(where)
    session = lancedb.Session(
        index_cache_size_bytes=_INDEX_CACHE_BYTES,
        metadata_cache_size_bytes=_METADATA_CACHE_BYTES,
    )
    return lancedb.connect(
        location.uri, storage_options=dict(location.options) or None, session=session
    )


def stored_table(
    db: Any, location: IndexLocation, model_id: str, dim: int, *, may_rebuild: bool
) -> tuple[Any | None, str | None]:
    """The stored table and why it must be rebuilt: (table, None) when it can be used as it
    is, (None, reason) when a new, empty one is needed. Only a writer (``may_rebuild``) may
    drop or move a table; a reader gets :class:`IndexError_` instead."""
    if TABLE_NAME not in db.list_tables().tables:
        if not may_rebuild:
            raise IndexError_(
                f"there is no search index at {location} yet: the process writing to the "
                "memory folder creates it; try again in a moment"
            )
        return None, "new index"
    try:
        table = db.open_table(TABLE_NAME)
    except UNOPENABLE_TABLE as exc:
        if not may_rebuild:
            raise IndexError_(
                f"the search index at {location} cannot be opened ({exc}): if the daemon is "
                "starting, try again in a moment; otherwise the daemon rebuilds it when it "
                "starts, or stop it and run `engram-md doctor --repair`"
            ) from exc
        local = location.local_dir
        if local is None:
            # An object store has no rename to set it aside with: the index is derived, so
            # it is dropped and rebuilt from the memory folder.
            db.drop_table(TABLE_NAME)
            log.warning(
                "the search index at %s could not be opened (%s); rebuilding it", location, exc
            )
        else:
            kept = set_aside(local)
            log.warning(
                "the search index could not be opened (%s); moved it to %s and building a new "
                "one from the memory folder",
                exc,
                kept,
            )
        return None, f"the stored index could not be opened ({exc})"
    reason = layout_mismatch(table.schema, model_id, dim)
    if reason is None:
        return table, None
    if not may_rebuild:
        raise IndexError_(
            f"the search index at {location} was built with another embedding model "
            f"or layout ({reason}); only the writer may rebuild it: use the "
            "daemon's configuration, or stop the daemon and run `engram-md reindex`"
        )
    db.drop_table(TABLE_NAME)
    return None, reason


def set_aside(path: Path) -> Path:
    """Move the unopenable table under ``path/unreadable/``, replacing one moved earlier."""
    aside = path / UNREADABLE_DIR
    shutil.rmtree(aside, ignore_errors=True)
    aside.mkdir()
    target = aside / f"{TABLE_NAME}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.lance"
    os.replace(path / f"{TABLE_NAME}.lance", target)
    return target


def search_indices_lacking(table: Any) -> set[str]:
    """Which of the table's indices are missing: {"id"} or nothing."""
    names = {index.name for index in table.list_indices()}
    return set() if _ID_INDEX in names else {"id"}


def ensure_search_indices(table: Any) -> None:
    """Create the id index if the table lacks it (merge_insert and delete look rows up by
    id), and drop the full-text index earlier versions kept: text search is answered from
    memory now, so it would only cost time at every optimize, and a ``forget`` would leave
    the deleted rows' words in it."""
    names = {index.name for index in table.list_indices()}
    if _LEGACY_TEXT_INDEX in names:
        table.drop_index(_LEGACY_TEXT_INDEX)
    if _ID_INDEX not in names:
        table.create_index("id", config=BTree(), name=_ID_INDEX)


def layout_mismatch(schema: pa.Schema, model_id: str, dim: int) -> str | None:
    meta = schema.metadata or {}
    stored_model = meta.get(META_MODEL, b"").decode()
    stored_dim = meta.get(META_DIM, b"").decode()
    stored_schema = meta.get(META_SCHEMA, b"").decode()
    if stored_schema != SCHEMA_VERSION or tuple(schema.names) != COLUMNS:
        return f"row layout changed ({stored_schema or 'unknown'} -> {SCHEMA_VERSION})"
    if stored_model != model_id:
        return f"embedding model changed ({stored_model or 'unknown'} -> {model_id})"
    if stored_dim != str(dim):
        return f"embedding width changed ({stored_dim or 'unknown'} -> {dim})"
    return None


def create_search_indices(table: Any) -> None:
    """Build (or rebuild over every row) the id index."""
    table.create_index("id", config=BTree(), name=_ID_INDEX)

"""Memories as the integrations see them: one memory by id, the newest ones, their JSON.

The daemon's ``GET /memory/<id>`` and ``GET /recent`` and the MCP server's tools answer with
this shape (``recall.server.MemoryOps``)::

    {"id", "path", "category", "kind", "status", "created", "validAt", "eventDate", "text",
     "entities", "supersedes", "supersededBy"}

``path`` is relative to the memory folder, ``created`` and ``validAt`` are UTC timestamps
(``validAt``, when the event it tells of happened, and its day ``eventDate`` are null when
unknown). Reading needs no lock: every fact file is replaced atomically, so a reader sees the
old file or the new one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.errors import MemoryFileError
from ..core.models import Fact, Status
from ..index.factrows import FACT_KIND
from ..index.rows import IndexRow
from ..index.table import MemoryIndex
from ..maintain.targets import find_fact_files
from ..store.fact_store import MemoryStore, folder_order
from ..store.factfile import read_fact

_TIME = "%Y-%m-%dT%H:%M:%SZ"
# A fact file's name: <category>-<HHMMSS>-<hash8>.md, in a folder named for its day.
_NAME_TIME = re.compile(r"-(\d{6})-[0-9a-f]+$")


def memory_json(store: MemoryStore, path: Path, fact: Fact) -> dict[str, Any]:
    """The JSON of the memory ``fact``, read from ``path``."""
    return {
        "id": fact.id,
        "path": store.layout.relative(path),
        "category": fact.category.value,
        "kind": fact.memory_kind.value,
        "status": fact.status.value,
        "created": fact.created.strftime(_TIME),
        "validAt": None if fact.valid_at is None else fact.valid_at.strftime(_TIME),
        "eventDate": None if fact.valid_at is None else fact.valid_at.strftime("%Y-%m-%d"),
        "text": fact.content,
        "entities": list(fact.entities),
        "supersedes": list(fact.supersedes),
        "supersededBy": fact.superseded_by,
    }


def row_json(row: IndexRow) -> dict[str, Any]:
    """The same JSON for what recall also returns that is no fact file of its own: a
    sentence of what was said (``said-…``), a topic window (``box-…``), from its index row."""
    valid = row.valid_at
    return {
        "id": row.id,
        "path": row.path,
        "category": row.category,
        "kind": row.memory_kind,
        "status": row.status,
        "created": row.created.strftime(_TIME),
        "validAt": None if valid is None else valid.strftime(_TIME),
        "eventDate": None if valid is None else valid.strftime("%Y-%m-%d"),
        "text": row.content,
        "entities": list(row.entities),
        "supersedes": [],
        "supersededBy": None,
    }


def memory(
    store: MemoryStore, memory_id: str, index: MemoryIndex | None = None
) -> dict[str, Any] | None:
    """The memory with this id, or None: a fact from its file (the live one before an
    archived one); with ``index``, any other id recall answers with, from its row."""
    memory_id = memory_id.strip()
    found = find_fact_files(store, [memory_id]).get(memory_id)
    if found:
        path, fact = min(found, key=lambda pair: folder_order(store.layout.relative(pair[0])))
        return memory_json(store, path, fact)
    row = index.get([memory_id]).get(memory_id) if index is not None else None
    return None if row is None or row.kind == FACT_KIND else row_json(row)


def _newest_first(path: Path) -> tuple[str, str, str]:
    """Sort key of a live fact file by when it was said, from its folder and name alone."""
    match = _NAME_TIME.search(path.stem)
    return (path.parent.name, match.group(1) if match else "", path.name)


def recent(store: MemoryStore, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` newest active memories, newest first.

    Files are read newest first by their folder and name, so a large folder costs one
    directory listing and about ``limit`` reads, not a read of every file.
    """
    live = [p for p in store.fact_paths() if not store.layout.relative(p).startswith("archive/")]
    found: list[tuple[Path, Fact]] = []
    for path in sorted(live, key=_newest_first, reverse=True):
        try:
            fact = read_fact(path)
        except MemoryFileError:
            continue  # a broken file is doctor's to report
        if fact.status is Status.ACTIVE:
            found.append((path, fact))
            if len(found) == limit:
                break
    found.sort(key=lambda pair: pair[1].created, reverse=True)
    return [memory_json(store, path, fact) for path, fact in found]

"""Memory boxes in the search index: one row of kind ``box`` per sealed box file.

Boxes are few (one per stretch of a session) and written whole when sealed, so they are kept
in step by a simple whole-folder comparison — file mtime against the row — at every full
reconcile, plus a row the daemon writes with the facts of the batch that sealed the box
(``Indexer.upsert_box``). These functions never touch fact rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import MemoryFileError
from ..core.paths import MemoryLayout
from ..organize.boxes import Box
from ..organize.boxfile import box_files, read_box
from ..text.hashing import content_hash
from .table import IndexRow, MemoryIndex

log = logging.getLogger(__name__)

BOX_KIND = "box"


@dataclass(frozen=True)
class BoxSync:
    indexed: int = 0  # rows written (new or changed box files)
    removed: int = 0  # rows whose box file is gone
    unreadable: int = 0  # box files that could not be read (reported, left alone)


def box_text(box: Box) -> str:
    """What a box row holds and recall shows: its summary, then its topics."""
    topics = ", ".join(box.topics)
    summary = " ".join(box.summary.split())
    return f"{summary} (topics: {topics})" if topics else summary


def box_row(layout: MemoryLayout, path: Path, box: Box, mtime_ns: int) -> IndexRow:
    text = box_text(box)
    return IndexRow(
        id=box.id,
        path=layout.relative(path),
        kind=BOX_KIND,
        content=text,
        category=BOX_KIND,
        memory_kind=BOX_KIND,
        status="active",
        importance=0.5,
        confidence=1.0,
        created=box.created_at,
        updated=box.sealed_at,
        session=box.session,
        # Provenance runs through the member facts (memoryIds); a box claims no turns itself.
        source_turn_ids=(),
        entities=tuple(box.topics),
        tags=(),
        speaker="",
        confirmations=0,
        file_mtime_ns=mtime_ns,
        content_hash=content_hash(text),
    )


def sync_boxes(index: MemoryIndex, layout: MemoryLayout) -> BoxSync:
    """Make the box rows match the box files: new and edited files indexed, gone ones removed."""
    files: dict[str, tuple[Path, int]] = {}
    for path in box_files(layout):
        try:
            files[layout.relative(path)] = (path, path.stat().st_mtime_ns)
        except OSError:
            continue
    rows = {
        row.path: row for row in index.get(list(index.manifest())).values() if row.kind == BOX_KIND
    }
    fresh: list[IndexRow] = []
    unreadable = 0
    for rel, (path, mtime) in files.items():
        row = rows.get(rel)
        if row is not None and row.file_mtime_ns == mtime:
            continue
        try:
            fresh.append(box_row(layout, path, read_box(path, layout), mtime))
        except MemoryFileError as exc:
            log.warning("%s", exc)
            unreadable += 1
    kept_ids = {row.id for row in fresh} | {
        row.id for rel, row in rows.items() if rel in files and row.file_mtime_ns == files[rel][1]
    }
    gone = [row.id for row in rows.values() if row.id not in kept_ids]
    if gone:
        index.delete(gone)
    if fresh:
        index.upsert(fresh)
    return BoxSync(len(fresh), len(gone), unreadable)

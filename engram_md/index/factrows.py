"""Fact files as index rows: which paths hold facts, their folder order, the row for one.

Rows store paths relative to the memory folder with forward slashes; every function here
speaks of paths in that form (``rel``) unless it takes a :class:`~pathlib.Path`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..core.atomic import is_temp_file
from ..core.models import Fact
from ..core.paths import MemoryLayout
from .rows import IndexRow

FACT_KIND = "fact"
# Where fact files live, relative to the memory folder (as MemoryStore.fact_paths reads them).
FACT_ROOTS = ("facts/", "archive/facts/")


def fact_row(layout: MemoryLayout, path: Path, fact: Fact, mtime_ns: int | None = None) -> IndexRow:
    """The index row for a fact file (the file's mtime is read when not given)."""
    return row_at(layout.relative(path), fact, stat_mtime(path) if mtime_ns is None else mtime_ns)


def row_at(rel: str, fact: Fact, mtime_ns: int) -> IndexRow:
    """The index row for ``fact`` read from the file at ``rel`` with that mtime."""
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
        valid_at=fact.valid_at,
    )


def row_path(layout: MemoryLayout, path: Path) -> str | None:
    """``path`` relative to the memory folder, the way rows store it (None if outside)."""
    root = layout.memory_dir
    for base in (root, root.resolve()):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    try:
        return layout.relative(path)
    except (ValueError, OSError):
        return None


def is_fact_rel(rel: str) -> bool:
    """Whether a path relative to the memory folder names a fact file (live or archived)."""
    return rel.startswith(FACT_ROOTS) and rel.endswith(".md") and not is_temp_file(Path(rel))


def folder_order(rel: str) -> tuple[bool, str]:
    """Folder order, which decides between two files with the same id: live before archived."""
    return (rel.startswith("archive/"), rel)


def file_mtime(path: Path) -> int | None:
    """The mtime of a regular file, None when it is gone (or is not a file)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns if stat.S_ISREG(info.st_mode) else None


def stat_mtime(path: Path) -> int:
    """The mtime a row records for a file just written (0 if it cannot be read)."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0

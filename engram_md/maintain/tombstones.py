"""``state/forgotten.jsonl``: one tombstone per forgotten fact, append-only.

A tombstone says what was forgotten, when, why and by whom: id, path, category, created,
session, box, ``lineageOf`` — never the statement, nor a hash of it (an unsalted hash lets
anyone who can read ``state/`` confirm a guessed statement, and nothing needs one). It is
written once everything but the fact files is gone, just before they are deleted: a forget
that stops earlier leaves no record beside a memory that is still whole (and recalled again
once the index has followed the file), and one interrupted while deleting the files is on
record: its re-run reads the tombstone as the :class:`~engram_md.maintain.targets.Target`
whose file is gone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..core.paths import MemoryLayout
from ..store.factfile import format_time
from .targets import Target

TOMBSTONES = "forgotten.jsonl"


def read_tombstones(layout: MemoryLayout) -> list[Target]:
    """Every tombstone as the target it stands in for, oldest first (damaged lines skipped)."""
    path = layout.state_dir / TOMBSTONES
    stones: list[Target] = []
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return stones
    for line in raw.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            root = data.get("lineageOf")
            path_text = str(data.get("path", ""))
            stones.append(Target(data["id"], path_text, None, str(root) if root else None))
    return stones


def write_tombstones(
    layout: MemoryLayout, targets: Sequence[Target], *, reason: str, by: str, at: datetime
) -> None:
    """Append one tombstone per target, in one write, synced before the files go."""
    lines = []
    for t in targets:
        record: dict[str, Any] = {
            "at": format_time(at),
            "id": t.id,
            "path": t.path,
            "reason": reason,
            "by": by,
        }
        if t.lineage_of is not None:
            record["lineageOf"] = t.lineage_of
        if t.fact is not None:
            record["category"] = t.fact.category.value
            record["created"] = format_time(t.fact.created)
            record["session"] = t.fact.session
            if t.fact.box_id:
                record["boxId"] = t.fact.box_id
        else:
            record["resumed"] = True  # finishing an interrupted forget
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    path = layout.state_dir / TOMBSTONES
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, "".join(lines).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)

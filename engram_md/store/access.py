"""Recall access counts, kept in state/ (recall never rewrites a markdown file).

``state/access.jsonl`` is append-only: one ``{"at", "ids"}`` line per recall. Appends of a
line are atomic on a local filesystem, so a daemon and an in-process `recall` can both record
without a lock. Consolidation folds the counts into frontmatter and drops what it folded
(:meth:`AccessLog.drop_prefix`); forget drops the ids it forgets (:meth:`AccessLog.drop_ids`).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from ..core.atomic import atomic_write_bytes

log = logging.getLogger(__name__)

# Seed 000: each recall lifts a memory's importance a little ("use it or lose it").
ACTIVATION_BOOST = 0.03


class AccessLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._counts: Counter[str] | None = None
        self._size = -1

    def record(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if not ids:
            return
        line = json.dumps({"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "ids": ids})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        except OSError as exc:
            log.warning("cannot record recall access in %s (%s)", self.path, exc)
            return
        if self._counts is not None:
            self._counts.update(ids)
            self._size = self._file_size()

    def counts(self) -> Counter[str]:
        """id -> number of recalls, re-read only when the log grew (another process wrote)."""
        size = self._file_size()
        if self._counts is None or size != self._size:
            self._counts, _ = self.read_counts()
            self._size = size
        return self._counts

    def read_counts(self) -> tuple[Counter[str], int]:
        """Recall counts from the log and the byte length they were read from.

        Only whole lines count (a line without its newline is an append cut short, or one
        still being written); the length lets consolidation drop exactly what it folded while
        recalls keep appending.
        """
        counts: Counter[str] = Counter()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return counts, 0
        end = data.rfind(b"\n") + 1
        for raw in data[:end].splitlines():
            try:
                counts.update(str(i) for i in json.loads(raw)["ids"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn line after a crash
        return counts, end

    def drop_prefix(self, length: int) -> None:
        """Remove the first ``length`` bytes (counts folded into frontmatter) and keep what
        recalls appended after them."""
        if length <= 0:
            return
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        self._replace(data[length:])

    def drop_ids(self, ids: set[str]) -> int:
        """Remove ``ids`` from every record; returns how many mentions were removed. A record
        left with no id goes; a line that is not a record (a torn line) is kept as it is.

        Recall appends without a lock; an append that lands between this read and the
        replace is lost. That costs at most one recall's access counts, never a memory.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return 0
        hits = 0
        lines: list[bytes] = []
        for line in raw.splitlines():
            try:
                data = json.loads(line)
                named = [str(i) for i in data["ids"]]
            except (ValueError, KeyError, TypeError):
                lines.append(line)  # not ours to judge (a torn line: doctor's business)
                continue
            kept = [i for i in named if i not in ids]
            if len(kept) == len(named):
                lines.append(line)
                continue
            hits += len(named) - len(kept)
            if kept:
                data["ids"] = kept
                lines.append(json.dumps(data).encode())
        if hits:
            self._replace(b"\n".join(lines) + (b"\n" if lines else b""))
        return hits

    def _replace(self, data: bytes) -> None:
        atomic_write_bytes(self.path, data)
        self._counts = None  # read again on the next count

    def _file_size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

"""Recall access counts, kept in state/ (recall never rewrites a markdown file).

``state/access.jsonl`` is append-only: one ``{"at", "ids"}`` line per recall. Appends of a
line are atomic on a local filesystem, so a daemon and an in-process `recall` can both record
without a lock. Consolidation folds the counts into frontmatter and truncates the log.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

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
            counts: Counter[str] = Counter()
            try:
                with open(self.path, "rb") as handle:
                    for raw in handle:
                        try:
                            counts.update(json.loads(raw)["ids"])
                        except (ValueError, KeyError, TypeError):
                            continue  # a torn line after a crash
            except FileNotFoundError:
                pass
            self._counts = counts
            self._size = size
        return self._counts

    def _file_size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

"""Exact dedup: xxhash of the normalized statement -> the file that holds it.

``state/fact-hashes.txt`` has one ``<hash> <relative path>`` line per fact. It is derived
data: when missing it is rebuilt from the memory folder, and a hash whose file is gone is
treated as absent (the folder is the truth).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from ..core.atomic import atomic_write_text


class HashIndex:
    def __init__(self, path: Path, entries: dict[str, str]) -> None:
        self.path = path
        self._entries = entries
        # The pipeline thread adds while the memory watcher's thread may rewrite the file.
        self._lock = threading.RLock()

    @classmethod
    def load(cls, path: Path) -> HashIndex | None:
        """The index on disk, or None when it has to be rebuilt."""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None
        entries: dict[str, str] = {}
        for line in text.splitlines():
            digest, _, rel = line.partition(" ")
            if len(digest) == 16 and rel:
                entries[digest] = rel
        return cls(path, entries)

    @classmethod
    def rebuild(cls, path: Path, pairs: Iterable[tuple[str, str]]) -> HashIndex:
        entries = dict(pairs)
        index = cls(path, entries)
        index.save()
        return index

    def save(self) -> None:
        with self._lock:
            body = "".join(f"{digest} {rel}\n" for digest, rel in sorted(self._entries.items()))
            atomic_write_text(self.path, body)

    def lookup(self, digest: str) -> str | None:
        return self._entries.get(digest)

    def add(self, digest: str, rel: str) -> None:
        with self._lock:
            if self._entries.get(digest) == rel:
                return
            self._entries[digest] = rel
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{digest} {rel}\n".encode())
            finally:
                os.close(fd)

    def remove(self, digest: str) -> None:
        with self._lock:
            if self._entries.pop(digest, None) is not None:
                self.save()

    def items(self) -> list[tuple[str, str]]:
        with self._lock:
            return sorted(self._entries.items())

    def __len__(self) -> int:
        return len(self._entries)

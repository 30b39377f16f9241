"""The memory folder as a store of fact files.

Knows the layout of ``memory/facts`` (and ``memory/archive/facts``), reads and writes fact
files, and keeps the exact-dedup hash index in step with what is on disk.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from ..core.errors import MemoryFileError
from ..core.folder import markdown_files
from ..core.models import Fact
from ..core.paths import MemoryLayout
from .dedup import HashIndex
from .factfile import read_fact, write_fact

log = logging.getLogger(__name__)


def folder_order(rel: str) -> tuple[bool, str]:
    """The order in which two files of the folder compete for one id or one statement: live
    before archived, then by path."""
    return (rel.startswith("archive/"), rel)


class MemoryStore:
    def __init__(self, layout: MemoryLayout, hashes: HashIndex, *, fsync: bool = True) -> None:
        self.layout = layout
        self.hashes = hashes
        self.fsync = fsync

    @classmethod
    def open(
        cls, layout: MemoryLayout, *, fsync: bool = True, rebuild_missing: bool = True
    ) -> MemoryStore:
        """Open the folder; a missing hash index is rebuilt from the files unless the caller
        is about to read every file anyway (``rebuild_missing=False``: `reindex`)."""
        layout.ensure()
        hashes = HashIndex.load(layout.hashes_path)
        store = cls(layout, hashes or HashIndex(layout.hashes_path, {}), fsync=fsync)
        if hashes is None and rebuild_missing:
            store.rebuild_hashes()
        return store

    # ------------------------------------------------------------ reading
    def fact_paths(self) -> Iterator[Path]:
        """Every fact file, live and archived, in a stable order. Links, devices, pipes,
        huge files and control-character names are reported once and left out
        (:func:`markdown_files`), so one planted file never stops a command."""
        for root in (self.layout.facts_dir, self.layout.archive_dir / "facts"):
            yield from markdown_files(root, base=self.layout.memory_dir)

    def scan(self) -> Iterator[tuple[Path, Fact | MemoryFileError]]:
        for path in self.fact_paths():
            try:
                yield path, read_fact(path)
            except MemoryFileError as exc:
                yield path, exc

    def rebuild_hashes(self) -> int:
        """The hash index from the readable files. Two files with one statement: the first in
        :func:`folder_order` holds it (live before archived, as the indexer decides)."""
        pairs = []
        for path, fact in self.scan():
            if isinstance(fact, MemoryFileError):
                log.warning("%s", fact)
                continue
            pairs.append((fact.content_hash, self.layout.relative(path)))
        pairs.sort(key=lambda pair: folder_order(pair[1]), reverse=True)  # the first one wins
        self.hashes = HashIndex.rebuild(self.layout.hashes_path, pairs)
        return len(pairs)

    def find(self, digest: str) -> tuple[Path, Fact] | None:
        """The fact whose normalized statement hashes to ``digest``, if its file still exists."""
        rel = self.hashes.lookup(digest)
        if rel is None:
            return None
        path = self.layout.memory_dir / rel
        try:
            fact = read_fact(path)
        except MemoryFileError:
            return None  # deleted or broken by hand: the folder wins
        if fact.content_hash != digest:
            return None  # edited by hand: no longer the same statement
        return path, fact

    # ------------------------------------------------------------ writing
    def path_for(self, fact: Fact) -> Path:
        return self.layout.fact_path(fact.category.value, fact.created, fact.content_hash[:8])

    def write_new(self, fact: Fact) -> Path:
        path = self.path_for(fact)
        write_fact(path, fact, fsync=self.fsync)
        self.hashes.add(fact.content_hash, self.layout.relative(path))
        return path

    def rewrite(self, path: Path, fact: Fact) -> bool:
        """Write an updated fact in place; False when nothing changed on disk."""
        return write_fact(self.layout.inside(path), fact, fsync=self.fsync)

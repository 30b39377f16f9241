"""Where everything lives. The one place that turns names into paths.

Every path built from input (categories, ids, session names) goes through :func:`safe_slug`
or :meth:`MemoryLayout.inside`, so no name from a transcript can place a file outside the
memory folder.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import regex

from .errors import UnsafePathError

# Combining marks stay with their letter: dropping them would split "Rene\u0301e" (the
# decomposed spelling of "Renée") into "rene-e".
_SLUG_DROP = regex.compile(r"[^\p{L}\p{N}\p{M}]+")
# A mark with no letter or digit before it (after a space, or first) has nothing to belong
# to; NFKC turns spacing accents such as "´" into exactly that (a space and a mark).
_ORPHAN_MARKS = regex.compile(r"(?<![\p{L}\p{N}\p{M}])\p{M}+")
# Most file systems allow 255 bytes per name; a slug is only part of one ("person-<slug>.md",
# "<category>-<time>-<hash>.md"), and a letter can take 4 bytes in UTF-8.
MAX_SLUG_BYTES = 120


def safe_slug(
    name: str, *, fallback: str = "x", max_len: int = 64, max_bytes: int = MAX_SLUG_BYTES
) -> str:
    """A file-name-safe slug: letters and digits joined by single hyphens, lowercase.

    At most ``max_len`` characters and ``max_bytes`` bytes of UTF-8. NFKC folding first makes
    compatibility look-alikes (full-width "ＤＡＮＡ", the ligature "ﬁ") and the composed and
    decomposed spellings of one name give the same slug.
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    folded = _ORPHAN_MARKS.sub("", folded)
    slug = _SLUG_DROP.sub("-", folded).strip("-")[:max_len]
    while len(slug.encode("utf-8")) > max_bytes:
        slug = slug[:-1]
    return slug.strip("-") or fallback


# Resolved folders by what they are (device and inode, reached through any link): a run over
# 100k files asked for the memory folder's resolved path a few times a file, an lstat of every
# folder above it each time. A folder re-pointed elsewhere is another inode, so resolved anew.
_RESOLVED: dict[tuple[str, int, int], Path] = {}


def resolved_folder(folder: Path) -> Path:
    """``folder.resolve()``, remembered while ``folder`` leads to the same directory."""
    try:
        st = os.stat(folder)
    except OSError:
        return folder.resolve()
    key = (str(folder), st.st_dev, st.st_ino)
    found = _RESOLVED.get(key)
    if found is None:
        if len(_RESOLVED) > 64:
            _RESOLVED.clear()
        found = _RESOLVED[key] = folder.resolve()
    return found


@dataclass(frozen=True)
class MemoryLayout:
    memory_dir: Path
    state_dir: Path

    # ---- memory/ (the truth, reviewed with git)
    @property
    def facts_dir(self) -> Path:
        return self.memory_dir / "facts"

    @property
    def boxes_dir(self) -> Path:
        return self.memory_dir / "boxes"

    @property
    def entities_dir(self) -> Path:
        return self.memory_dir / "entities"

    @property
    def archive_dir(self) -> Path:
        return self.memory_dir / "archive"

    @property
    def profile_path(self) -> Path:
        return self.memory_dir / "profile.md"

    @property
    def identity_path(self) -> Path:
        return self.memory_dir / "IDENTITY.md"

    def fact_path(self, category: str, created: datetime, hash8: str) -> Path:
        # Four-digit years always: strftime writes year 1 as "1".
        day = f"{created.year:04d}-{created:%m-%d}"
        slug = safe_slug(category, max_len=32)
        name = f"{slug}-{created:%H%M%S}-{safe_slug(hash8, max_len=16)}.md"
        return self.inside(self.facts_dir / day / name)

    def inside(self, path: Path) -> Path:
        """Refuse any path that would resolve outside the memory folder."""
        root = resolved_folder(self.memory_dir)
        resolved = path.resolve()
        if resolved != root and root not in resolved.parents:
            raise UnsafePathError(f"refusing to write outside the memory folder: {path}")
        return path

    def relative(self, path: Path) -> str:
        """Path relative to the memory folder, with forward slashes (ids in the index)."""
        return path.resolve().relative_to(resolved_folder(self.memory_dir)).as_posix()

    # ---- state/ (machine-local, rebuildable except journal and telemetry)
    @property
    def journal_path(self) -> Path:
        return self.state_dir / "buffer-journal.jsonl"

    @property
    def hashes_path(self) -> Path:
        return self.state_dir / "fact-hashes.txt"

    @property
    def actions_path(self) -> Path:
        return self.state_dir / "memory-actions.jsonl"

    @property
    def cursors_path(self) -> Path:
        return self.state_dir / "cursors.json"

    @property
    def lock_path(self) -> Path:
        return self.state_dir / "lock"

    @property
    def usage_path(self) -> Path:
        return self.state_dir / "llm-usage.json"

    @property
    def run_state_path(self) -> Path:
        return self.state_dir / "run-state.json"

    @property
    def speakers_path(self) -> Path:
        return self.state_dir / "speakers.json"

    @property
    def index_dir(self) -> Path:
        return self.state_dir / "index"

    @property
    def embedding_cache_dir(self) -> Path:
        return self.state_dir / "embeddings"

    @property
    def access_path(self) -> Path:
        return self.state_dir / "access.jsonl"

    @property
    def daemon_endpoint_path(self) -> Path:
        return self.state_dir / "daemon.json"

    @property
    def open_box_path(self) -> Path:
        return self.state_dir / "open-box.json"

    @property
    def traces_path(self) -> Path:
        return self.state_dir / "traces.json"

    @property
    def graphs_dir(self) -> Path:
        return self.state_dir / "graphs"

    @property
    def topics_path(self) -> Path:
        return self.state_dir / "topics.json"

    @property
    def compression_guidelines_path(self) -> Path:
        return self.state_dir / "compression-guidelines.md"

    @property
    def consolidation_state_path(self) -> Path:
        """The epoch counter and when consolidation last ran."""
        return self.state_dir / "consolidation.json"

    @property
    def reports_dir(self) -> Path:
        """One markdown report per consolidation run."""
        return self.state_dir / "reports"

    def ensure(self) -> None:
        self.memory_dir.mkdir(parents=True, exist_ok=True)
        self.state_dir.mkdir(parents=True, exist_ok=True)


class RelativePaths:
    """:meth:`MemoryLayout.relative` for the many files of one run. Each folder is resolved
    once (a day's files share theirs) and each file costs one lstat, to see whether it is a
    link itself, instead of an lstat of every folder above it. For one run only: a folder
    re-linked meanwhile would be missed."""

    def __init__(self, layout: MemoryLayout) -> None:
        self._root = resolved_folder(layout.memory_dir)
        self._folders: dict[Path, Path] = {}

    def __call__(self, path: Path) -> str:
        folder = self._folders.get(path.parent)
        if folder is None:
            folder = self._folders[path.parent] = path.parent.resolve()
        resolved = path.resolve() if path.is_symlink() else folder / path.name
        return resolved.relative_to(self._root).as_posix()
